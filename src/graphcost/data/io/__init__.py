"""graphcost.data.io: Reading and checking TpuGraphs-schema files: the schema, validation, chunked npz streaming and
writing, finding collections on disk, downloading, split-overlap checks.
"""
