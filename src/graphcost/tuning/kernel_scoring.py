"""Kernel-model costs of a program's configurations in any tuning space.

    scorer = KernelModelScorer(space, trial.Evaluator(program, space))
    seconds = scorer(configs)  # (K,) predicted seconds per call, LOWER = faster; inf where it failed

Each configuration is compiled (`trial.Evaluator.compile_many`: threads over the cores, nothing run),
its optimized module split into kernels once per distinct module (`executable_fingerprint.module_digest`,
`graphcost.frontend.hlo.kernels`) and costed by the kernel model
(`graphcost.kernels.model.KernelCostModel.cost`): T̂ = a · Σ_k n_k t̂_k + b · Σ_k n_k + d, each
leaf kernel's t̂_k predicted under the configuration's flag vector (the default's in a layout-only
space: there the layouts XLA assigned are in the kernels' own graphs). Results are kept per
configuration, so the ``kernels`` search (`kernel_search`) and the zero-shot benchmark
(`benchmarks/models/bench_real.py --protocols zero_shot`) compile each configuration once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence, cast

import numpy as np

from graphcost.tuning.space import Codes, FlagSpace, JointSpace, LayoutSpace, Space
from graphcost.tuning.trial import Trial

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CostedCandidate:
    """One configuration through the kernel model."""

    seconds: float  # the program's predicted time per call (the sum rule)
    kernels: list[tuple[str, str, str, float]]  # (name, fingerprint, kind, predicted ns per call), largest first


class KernelModelScorer:
    """Kernel-model costs of configurations of the evaluator's program in `space` (module docstring).
    evaluator: a `trial.Evaluator` (it compiles); model: a `KernelCostModel` (default: the shipped one)."""

    def __init__(self, space: Space, evaluator, model=None):
        from graphcost.kernels.model import KernelCostModel

        self.space, self.evaluator = space, evaluator
        self.model = model or KernelCostModel.load()
        self.costed: dict[Codes, CostedCandidate | None] = {}  # codes -> its cost (None: failed to compile or cost)
        self._by_digest: dict[str, dict] = {}  # module digest -> its kernels

    @property
    def distinct_modules(self) -> int:
        return len(self._by_digest)

    def flags(self, codes: Codes) -> np.ndarray:
        """(24,) the flag columns the kernel model reads for `codes` (the default's in a layout-only space)."""
        from graphcost.frontend.programs import flags as flagspace

        if isinstance(self.space, LayoutSpace):
            return flagspace.default_flag_vector()
        sub = cast(FlagSpace, self.space.flags if isinstance(self.space, JointSpace) else self.space)
        part = self.space.split(codes)[0] if isinstance(self.space, JointSpace) else codes
        return flagspace.flag_features([sub.config(part)])[0]

    def compile(self, batch: Sequence[Codes]) -> None:
        """Compile and cost the configurations of `batch` not seen yet."""
        from graphcost.frontend.programs.jax_program import optimized_kernels
        from graphcost.frontend.programs.executable_fingerprint import module_digest

        new = [c for c in dict.fromkeys(batch) if c not in self.costed]
        if not new:
            return
        for codes, exe in zip(new, self.evaluator.compile_many(new)):
            if isinstance(exe, Trial):  # a compile error: not a candidate
                self.costed[codes] = None
                continue
            try:
                digest = module_digest(exe)
                if digest not in self._by_digest:
                    self._by_digest[digest] = optimized_kernels(exe)
                kernels = self._by_digest[digest]
                seconds, shares = self.model.cost(kernels, self.flags(codes))
                self.costed[codes] = CostedCandidate(
                    seconds, [(n, kernels[n].fingerprint, kind, s * 1e9) for n, kind, s in shares])
            except Exception as exc:  # noqa: BLE001 - an unreadable module: this candidate goes unscored
                log.warning(f"kernels: could not cost a candidate ({type(exc).__name__}: {exc})")
                self.costed[codes] = None

    def kernels(self, codes: Codes) -> list[tuple[str, str, str, float]] | None:
        """The predicted kernels of a compiled configuration (None: not compiled, or it failed)."""
        c = self.costed.get(codes)
        return c.kernels if c else None

    def __call__(self, configs: Sequence[Codes]) -> np.ndarray:
        """(K,) predicted seconds per call of `configs`, inf where a configuration failed."""
        self.compile(configs)
        return np.asarray([c.seconds if (c := self.costed[codes]) else np.inf for codes in configs], np.float64)
