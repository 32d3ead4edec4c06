"""graphcost.data: TpuGraphs-schema graphs, shaped like torch_geometric.data.

  graph.py        the in-memory records shared everywhere (LayoutGraph, TileGraph, GraphBatch)
  splits.py       every split of the data, always by graph (holdout, k-fold, train/valid/test,
                  stratified by program family)
  config_split.py the within-program split by configuration (a tuner's setting)
  stats.py        per-collection / per-split statistics
  io/             schema, validation, chunked npz streaming, discovery, download, split overlap, and
                  `locate`: which npz files make a training run's splits
  transforms/     TGraph preprocessing (prune, dedup, compress, pad, scale, cache), batching, and
                  `pool`: a split's prepared graphs, in memory or read back from the cache
  synth/          SYNTHETIC graphs and collections for tests and benchmarks
  pyg/            the PyTorch Geometric TpuGraphsDataset

Imports go downward: pyg -> transforms -> io -> graph; synth and stats use io; splits and
graph import nothing of graphcost. The shipped real datasets are `graphcost.datasets`.
"""
