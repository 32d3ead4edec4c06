"""``kernels``: a search that compiles its candidates and costs them kernel by kernel, corrected on this
program's own profiled trials (issue 64 §3-4).

Each round:

1. **A pool of compiled candidates.** At the start `POOL` configurations spread the way the other
   searches spread them (`space.sample_pool`: random, and mutations of the default), and every round
   `GROW` mutations of the best measured ones, are compiled (`Evaluator.compile_many`, threads over
   the cores; nothing is run). Candidates whose optimized modules are identical (`kernel_rank.
   module_digest`) are split into kernels once.
2. **A cost per candidate** from its kernels (`graphcost.frontend.hlo.kernels`): the shipped kernel
   model predicts each leaf kernel's time under the candidate's flags
   (`graphcost.inference.kernel_model.KernelCostModel`), and the per-kernel online learner
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

import logging
from typing import Any, cast

import numpy as np

from graphcost.tuning.learners.kernel_residual import KernelObservation, KernelResidualLearner
from graphcost.tuning.space import Codes, FlagSpace, JointSpace, LayoutSpace, Space, sample_pool
from graphcost.tuning.strategies import FIRST_ROUND_PROBES, ProposingStrategy, diverse_top
from graphcost.tuning.trial import OK, Trial

log = logging.getLogger(__name__)

POOL = 32  # candidates compiled before the first round
GROW = 8  # mutations of the best measured compiled each round
REFILLS = 2  # times a round compiles more samples when the pool has too few distinct new executables


class KernelSearch(ProposingStrategy):
    """The ``kernels`` strategy (module docstring). evaluator: the tuner's `trial.Evaluator` (it compiles)."""

    name = "kernels"

    def __init__(self, space: Space, evaluator, seed: int = 0, model=None, pool: int = POOL, grow: int = GROW,
                 probes: float = FIRST_ROUND_PROBES):
        super().__init__(space, seed)
        from graphcost.inference.kernel_model import KernelCostModel

        self.evaluator, self.grow, self.probes = evaluator, grow, probes
        self.model = model or KernelCostModel.load()
        self.learner = KernelResidualLearner()
        self.predicted: dict[Codes, list[tuple[str, str, str, float]] | None] = {}  # codes -> (name, fingerprint, kind, ns)
        self._by_digest: dict[str, dict] = {}
        self._observed: set[Codes] = set()
        codes, _ = sample_pool(space, pool, seed)
        self._compile(list(codes))

    # -- the pool --------------------------------------------------------------------------
    def _flags(self, codes: Codes) -> np.ndarray:
        """(24,) the flag columns the kernel model reads for `codes` (the default's in a layout-only space)."""
        from graphcost.frontend.programs import flags as flagspace

        if isinstance(self.space, LayoutSpace):
            return flagspace.flag_features([flagspace.FlagConfig(tuple(flagspace.DEFAULT))])[0]
        sub = cast(FlagSpace, self.space.flags if isinstance(self.space, JointSpace) else self.space)
        part = self.space.split(codes)[0] if isinstance(self.space, JointSpace) else codes
        return flagspace.flag_features([sub.config(part)])[0]

    def _compile(self, batch: list[Codes]) -> None:
        """Compile the new configurations of `batch` and predict their kernels (None: it failed)."""
        from graphcost.frontend.collect.kernel_records import optimized_kernels
        from graphcost.tuning.kernel_rank import module_digest

        new = [c for c in dict.fromkeys(batch) if c not in self.predicted]
        if not new:
            return
        for codes, exe in zip(new, self.evaluator.compile_many(new)):
            if isinstance(exe, Trial):  # a compile error: not a candidate
                self.predicted[codes] = None
                continue
            try:
                digest = module_digest(exe)
                if digest not in self._by_digest:
                    self._by_digest[digest] = optimized_kernels(exe)
                kernels = self._by_digest[digest]
                _, shares = self.model.cost(kernels, self._flags(codes))
                self.predicted[codes] = [(n, kernels[n].fingerprint, kind, s * 1e9) for n, kind, s in shares]
            except Exception as exc:  # noqa: BLE001 - an unreadable module: this candidate goes unscored
                log.warning(f"kernels: could not cost a candidate ({type(exc).__name__}: {exc})")
                self.predicted[codes] = None

    def cost(self, codes: Codes) -> float:
        """T̃ of a compiled candidate, ns per call (module docstring); inf when it could not be costed."""
        kernels = self.predicted.get(codes)
        if not kernels:
            return float("inf")
        return self.learner.program_cost([(fp, kind, t) for _, fp, kind, t in kernels])

    # -- learning from the measured trials ----------------------------------------------------
    def observe(self, history: list[Trial]) -> int:
        """Give the learner the kernels of every measured trial not seen yet; how many were new."""
        new = [t for t in history if t.status == OK and t.extra.get("kernels") and t.codes not in self._observed]
        self._compile([t.codes for t in new])  # a resumed study's trials may not be in the pool
        for t in new:
            self._observed.add(t.codes)
            predicted = {name: (fp, kind, ns) for name, fp, kind, ns in self.predicted.get(t.codes) or []}
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
            self._compile([self.space.mutate(t.codes, self.rng) for t in measured[:2] for _ in range(self.grow // 2)])
        exclude = {t.codes for t in history} | {self.space.default()} | set(busy)
        for _ in range(REFILLS + 1):  # too few distinct new executables in the pool: compile more candidates
            pool = [c for c, k in self.predicted.items() if k]
            order = self._one_per_executable(np.argsort([self.cost(c) for c in pool], kind="stable"), pool, exclude)
            if sum(pool[i] not in exclude for i in order) >= n:
                break
            self._compile([self.space.sample(self.rng) for _ in range(max(n, self.grow))])
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
        return {"compiled": len(self.predicted), "costed": sum(1 for k in self.predicted.values() if k),
                "distinct_modules": len(self._by_digest), "observations": self.learner.observations}
