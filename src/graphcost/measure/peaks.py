"""This machine's peak FLOP/s and memory bandwidth, measured once by micro-benchmarks, for the roofline.

Run in the regime the kernels were timed in (the measuring processes of `graphcost collect`: XLA's CPU
kernels single-threaded, the process pinned to one core), so that peaks and kernel times describe
the same core:

* FLOP/s: an (n × n) @ (n × n) float32 matmul (2 n³ flops; n = 1024), the fastest of `calls` calls;
* bytes/s: ``x + 1`` over a float32 array of 64 MiB, which reads and writes every element once
  (2 · 64 MiB moved), the fastest of `calls` calls.

``python -m graphcost.measure.peaks OUT.json [CORE]`` writes them (and the CPU model).

References:
    [Roofline] S. Williams, A. Waterman, D. Patterson. Roofline: an insightful visual performance model for
        multicore architectures. CACM 52(4), 2009. https://doi.org/10.1145/1498765.1498785
"""

from __future__ import annotations

import os
import sys
import time


def _fastest(fn, args, calls: int) -> float:
    import jax

    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def measure_peaks(n: int = 1024, mib: int = 64, calls: int = 5) -> dict:
    """``{"peak_flops": .., "peak_bytes_per_s": .., ...}`` of this process (module docstring)."""
    import jax
    import jax.numpy as jnp

    from graphcost.measure.interleaved import cpu_model

    a = jnp.ones((n, n), jnp.float32)
    matmul = jax.jit(lambda x, y: x @ y)
    flops = 2.0 * n ** 3 / _fastest(matmul, (a, a), calls)
    x = jnp.ones((mib * 2 ** 20 // 4,), jnp.float32)
    stream = jax.jit(lambda v: v + 1.0)
    bandwidth = 2.0 * x.size * 4 / _fastest(stream, (x,), calls)
    return {"peak_flops": flops, "peak_bytes_per_s": bandwidth, "cpu_model": cpu_model(),
            "matmul_n": n, "stream_mib": mib, "calls": calls, "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main(out: str, core: str = "-1") -> int:
    from graphcost.guards.atomic import atomic_write_json

    if int(core) >= 0:
        os.sched_setaffinity(0, {int(core)})
    flag = "--xla_cpu_multi_thread_eigen=false"
    if flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
    atomic_write_json(measure_peaks(), out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
