"""Tuning a user's JAX program with a learned cost model and a real measurement budget.

Layers (imports go downward): `tuner` (the loop, results, outputs) -> `strategies` (random, TPE,
model, model+online) -> `scoring` (graph cost model, per-program trees) and `study` (Optuna
storage) -> `trial` (compile, check outputs and time one batch of trials) and `crossproc` (final
check in fresh processes) -> `space` (flags / layouts / both) -> `graphcost.frontend`.

Example:
    ```python
    import graphcost

    result = graphcost.tune(fn, *args, space="flags", budget=32)
    fast = graphcost.compile_with(fn, result.best)

    settings = graphcost.TuneConfig(space="flags", budget=32, out="runs/tuned")
    result = graphcost.tune(fn, *args, config=settings, seed=1)  # keywords replace its fields
    ```
"""

from graphcost.tuning.apply import compile_with
from graphcost.tuning.tuner import TuneConfig, TunedConfig, TuneResult, tune

__all__ = ["TuneConfig", "TuneResult", "TunedConfig", "compile_with", "tune"]
