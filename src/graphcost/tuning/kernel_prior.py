"""The default flag prior: the kernel model's main effects of each option on this program.

From the default d and its single-option neighbours d[i←v] (each non-default choice v of each option i, the
default elsewhere), compiled and costed by the shipped kernel model (`graphcost.kernels.scoring`: the sum of
per-kernel predictions T̂), a configuration c is scored by the additive main effects

    score(c) = Σ_{i : c_i ≠ d_i} e_i(c_i),    e_i(v) = log T̂(d[i←v]) − log T̂(d),

LOWER = predicted faster, as everywhere in graphcost. e_i(v) = 0 where d[i←v] compiled to the default's
executable (the option does nothing here), and log 2 where it failed to compile (a configuration that breaks
is ranked slow). Only the ~30-40 single-option configurations are compiled, whatever the size of the pool the
strategies score; their compiles are the ones `graphcost.tuning.inert` learns inert options from, so the
search pays for them once.

Why main effects and not the shipped flag model (a graph model): on the 14 tune-suite programs' measured flag
tables this prior ranks unseen programs at a median Kendall τ of 0.434 against the flag model's 0.308, and the
``hedged`` search guided by it kept 1.105x / 1.129x / 1.150x at budgets 8 / 16 / 32 against 1.099x / 1.121x /
1.148x (BENCHMARKS.md, "the kernel model as the tuner's prior"). ``hedged`` still earns the prior its share
of each round from this program's measurements (`graphcost.tuning.prior_weight`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from graphcost.tuning.inert import compile_for
from graphcost.tuning.space import Codes, Space

log = logging.getLogger(__name__)

LABEL = "kernels:effects"  # what result.json records as the model of a run guided by this prior
FAILED_EFFECT = float(np.log(2.0))  # e_i(v) of a single-option configuration that failed to compile
PRIOR_SECONDS = 60.0  # compile time (2 threads) after which the remaining options get no effect (0)


def main_effects(default: Codes, singles: list[Codes], base_s: float, singles_s, inert: list[bool] | None = None
                 ) -> dict[tuple[int, int], float]:
    """{(i, v): e_i(v)} of the single-option configurations `singles` (each `default` with one option i at v),
    from the predicted seconds `base_s` of the default and `singles_s` (len(singles),) of each: log T̂(d[i←v]) −
    log T̂(d); `FAILED_EFFECT` where its cost is not a positive number (a failed compile), 0 where `inert` (the
    default's own executable)."""
    effects = {}
    for k, (c, t) in enumerate(zip(singles, np.asarray(singles_s, np.float64))):
        i = next(j for j in range(len(c)) if c[j] != default[j])
        if inert is not None and inert[k]:
            effects[(i, int(c[i]))] = 0.0
        else:
            effects[(i, int(c[i]))] = float(np.log(t / base_s)) if np.isfinite(t) and t > 0.0 else FAILED_EFFECT
    return effects


def additive_scores(effects: dict[tuple[int, int], float], default: Codes, configs: list[Codes]) -> np.ndarray:
    """(K,) Σ_{i : c_i ≠ d_i} e_i(c_i) of each configuration c of `configs` (an option without an effect: 0)."""
    return np.array([sum(effects.get((i, int(x)), 0.0) for i, x in enumerate(c) if x != default[i])
                     for c in configs], np.float64)


class KernelEffectsPrior:
    """``score(c) = Σ_i e_i(c_i)`` (module docstring) of `space`'s configurations. `evaluator`: the tuner's
    `trial.Evaluator` (its ``executables`` compile, nothing run; its ``fingerprints`` say which compiles share
    an executable); `model`: a `KernelCostModel` (default: the shipped one). Built eagerly: the single-option
    configurations are compiled here, `chunk` at a time, until `seconds` (None: `PRIOR_SECONDS`) of compiling have been
    spent."""

    reads_compiled = False  # scores come from the configurations alone (no `compiled=` statistics)

    def __init__(self, space: Space, evaluator: Any, model=None, seconds: float | None = None, chunk: int = 4):
        from graphcost.kernels.scoring import KernelModelScorer
        from graphcost.tuning.learners.effects import single_option_configs

        self.space, self.program = space, getattr(evaluator, "program", None)
        self.predictors: dict = {}  # no graph model (what a learner that fine-tunes one would need)
        scorer = KernelModelScorer(evaluator.executables, space.flag_vector, model)
        default = space.default()
        singles = single_option_configs(space)
        seconds = PRIOR_SECONDS if seconds is None else seconds
        start = time.perf_counter()
        base = float(scorer([default])[0])
        if not np.isfinite(base) or base <= 0.0:
            raise ValueError(f"the kernel model could not cost the default configuration of this program (its "
                             f"{space.name} space)")
        done = compile_for(singles, scorer.compile, seconds - (time.perf_counter() - start), chunk)
        fingerprints = getattr(evaluator, "fingerprints", {}) or {}
        same = fingerprints.get(default)
        self.effects = main_effects(default, done, base, scorer(done) if done else np.zeros(0),
                                    [same is not None and fingerprints.get(c) == same for c in done])
        self.compiled = len(done) + 1  # the default and the single-option configurations costed
        self.seconds = time.perf_counter() - start
        self.unscored = len(singles) - len(done)
        log.info(f"kernel prior: {len(done)} of {len(singles)} single-option configurations compiled and costed "
                 f"in {self.seconds:.1f} s" + (f" ({self.unscored} left at no effect: out of time)"
                                               if self.unscored else ""))

    def __call__(self, configs: list[Codes], compiled: np.ndarray | None = None) -> np.ndarray:
        """(K,) scores of `configs`, lower = predicted faster (`compiled` is not read)."""
        return additive_scores(self.effects, self.space.default(), configs)

    def describe(self) -> dict[str, Any]:
        """What the prior was built from (`benchmarks/tune/tuner_prior_tau.py` records it)."""
        return {"compiled": self.compiled, "seconds": round(self.seconds, 2), "unscored_options": self.unscored}
