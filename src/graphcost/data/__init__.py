"""graphcost.data: TpuGraphs-schema graphs, shaped like torch_geometric.data.

  graph.py     the in-memory records shared everywhere (LayoutGraph, TileGraph, GraphBatch)
  io/          schema, validation, chunked npz streaming, discovery, download, split overlap
  transforms/  TGraph preprocessing (prune, dedup, compress, pad, scale, cache) and batching
  synth/       SYNTHETIC graphs and collections for tests and benchmarks
  datasets/    the PyTorch Geometric TpuGraphsDataset
  stats.py     per-collection / per-split statistics

Imports go downward: datasets -> transforms -> io -> graph; synth and stats use io.
"""
