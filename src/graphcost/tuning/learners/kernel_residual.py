"""Per-kernel online correction of a kernel cost model on one program's own measurements.

A few measurements move a model to new hardware (HELP, MTL-TLP); here they move it kernel by
kernel. The shipped kernel model predicts each leaf kernel's time t̂(k, flags); its labels came
from another CPU and other programs. Every measured candidate of this program gives, per kernel
(by fingerprint f), a measured self time t and so a log residual r = log t − log t̂. Three levels
of correction, each shrunk toward the one above by the number of observations it rests on
(a normal–normal posterior mean with prior weight κ):

    r̄      = Σ w r / (Σ w + κ)                               (all kernels: this CPU against the labels' CPU)
    r̄_kind = (Σ_kind w r + κ r̄) / (Σ_kind w + κ)             (a fusion kind, a library call, a copy)
    r̂_f    = (Σ_f r + κ_f r̄_kind) / (N_f + κ_f)              (one kernel: its own measured times)

and a kernel's corrected time is t̂ · exp(r̂): a kernel measured a few times is costed by its
measurements, an unseen one by its kind's correction. A program's cost is the sum rule of the
corrected kernels plus this program's own overhead, the median over measured configurations of
(measured runtime − Σ corrected kernels):

    T̃ = Σ_k n_k t̂_k exp(r̂_k) + d_program.

At the two pooled levels a residual is weighted by its kernel's share w of its configuration's time
(scaled to average 1: a 1 µs copy's 50% error matters less than a loop body's 5%), so r̄ and
r̄_kind describe where the time is; a kernel's own level counts its measurements (N_f), and its
prior weight κ_f is small, since one profiled kernel time repeats within a few percent across
processes (the kernel collection's per-kernel Spearman 0.98).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

KAPPA = 2.0  # prior weight of the overall and per-kind levels, in time-share-weighted observations
KAPPA_KERNEL = 0.5  # prior weight of a kernel's own level, in measurements


@dataclass(frozen=True)
class KernelObservation:
    """One kernel of one measured configuration: its identity, the model's prediction and the measurement (ns per call)."""

    fingerprint: str
    kind: str
    predicted_ns: float
    measured_ns: float


class KernelResidualLearner:
    """The three-level shrunk log-residual correction of the module docstring."""

    def __init__(self, kappa: float = KAPPA, kappa_kernel: float = KAPPA_KERNEL):
        self.kappa, self.kappa_kernel = float(kappa), float(kappa_kernel)
        self._sum: dict[tuple[str, str], float] = defaultdict(float)  # (level, key) -> Σ w r
        self._weight: dict[tuple[str, str], float] = defaultdict(float)  # (level, key) -> Σ w
        self._configs: list[tuple[list[KernelObservation], float]] = []  # (kernels, timed runtime) per configuration

    def observe(self, kernels: list[KernelObservation], measured_ns: float | None = None) -> None:
        """Add one measured configuration: its kernels and (for the overhead) its timed runtime."""
        valid = [k for k in kernels if k.predicted_ns > 0 and k.measured_ns > 0]
        total = sum(k.measured_ns for k in valid)
        for k in valid:
            w = len(valid) * k.measured_ns / total  # time share, scaled so the weights average 1
            r = float(np.log(k.measured_ns / k.predicted_ns))
            for key in (("all", ""), ("kind", k.kind)):
                self._sum[key] += w * r
                self._weight[key] += w
            self._sum[("kernel", k.fingerprint)] += r
            self._weight[("kernel", k.fingerprint)] += 1.0
        if measured_ns is not None and kernels:
            self._configs.append((list(kernels), float(measured_ns)))

    @property
    def observations(self) -> float:
        return self._weight[("all", "")]

    def residual(self, fingerprint: str, kind: str) -> float:
        """r̂ of a kernel (module docstring); 0 before any observation."""
        k = self.kappa
        overall = self._sum[("all", "")] / (self._weight[("all", "")] + k)
        by_kind = (self._sum[("kind", kind)] + k * overall) / (self._weight[("kind", kind)] + k)
        kf = self.kappa_kernel
        return (self._sum[("kernel", fingerprint)] + kf * by_kind) / (self._weight[("kernel", fingerprint)] + kf)

    def corrected(self, fingerprint: str, kind: str, predicted_ns: float) -> float:
        """The kernel's corrected time t̂ · exp(r̂)."""
        return float(predicted_ns) * float(np.exp(self.residual(fingerprint, kind)))

    def overhead_ns(self) -> float:
        """d_program: the median over the observed configurations of measured − Σ corrected kernels, with
        today's corrections (0 before any)."""
        if not self._configs:
            return 0.0
        return float(np.median([t - sum(self.corrected(k.fingerprint, k.kind, k.predicted_ns) for k in ks)
                                for ks, t in self._configs]))

    def program_cost(self, kernels: list[tuple[str, str, float]]) -> float:
        """T̃ of a candidate from its kernels (fingerprint, kind, predicted ns per call, all executions)."""
        return sum(self.corrected(f, kind, t) for f, kind, t in kernels) + self.overhead_ns()
