"""graphcost.data.pyg: PyTorch Geometric datasets over TpuGraphs-schema files (until 2026-12-05
`graphcost.data.datasets`, a name that `graphcost.datasets`, the shipped data, also holds).
"""
