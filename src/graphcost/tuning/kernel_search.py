"""``kernels``: a search that compiles its candidates and costs them kernel by kernel, corrected on this
program's own profiled trials.

Each round:

1. **A pool of compiled candidates.** At the start `POOL` configurations spread the way the other
   searches spread them (`space.sample_pool`: random, and mutations of the default), and every round
   `GROW` mutations of the best measured ones, are compiled (`Evaluator.compile_many`, threads over
   the cores; nothing is run). Candidates whose optimized modules are identical (`executable_fingerprint.
   module_digest`) are split into kernels once.
2. **A cost per candidate** from its kernels (`graphcost.frontend.hlo.kernels`): the shipped kernel
   model predicts each leaf kernel's time under the candidate's flags
   (`graphcost.kernels.model.KernelCostModel`), and the per-kernel online learner
   (`learners.kernel_residual.KernelResidualLearner`) corrects it with what this program's measured
   kernels said: T̃ = Σ_k t̂_k exp(r̂_k) + d_program.
3. **What is measured:** the lowest T̃ not yet measured, kept diverse (`strategies.diverse_top`). In
   the first round, before any kernel was measured on this machine, a share `FIRST_ROUND_PROBES` of it
   are single-option probes (each dimension's best by the model), so the learner sees what each
   option does to the kernels.
4. After the round, each measured trial's kernels (`trial.Evaluator(profile_kernels=True)`,
   ``extra["kernels"]``) are matched by name to the same candidate's predicted kernels and given to
   the learner.

A configuration that fails to compile is left out of the pool (it would fail the trial too).
Without the kernel model installed the strategy cannot run, and says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphcost.kernels.scoring import KernelModelScorer
from graphcost.tuning.learners.kernel_residual import KernelObservation, KernelResidualLearner
from graphcost.tuning.space import Codes, Space, sample_pool
from graphcost.tuning.strategies import FIRST_ROUND_PROBES, ProposingStrategy, Strategy, diverse_top, register_strategy
from graphcost.tuning.trial import OK, Trial


POOL = 32  # candidates compiled before the first round
GROW = 8  # mutations of the best measured compiled each round
REFILLS = 2  # times a round compiles more samples when the pool has too few distinct new executables


class KernelSearch(ProposingStrategy):
    """The ``kernels`` strategy (module docstring). evaluator: the tuner's `trial.Evaluator` (it compiles)."""

    name = "kernels"

    def __init__(self, space: Space, evaluator, seed: int = 0, model=None, pool: int = POOL, grow: int = GROW,
                 probes: float = FIRST_ROUND_PROBES):
        super().__init__(space, seed)
        self.evaluator, self.grow, self.probes = evaluator, grow, probes
        self.scorer = KernelModelScorer(evaluator.executables, space.flag_vector, model)
        self.learner = KernelResidualLearner()
        self._observed: set[Codes] = set()
        codes, _ = sample_pool(space, pool, seed)
        self.scorer.compile(list(codes))

    def cost(self, codes: Codes) -> float:
        """T̃ of a compiled candidate, ns per call (module docstring); inf when it could not be costed."""
        kernels = self.scorer.kernels(codes)
        if not kernels:
            return float("inf")
        return self.learner.program_cost([(fp, kind, t) for _, fp, kind, t in kernels])

    # -- learning from the measured trials ----------------------------------------------------
    def observe(self, history: list[Trial]) -> int:
        """Give the learner the kernels of every measured trial not seen yet; how many were new."""
        new = [t for t in history if t.status == OK and t.extra.get("kernels") and t.codes not in self._observed]
        self.scorer.compile([t.codes for t in new])  # a resumed study's trials may not be in the pool
        for t in new:
            self._observed.add(t.codes)
            predicted = {name: (fp, kind, ns) for name, fp, kind, ns in self.scorer.kernels(t.codes) or []}
            obs = [KernelObservation(predicted[row[0]][0], predicted[row[0]][1], predicted[row[0]][2], float(row[3]))
                   for row in t.extra["kernels"] if row[5] and row[0] in predicted]
            if obs:
                self.learner.observe(obs, t.runtime_ns)
        return len(new)

    # -- proposing -------------------------------------------------------------------------
    def propose(self, history: list[Trial], n: int, busy: frozenset = frozenset()) -> list[Codes]:
        self.observe(history)
        measured = sorted((t for t in history if t.status == OK and t.ratio), key=lambda t: t.ratio or 1.0)
        if measured:  # grow the pool around the best measured
            self.scorer.compile([self.space.mutate(t.codes, self.rng) for t in measured[:2]
                                 for _ in range(self.grow // 2)])
        exclude = {t.codes for t in history} | {self.space.default()} | set(busy)
        for _ in range(REFILLS + 1):  # too few distinct new executables in the pool: compile more candidates
            pool = [c for c, k in self.scorer.costed.items() if k]
            order = self._one_per_executable(np.argsort([self.cost(c) for c in pool], kind="stable"), pool, exclude)
            if sum(pool[i] not in exclude for i in order) >= n:
                break
            self.scorer.compile([self.space.sample(self.rng) for _ in range(max(n, self.grow))])
        if not pool:
            return []
        chosen: list[Codes] = []
        if not self.learner.observations:  # the first round: probes of single options too
            singles = [i for i in order if sum(1 for v in pool[i] if v) == 1 and pool[i] not in exclude]
            chosen = [pool[i] for i in singles[:int(np.ceil(self.probes * n))]]
        return chosen + diverse_top(order, pool, n - len(chosen), exclude | set(chosen))

    def _one_per_executable(self, order: np.ndarray, pool: list[Codes], exclude: set) -> np.ndarray:
        """`order` keeping the cheapest candidate of each executable (`trial.Evaluator.fingerprints`), and none
        of an executable already measured or the default's: the evaluator would only copy their timing (on the
        suite's SSM, 7 of 16 trials of this strategy were such copies before)."""
        fps = getattr(self.evaluator, "fingerprints", {})
        seen = {fps[c] for c in exclude if c in fps}
        keep = []
        for i in order:
            fp = fps.get(pool[i])
            if fp is None or fp not in seen:
                keep.append(i)
                if fp is not None:
                    seen.add(fp)
        return np.asarray(keep, dtype=np.int64)

    def describe(self) -> dict[str, Any]:
        """What the strategy did, for logs and tests."""
        costed = self.scorer.costed
        return {"compiled": len(costed), "costed": sum(1 for k in costed.values() if k),
                "distinct_modules": self.scorer.distinct_modules, "observations": self.learner.observations}


def kernel_strategy(space: Space, seed: int, *, evaluator: Any = None, **_: Any) -> Strategy:
    """The factory of the registered strategy ``kernels`` (`strategies.make_strategy`): it compiles its
    candidates with the tuner's `evaluator`."""
    if evaluator is None:
        raise ValueError("strategy 'kernels' compiles its candidates: build it from the tuner's evaluator "
                         "(make_strategy('kernels', space, seed, evaluator=evaluator))")
    return KernelSearch(space, evaluator, seed)


def _register() -> None:
    from graphcost.pretrained import SHIPPED

    register_strategy("kernels", kernel_strategy, model_label="kernels:" + SHIPPED)  # the shipped kernel model


_register()
