"""graphcost.data.io: Reading and checking TpuGraphs-schema files: the schema, validation, chunked npz streaming and
writing, finding collections on disk, downloading, split-overlap checks, and `locate` (which npz files
make the train / valid / test splits of a training run, from a --data-dir or the shipped data).
"""
