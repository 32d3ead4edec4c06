"""graphcost: learned performance models of tensor programs.

Subpackages (imports go downward only: cli -> train -> models -> data):
  data/      TpuGraphs schema, validation, npz I/O, preprocessing, batching, synthetic data
  frontend/  HLO protobuf -> TpuGraphs features; JAX programs; local runtime collection
  models/    TGraph, TpuGraphs baselines, Kaufman et al. models, shared layers
  train/     losses, trainer (+DDP), cross-validation ensembles, checkpoints
  metrics    Kendall tau, OPA, top-K slowdown, tile score, APE/MAPE
  dag/       LayerDAG generator of DAGs and its evaluation
  tuning/    graphcost.tune / compile_with: a cost model + a measurement budget make a program faster
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # editors and type checkers see the lazy names below; at run time __getattr__ imports them
    from graphcost.tuning import TunedConfig, TuneResult, compile_with, tune

__all__ = ["TuneResult", "TunedConfig", "__version__", "compile_with", "tune"]

_LAZY = {"tune": "graphcost.tuning", "compile_with": "graphcost.tuning", "TuneResult": "graphcost.tuning",
         "TunedConfig": "graphcost.tuning"}


def __getattr__(name: str):
    """`graphcost.tune` / `graphcost.compile_with` without importing JAX-side code at `import graphcost`."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'graphcost' has no attribute {name!r}")
