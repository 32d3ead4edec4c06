"""Tuning a user's JAX program with a learned cost model and a real measurement budget.

Layers (imports go downward): `tuner` (the loop, results, outputs) -> `strategies` (random, TPE,
model, model+online) -> `scoring` (graph cost model, per-program trees) and `study` (Optuna
storage) -> `evaluate` (compile, check outputs, time) and `crossproc` (final check in fresh
processes) -> `space` (flags / layouts / both) -> `graphcost.frontend`.

Example:
    ```python
    import graphcost

    result = graphcost.tune(fn, *args, space="flags", budget=32)
    fast = graphcost.compile_with(fn, result.best)
    ```
"""

from graphcost.tuning.apply import compile_with
from graphcost.tuning.tuner import TunedConfig, TuneResult, tune

__all__ = ["TuneResult", "TunedConfig", "compile_with", "tune"]
