"""Interleaved runtime measurement of many compiled variants of one program, on a noisy machine.

Protocol (all parameters recorded in the dataset metadata):

1. every configuration is compiled before any timing (compilation never overlaps timing);
2. each executable is warmed up (`warmup` calls, results blocked on);
3. `rounds` rounds; in each round the configurations are visited in a fresh random order
   (round-robin, so a burst of load from other processes hits all configurations alike rather
   than a contiguous block of them); a visit makes `calls` back-to-back calls and keeps the
   MINIMUM wall time (the least-disturbed call; `jax.block_until_ready` on the outputs). With `visit_ms` > 0
   the visits are timed by length instead, as ``python -m timeit`` sizes its loops: one more call of each
   configuration after its warm-up gives its time per call t, and its visits make
   ``clamp(ceil(visit_ms / t), calls, CALLS_PER_VISIT_MAX)`` calls (`visit_calls`), so each configuration's
   visits last about `visit_ms` however fast it runs;
4. the runtime of a configuration is the MEDIAN over rounds of those per-round minima.

Each visit's MEAN wall time per call is kept too (``mean_ns``: the median over rounds of the per-round means):
what a user who times the program with ``timeit`` sees, slow calls included. The minimum ranks configurations
with the least noise; the mean is what a tuned program's speedup is reported in (`graphcost.tuning.ablation`).

The per-round matrix is kept, so two independent estimates (even rounds vs odd rounds) can be
compared to report measurement repeatability (Spearman rank correlation).
"""

from __future__ import annotations

import math
import os
import platform
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class TimingProtocol:
    """Timing protocol parameters (see module docstring). Called ``Protocol`` before 2026-12-04, a name it
    shared with `typing.Protocol`; the old name still imports, with a DeprecationWarning, for one release."""

    rounds: int = 5
    calls: int = 10  # calls per visit (with visit_ms > 0: at least this many)
    warmup: int = 2
    seed: int = 0
    visit_ms: float = 0.0  # > 0: each visit lasts about this long (module docstring, step 3)

    def __post_init__(self):
        for name in ("rounds", "calls"):
            if getattr(self, name) < 1:
                raise ValueError(f"measurement protocol: {name} must be >= 1, got {getattr(self, name)}")
        if self.warmup < 0:
            raise ValueError(f"measurement protocol: warmup must be >= 0, got {self.warmup}")
        if not (0.0 <= self.visit_ms <= 60_000.0):  # also refuses NaN
            raise ValueError(f"measurement protocol: visit_ms must be in [0, 60000], got {self.visit_ms}")


CALLS_PER_VISIT_MAX = 10_000  # a visit sized by its length makes at most this many calls


def visit_calls(visit_s: float, call_s: float, at_least: int) -> int:
    """Calls a visit of about `visit_s` seconds makes of a function taking `call_s` seconds per call:
    ``clamp(ceil(visit_s / call_s), at_least, CALLS_PER_VISIT_MAX)``."""
    return max(at_least, min(CALLS_PER_VISIT_MAX, math.ceil(visit_s / max(call_s, 1e-7))))


def __getattr__(name: str) -> Any:
    """``Protocol``: the old name of `TimingProtocol` (deprecated)."""
    if name == "Protocol":
        import warnings

        warnings.warn("graphcost.measure.interleaved.Protocol is now TimingProtocol; the old name goes in "
                      "the next release", DeprecationWarning, stacklevel=2)
        return TimingProtocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Measurement:
    """Result of `measure_interleaved`: runtimes in nanoseconds."""

    runtime_ns: np.ndarray  # (K,) float64, median over rounds of per-round minima
    per_round_ns: np.ndarray  # (rounds, K) float64, per-round minimum of `calls` calls
    protocol: TimingProtocol
    per_round_mean_ns: np.ndarray | None = None  # (rounds, K) float64, per-round mean of `calls` calls
    calls_per_visit: np.ndarray | None = None  # (K,) int64, calls per visit of each configuration

    @property
    def mean_ns(self) -> np.ndarray:
        """(K,) float64: the median over rounds of the per-round mean per call (module docstring, step 4)."""
        if self.per_round_mean_ns is None:
            raise ValueError("this measurement kept no per-call means")
        return np.median(self.per_round_mean_ns, axis=0)

    def split_halves(self) -> tuple[np.ndarray, np.ndarray]:
        """Two independent estimates: medians over even rounds and over odd rounds, each (K,)."""
        if self.per_round_ns.shape[0] < 2:
            raise ValueError("need at least 2 rounds to split the measurement into two halves")
        return np.median(self.per_round_ns[0::2], axis=0), np.median(self.per_round_ns[1::2], axis=0)


def _block(out: Any) -> None:
    import jax

    jax.block_until_ready(out)


def measure_interleaved(calls: list[Callable[[], Any]], protocol: TimingProtocol = TimingProtocol(),
                        progress: Callable[[int], None] | None = None,
                        clock: Callable[[], int] = time.perf_counter_ns,
                        block: Callable[[Any], None] | None = None) -> Measurement:
    """Time zero-argument callables (one per configuration) with the interleaved protocol.

    calls: already compiled executables bound to their arguments, e.g. ``lambda: compiled(*args)``.
    progress: called with the number of timing visits just completed (for a progress bar).
    clock: nanosecond timer (a fake one in tests); block: waits for a call's outputs
    (default ``jax.block_until_ready``).
    """
    block = block or _block
    k = len(calls)
    if k == 0:
        raise ValueError("nothing to measure: no configurations")
    rng = np.random.default_rng(protocol.seed)
    for call in calls:  # step 2: warm-up (page-in, thread-pool start, caches)
        for _ in range(protocol.warmup):
            block(call())
    n = np.full(k, protocol.calls, np.int64)
    if protocol.visit_ms > 0:  # step 3's visits sized by their length: one timed call of each
        for j, call in enumerate(calls):
            t0 = clock()
            block(call())
            n[j] = visit_calls(protocol.visit_ms / 1e3, (clock() - t0) / 1e9, protocol.calls)
    per_round = np.empty((protocol.rounds, k), np.float64)
    per_round_mean = np.empty((protocol.rounds, k), np.float64)
    for r in range(protocol.rounds):  # step 3: round-robin in a fresh random order
        for j in rng.permutation(k):
            best, total = np.inf, 0.0
            for _ in range(n[j]):
                t0 = clock()
                block(calls[j]())
                took = clock() - t0
                best, total = min(best, took), total + took
            per_round[r, j] = best
            per_round_mean[r, j] = total / n[j]
        if progress is not None:
            progress(k)
    return Measurement(np.median(per_round, axis=0), per_round, protocol, per_round_mean, n)  # step 4


def measure_executables(executables: list, args, protocol: TimingProtocol = TimingProtocol()) -> Measurement:
    """`measure_interleaved` of compiled executables, each called as ``executable(*args)``."""
    return measure_interleaved([lambda e=e: e(*args) for e in executables], protocol)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (Pearson correlation of average ranks); nan if either is constant."""
    from scipy.stats import spearmanr

    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (Linux), else `platform.processor()`."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> list[float] | None:
    """1/5/15-minute load averages, or None where unsupported."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def environment_metadata(protocol: TimingProtocol | None = None) -> dict[str, Any]:
    """Device, versions, host and protocol, for a dataset manifest / card."""
    import jax

    from graphcost.frontend.programs.jax_program import jax_versions

    dev = jax.devices()[0]
    meta = {
        "device": {"platform": dev.platform, "device_kind": getattr(dev, "device_kind", "?"),
                   "num_devices": jax.device_count()},
        "versions": {**jax_versions(), "python": platform.python_version(), "numpy": np.__version__},
        "host": {"node": platform.node(), "cpu_model": cpu_model(), "cpu_count": os.cpu_count(),
                 "system": f"{platform.system()} {platform.release()}", "loadavg": load_average()},
        "xla_flags_env": os.environ.get("XLA_FLAGS", ""),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if protocol is not None:
        meta["protocol"] = {**asdict(protocol), "statistic": "median over rounds of min over calls",
                            "order": "random permutation per round (interleaved)", "unit": "ns"}
    return meta
