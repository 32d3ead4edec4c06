"""graphcost: learned performance models of tensor programs.

Subpackages (imports go downward only: cli -> train -> models -> data):
  data/      TpuGraphs schema, validation, npz I/O, preprocessing, batching, synthetic data
  frontend/  HLO protobuf -> TpuGraphs features; JAX programs; local runtime collection
  models/    TGraph, TpuGraphs baselines, Kaufman et al. models, shared layers
  train/     losses, trainer (+DDP), cross-validation ensembles, checkpoints
  metrics    Kendall tau, OPA, top-K slowdown, tile score, APE/MAPE
  dag/       LayerDAG generator of DAGs and its evaluation
"""

__version__ = "0.1.0"
