"""graphcost.data.transforms: TGraph's preprocessing (§2.2) and batching: pruning, configuration de-duplication, base-7
compression, -1 padding, feature scaling, the prepared-graph record and its on-disk cache,
the model batches, and `pool` (a split's prepared graphs, in memory or read back from the cache).
"""
