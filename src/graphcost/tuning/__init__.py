"""Tuning a user's JAX program with a learned cost model and a real measurement budget.

Layers (imports go downward): `tuner` (the loop, `TuneConfig`) -> `final_check` (the best re-measured
in fresh processes, the answer picked) -> `result` (`TuneResult`, `TunedConfig`, best.json, trials.csv) and `strategies`
(the `Strategy` ABC: random, TPE, model, model+online) -> `learners` (the per-program learners of
model+online: effects, tree, finetune; the `OnlineLearner` Protocol) -> `scoring` (the graph cost
model's scores of candidates), and `study` (Optuna storage) -> `trial` (compile, check outputs
and time one batch of trials) and `crossproc` (final check in fresh processes: the collection's
measuring worker, `graphcost.measure.worker`, with the tuner's builder) -> `space` (flags / layouts / both) ->
`graphcost.frontend` (`programs.user_program`: the program a user brings, by reference, loaded
and prepared as a `TuneProgram`) and `graphcost.measure` (`program_check`: it prepared and run once in a
child process, each step under a deadline). Above the loop: `apply` (`compile_with`: the tuned configuration applied).
Beside it: `plot` (progress.png, drawn by `tuner`); `defaults` (what no options means, for `TuneConfig` and the
command line); `tuning_run_dir` (a tuning run's directory, checked before the program is loaded).
The verbs a user runs on their own program besides tune (rank, profile, verify) are `graphcost.workload`,
above this package.

Example:
    ```python
    import graphcost

    result = graphcost.tune(fn, *args, space="flags", budget=32)
    fast = graphcost.compile_with(fn, result.best)

    settings = graphcost.TuneConfig(space="flags", budget=32, out="runs/tuned")
    result = graphcost.tune(fn, *args, config=settings, seed=1)  # keywords replace its fields
    ```
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # editors and type checkers see the lazy names below; at run time __getattr__ imports them
    from graphcost.tuning.apply import compile_with
    from graphcost.tuning.result import TunedConfig, TuneResult
    from graphcost.tuning.tuner import TuneConfig, tune

__all__ = ["TuneConfig", "TuneResult", "TunedConfig", "compile_with", "tune"]

_LAZY = {"compile_with": "graphcost.tuning.apply", "TunedConfig": "graphcost.tuning.result",
         "TuneResult": "graphcost.tuning.result", "TuneConfig": "graphcost.tuning.tuner",
         "tune": "graphcost.tuning.tuner"}


def __getattr__(name: str):
    """The API names, imported on first use: `graphcost.tuning.defaults` (what the command line reads for its
    option defaults) imports nothing else of the package."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'graphcost.tuning' has no attribute {name!r}")
