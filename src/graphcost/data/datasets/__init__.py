"""graphcost.data.datasets: PyTorch Geometric datasets over TpuGraphs-schema files.
"""
