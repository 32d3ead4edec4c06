"""Kernel-model costs of a program's configurations, whatever space they come from.

    scorer = KernelModelScorer(evaluator.executables, space.flag_vector)   # a tuning space's (graphcost.tuning)
    seconds = scorer(configs)  # (K,) predicted seconds per call, LOWER = faster; inf where it failed

A configuration is any hashable key; the scorer is given how to compile a batch of them
(``compile_many(batch)``: each one's executable, None where it failed to compile; the tuner's
`Evaluator.executables` compiles in threads over the cores, nothing run) and which flag vector the kernel
model reads for one (``flags_of(config)``: the tuner's `Space.flag_vector`, the default's in a layout-only
space: there the layouts XLA assigned are in the kernels' own graphs). Each optimized module is split into
kernels once per distinct module (`executable_fingerprint.module_digest`, `graphcost.frontend.hlo.kernels`)
and costed by the kernel model (`graphcost.kernels.model.KernelCostModel.cost`):
T̂ = a · Σ_k n_k t̂_k + b · Σ_k n_k + d, each leaf kernel's t̂_k predicted under the configuration's flag
vector. Results are kept per configuration, so the ``kernels`` search (`graphcost.tuning.kernel_search`) and
the zero-shot benchmark (`benchmarks/models/bench_kernels_zero_shot.py`) compile each configuration once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

log = logging.getLogger(__name__)
Config = TypeVar("Config", bound=Hashable)  # a configuration: any hashable key (a tuning space's codes)


@dataclass(frozen=True)
class CostedCandidate:
    """One configuration through the kernel model."""

    seconds: float  # the program's predicted time per call (the sum rule)
    kernels: list[tuple[str, str, str, float]]  # (name, fingerprint, kind, predicted ns per call), largest first


class KernelModelScorer(Generic[Config]):
    """Kernel-model costs of configurations (module docstring). compile_many: a batch of configurations to
    their executables (None where one failed); flags_of: a configuration's (24,) flag vector; model: a
    `KernelCostModel` (default: the shipped one)."""

    def __init__(self, compile_many: Callable[[list[Config]], list[Any]], flags_of: Callable[[Config], np.ndarray],
                 model=None):
        from graphcost.kernels.model import KernelCostModel

        self.compile_many, self.flags_of = compile_many, flags_of
        self.model = model or KernelCostModel.load()
        self.costed: dict[Config, CostedCandidate | None] = {}  # config -> its cost (None: failed to compile or cost)
        self._by_digest: dict[str, dict] = {}  # module digest -> its kernels

    @property
    def distinct_modules(self) -> int:
        return len(self._by_digest)

    def flags(self, config: Config) -> np.ndarray:
        """(24,) the flag columns the kernel model reads for `config` (`flags_of`)."""
        return self.flags_of(config)

    def compile(self, batch: Sequence[Config]) -> None:
        """Compile and cost the configurations of `batch` not seen yet."""
        from graphcost.frontend.programs.jax_program import optimized_kernels
        from graphcost.frontend.programs.executable_fingerprint import module_digest

        new = [c for c in dict.fromkeys(batch) if c not in self.costed]
        if not new:
            return
        for config, exe in zip(new, self.compile_many(new)):
            if exe is None:  # a compile error: not a candidate
                self.costed[config] = None
                continue
            try:
                digest = module_digest(exe)
                if digest not in self._by_digest:
                    self._by_digest[digest] = optimized_kernels(exe)
                kernels = self._by_digest[digest]
                seconds, shares = self.model.cost(kernels, self.flags(config))
                self.costed[config] = CostedCandidate(
                    seconds, [(n, kernels[n].fingerprint, kind, s * 1e9) for n, kind, s in shares])
            except Exception as exc:  # noqa: BLE001 - an unreadable module: this candidate goes unscored
                log.warning(f"kernels: could not cost a candidate ({type(exc).__name__}: {exc})")
                self.costed[config] = None

    def kernels(self, config: Config) -> list[tuple[str, str, str, float]] | None:
        """The predicted kernels of a compiled configuration (None: not compiled, or it failed)."""
        c = self.costed.get(config)
        return c.kernels if c else None

    def __call__(self, configs: Sequence[Config]) -> np.ndarray:
        """(K,) predicted seconds per call of `configs`, inf where a configuration failed."""
        self.compile(configs)
        return np.asarray([c.seconds if (c := self.costed[config]) else np.inf for config in configs], np.float64)
