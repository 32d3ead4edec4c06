"""graphcost: learned performance models of tensor programs.

Papers are cited by short name and section or equation throughout: the four below (References), each
module listing the ones it cites, and the guide's References page.

Packages by floor: a module imports its own package or a package on a LOWER floor, never one above
(the test suite checks it on every import, function-level ones included).

 10  __main__    `python -m graphcost`
  9  cli         the typer app
  8  commands/   one thin module per command (train, evaluate, rank, predict, data, collect, tune, dag);
                 common (errors, option checks, --threads), choices, tables, console.
                 This file (graphcost/__init__) sits on this floor too: its lazy names come from tuning
  7  tuning/     graphcost.tune / compile_with: a cost model + a measurement budget make a program faster
  6  collect/    `graphcost collect`: data collection on this machine or a Ray cluster, and its data card
  5  kernels/    the kernel path: kernel records -> KernelTable -> kernel trees -> the kernel cost model,
                 its training recipe, per-kernel times
  4  train/      graphcost.fit and its RunSpec, the training loop (TrainConfig, Trainer), cross-validation, plots;
     layerdag/   LayerDAG generator of DAGs and its quality metrics (`graphcost dag`);
     measure/    timing, the cross-process measurement protocol and its worker, kernel profiles
  3  inference/  using a trained cost model: scoring and ranking metrics, fold ensembles + trees + blend,
                 rankings and submissions, the cost-model run.json (tuning scores through it, never train/);
     frontend/programs/   JAX programs (zoo) and their configuration spaces (layouts, XLA flags)
  2  models/     TGraph, TpuGraphs baselines, Kaufman et al. models, shared layers, trees, ranking losses;
     runs/       what every training run keeps: checkpoints, run dirs, run.json checks, metrics log,
                 learning-rate schedule, devices and DDP (cost models and LayerDAG alike);
     frontend/hlo/        HLO protobuf decoding, featurizing, autotuner protobuf -> npz
  1  data/       TpuGraphs schema, validation, npz I/O, splits, preprocessing, batching, synthetic data
  0  memory, threads, metrics   no graphcost imports (malloc_trim, --threads auto,
                 Kendall tau / OPA / top-K / tile score / APE);
     datasets/   the shipped real CPU datasets and their one locator
 -1  guards/     what every verb reads and writes through: atomic writes, the guard of every output path
                 (devices, virtual / read-only file systems, inside an input), the bounds of every number and
                 ArgumentError; imports only errors
 -2  errors      GraphcostError, the root of every error graphcost diagnoses; no graphcost imports

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
    [Kaufman et al.] S. J. Kaufman et al. A Learned Performance Model for Tensor Processing Units. MLSys 2021.
        https://arxiv.org/abs/2008.01040
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:  # editors and type checkers see the lazy names below; at run time __getattr__ imports them
    from graphcost.errors import GraphcostError
    from graphcost.train.fit import FitResult, fit
    from graphcost.train.spec import RunSpec, recipe_config
    from graphcost.tuning import TuneConfig, TunedConfig, TuneResult, compile_with, tune
    from graphcost.workload.rank import KernelRanking, rank_configs

__all__ = ["FitResult", "GraphcostError", "KernelRanking", "RunSpec", "TuneConfig", "TuneResult", "TunedConfig",
           "__version__", "compile_with", "fit", "rank_configs", "recipe_config", "tune"]

_LAZY = {"tune": "graphcost.tuning", "compile_with": "graphcost.tuning", "TuneResult": "graphcost.tuning",
         "TunedConfig": "graphcost.tuning", "TuneConfig": "graphcost.tuning", "GraphcostError": "graphcost.errors",
         "fit": "graphcost.train.fit", "FitResult": "graphcost.train.fit", "RunSpec": "graphcost.train.spec",
         "recipe_config": "graphcost.train.spec", "rank_configs": "graphcost.workload.rank",
         "KernelRanking": "graphcost.workload.rank"}


def __getattr__(name: str):
    """`graphcost.tune` / `graphcost.compile_with` without importing JAX-side code at `import graphcost`,
    `graphcost.fit` (`graphcost train` from Python) without importing torch, and `graphcost.GraphcostError`,
    the root of its errors."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'graphcost' has no attribute {name!r}")
