"""One measuring process of the cross-process protocol (`graphcost.measure.cross_process`).

``python -m graphcost.measure.worker JOB.json P OUT.npz CORE COMPILE_ONLY`` runs
``main(JOB.json, P, OUT.npz, CORE, COMPILE_ONLY)``: five positional arguments of a fixed internal
protocol (the callers are `run_worker` of `measure/cross_process.py` and `collect/ray_backend.py`;
no option parsing).

Pins itself to core CORE (-1: not pinned; before JAX starts its thread pools), rebuilds the job's zoo program,
compiles every configuration through JAX's persistent compilation cache (``cache_dir`` of the job, with
`programs/compile.py`: a load when the driver compiled it already), times them with the interleaved protocol
(`graphcost.measure.interleaved.measure_interleaved`, seed ``protocol.seed + 1000 * P``) and writes
``OUT.npz`` atomically:

* ``runtime_ns`` (K,) float64 and ``per_round_ns`` (rounds, K) float64; ``mean_ns`` (K,) float64, the
  median over rounds of the mean per call (`Measurement.mean_ns`);
* ``compile_s``: time to compile or load all K executables in this process;
* ``loadavg_start`` / ``loadavg_end`` (3,), ``core`` (-1 when not pinned);
* with ``"kernels": true`` in the job, a profiled pass AFTER the timed calls (so the labels above are
  not perturbed): every configuration called under JAX's profiler, enough calls to fill
  ``kernel_target_ms`` (default 30 ms, 3-20 calls), and its per-kernel self times
  (`graphcost.measure.kernel_profile.profile_arrays`: ``kernel_*`` and ``profile_*`` keys).

COMPILE_ONLY = THREADS > 0 only compiles (THREADS threads) into the job's cache and writes
``compile_s``: the compile step of the Ray backend (`graphcost.collect.ray_backend`), whose
compile tasks ship the cache entries to the measuring node.

Job kinds (key ``space``; a job with a ``builder`` is lowered by it, `lower_job`; one with a ``calls_builder``
gets its zero-argument calls from it, compiled already, e.g. the tuner's confirmation, which times the program
as its user runs it, `graphcost.tuning.crossproc.user_tune_calls`): ``layout`` (``configs``: one full layout configuration per entry, a
list over the program's layout sites of [output, operand 0, operand 1] ``minor_to_major`` or
null), ``flags`` (``configs``: flag values of `graphcost.frontend.programs.flags.FLAG_COLUMNS`) and
``fake`` (no program: ``fake_runtime_ns[P][k]`` nanoseconds elapse on a fake clock per call of
configuration k, a number or a list taken in turn by successive calls, warm-up included; used by the tests of the protocol and for dry runs of a collection).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from graphcost.frontend.programs.compile import compile_all, configure_cache


def _pin(core: int | None) -> int:
    if core is None:
        return -1
    try:
        os.sched_setaffinity(0, {core})
    except (AttributeError, OSError) as exc:
        raise SystemExit(f"cannot pin the measuring process to core {core}: {exc}") from None
    return core


def lower_job(job: dict) -> tuple[list, list, list]:
    """``(lowered, compiler_options, flat_args)`` of a layout or flags job: one `Lowered` per configuration.

    A job with a ``builder`` (``"module:function"``) is lowered by that function of graphcost instead:
    the tuner's final check (`graphcost.tuning.crossproc.lower_tune_job`) rebuilds a user's program
    from its reference and lowers its candidates in its own spaces; everything else (pinning, the
    compilation cache, the interleaved timing, the result file) is this worker's."""
    if "builder" in job:
        return _graphcost_function(job["builder"])(job)
    from graphcost.frontend.programs.jax_program import lower
    from graphcost.frontend.programs.zoo import resolve_program

    fn, args = resolve_program(job["program"], job.get("module")).build()
    if job["space"] == "layout":
        from graphcost.frontend.programs.layouts import LayoutProgram

        lp = LayoutProgram(fn, args)
        configs = [[tuple(tuple(p) if p is not None else None for p in triple) for triple in cfg]
                   for cfg in job["configs"]]
        return [lp.lowered(cfg) for cfg in configs], [None] * len(configs), lp.flat_args
    from graphcost.frontend.programs.flags import FlagConfig

    lowered = lower(fn, args)
    return [lowered] * len(job["configs"]), [FlagConfig(tuple(v)).compiler_options() for v in job["configs"]], list(args)


def _graphcost_function(name: str):
    """The function ``graphcost.MODULE:FUNCTION`` a job names (a job runs graphcost's own builders only)."""
    import importlib

    module, _, function = str(name).partition(":")
    if not module.startswith("graphcost.") or not function.isidentifier():
        raise SystemExit(f"job builder {name!r}: expected graphcost.MODULE:FUNCTION")
    return getattr(importlib.import_module(module), function)


def fake_calls(runtime_ns: list):
    """Zero-argument calls and a clock: call k advances the clock by runtime_ns[k] nanoseconds
    (a number, or a list whose values successive calls take in turn, cycling)."""
    from itertools import cycle

    now = [0]

    def clock() -> int:
        return now[0]

    def make(t):
        steps = cycle(t if isinstance(t, list) else [t])

        def call():
            now[0] += int(next(steps))
        return call

    return [make(t) for t in runtime_ns], clock


def main(job_path: str | Path, process: int | str, out: str | Path, core: int | str = -1,
         compile_only: int | str = 0) -> int:
    """Measure (or, with `compile_only` THREADS > 0, only compile) the job's configurations in this
    process as its `process`-th measuring process, pinned to `core` (-1: not pinned); write `out`."""
    process, compile_only = int(process), int(compile_only)
    core = _pin(None if int(core) < 0 else int(core))
    with open(job_path, encoding="utf-8") as fh:
        job = json.load(fh)

    import numpy as np

    from graphcost.guards.atomic import atomic_write
    from graphcost.measure.interleaved import TimingProtocol, load_average, measure_interleaved

    load_start = load_average() or [np.nan] * 3
    protocol = TimingProtocol(**{**job["protocol"], "seed": job["protocol"]["seed"] + 1000 * process})
    t0 = time.perf_counter()
    if job["space"] == "fake":
        calls, clock = fake_calls(job["fake_runtime_ns"][process])
        block = lambda out: None  # noqa: E731 - nothing to wait for
    else:
        configure_cache(job.get("cache_dir"))
        if "calls_builder" in job:  # the program as its user runs it, each call compiled by its builder
            calls = _graphcost_function(job["calls_builder"])(job)
        else:
            lowered, options, flat_args = lower_job(job)
            exes = compile_all(lowered, options, max(1, compile_only))
            calls = [lambda e=e: e(*flat_args) for e in exes]
        clock, block = time.perf_counter_ns, None
    compile_s = time.perf_counter() - t0
    if compile_only:
        with atomic_write(out) as fh:
            np.savez(fh, compile_s=compile_s)
        return 0
    m = measure_interleaved(calls, protocol, clock=clock, block=block)
    profiled = {}
    if job.get("kernels") and job["space"] != "fake":
        from graphcost.measure.kernel_profile import profile_arrays, profile_calls, repeats_for

        target = float(job.get("kernel_target_ms", 30.0)) * 1e6
        repeats = [repeats_for(t, target) for t in m.runtime_ns]
        profiled = profile_arrays(profile_calls(calls, repeats), len(calls))
    with atomic_write(out) as fh:
        np.savez(fh, **profiled, runtime_ns=m.runtime_ns, per_round_ns=m.per_round_ns, mean_ns=m.mean_ns, compile_s=compile_s, core=core,
                 loadavg_start=np.asarray(load_start, np.float64),
                 loadavg_end=np.asarray(load_average() or [np.nan] * 3, np.float64))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
