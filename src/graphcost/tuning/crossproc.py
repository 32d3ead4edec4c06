"""The final check of a tuning run: the best configurations against the default, timed in P
fresh worker processes (the cross-process protocol `graphcost collect` labels its data with: one
process's timings agree with themselves far better than with another process's).

Each process is the collection's measuring worker (`graphcost.measure.worker`, started by
`graphcost.measure.cross_process.run_worker`); its job names `lower_tune_job` as its
builder, which rebuilds the program from its reference (`graphcost.frontend.programs.user_program`) and lowers the
default and the candidates in the tuning space; the worker compiles them (through JAX's persistent
compilation cache, so only the first process pays the compile) and times them with the interleaved
protocol (`graphcost.measure.interleaved`). Per process p and candidate k the speedup is
``default runtime / candidate runtime``; the reported speedup is the median over processes and the
spread their min..max. A program given as a Python object (the API's ``graphcost.tune(fn, *args)``) cannot be
rebuilt in another process: it is timed in P independent passes in this process instead, and the result says so.
With ``as_user`` (the confirmation of the configuration a run keeps, `graphcost.tuning.ablation`) the processes
time the program as its user runs it instead: plain ``jax.jit(fn)`` against ``graphcost.compile_with(fn,
configuration)`` on make()'s own arguments (`user_calls`). `profile_cross_process` times configurations in the same
processes, each then making a profiled pass: their per-kernel times (`graphcost.kernels.times`); `profile_default`
profiles the default so before the search (in this process without a reference), and the run logs its top kernels.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from graphcost.guards.atomic import atomic_write_json
from graphcost.kernels.times import ConfigProfile, ProgramProfile, profile_of
from graphcost.measure.interleaved import TimingProtocol
from graphcost.tuning.space import Codes

log = logging.getLogger(__name__)


@dataclass
class Remeasurement:
    """Runtimes of [default, *candidates] in each of P processes (or passes)."""

    runtime_ns: np.ndarray  # (P, K) float64, column 0 = the default
    protocol: str  # "cross-process" or "in-process"
    compile_s: list[float]  # per process: compile time of all K configurations
    profiles: list[dict] | None = None  # per process, its profiled pass (`kernel_profile.profile_arrays`), if asked
    mean_ns: np.ndarray | None = None  # (P, K) float64, the mean per call (`Measurement.mean_ns`); None: not kept

    @property
    def speedups(self) -> np.ndarray:
        """(P, K-1) default runtime / candidate runtime, per process."""
        return self.runtime_ns[:, :1] / self.runtime_ns[:, 1:]

    @property
    def mean_speedups(self) -> np.ndarray:
        """(P, K-1) the same from the mean per call (a user's ``timeit``); `speedups` where means were not kept."""
        if self.mean_ns is None:
            return self.speedups
        return self.mean_ns[:, :1] / self.mean_ns[:, 1:]

    def to_json(self) -> dict:
        return {"runtime_ns": self.runtime_ns.tolist(), "protocol": self.protocol, "compile_s": self.compile_s,
                "speedup_median": np.median(self.speedups, axis=0).tolist(),
                "speedup_min": self.speedups.min(axis=0).tolist(), "speedup_max": self.speedups.max(axis=0).tolist()}


def remeasure_cross_process(program_ref: str, space: str, configs: list[Codes], processes: int, protocol: TimingProtocol,
                            allow_fast_math: bool = False, cache_dir: str | Path | None = None,
                            timeout: float = 900.0, kernels: bool = False, timeout_note: str = "",
                            as_user: bool = False) -> Remeasurement:
    """Time `configs` (configs[0] = the default) in `processes` fresh worker processes, one after
    another; with `kernels`, each process then makes a profiled pass (`Remeasurement.profiles`). With `as_user`
    the processes time the program as its user runs it (`user_calls`), else the compiled executables on the
    flattened arguments. A process that runs past `timeout` seconds (chosen as `timeout_note` says), aborts or
    crashes is a RuntimeError naming the program."""
    from graphcost.kernels.records import read_process_profiles
    from graphcost.measure.cross_process import run_worker

    rows, means, compile_s, files = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="graphcost-remeasure-") as tmp:
        job = Path(tmp) / "job.json"
        atomic_write_json({
            ("calls_builder" if as_user else "builder"): "graphcost.tuning.crossproc:"
            + ("user_tune_calls" if as_user else "lower_tune_job"), "space": "tune", "program": program_ref,
            "tune_space": space, "allow_fast_math": allow_fast_math, "configs": [list(c) for c in configs],
            "cache_dir": str(cache_dir) if cache_dir else None, "protocol": asdict(protocol), "kernels": kernels}, job)
        for p in range(processes):
            out = Path(tmp) / f"res{p}.npz"
            # killed with the tune (a killed tune leaves no worker behind); not pinned: a user's machine
            run_worker(job, p, out, core=None, timeout_s=timeout, label=program_ref, deadline_note=timeout_note)
            with np.load(out, allow_pickle=False) as res:
                rows.append(np.asarray(res["runtime_ns"], np.float64))
                means.append(np.asarray(res["mean_ns"], np.float64) if "mean_ns" in res.files else None)
                compile_s.append(round(float(res["compile_s"]), 3))
            files.append(out)
        profiles = read_process_profiles(files) if kernels else None
    mean_ns = np.array(means, np.float64) if all(m is not None for m in means) else None
    return Remeasurement(np.array(rows, np.float64), "cross-process", compile_s, profiles, mean_ns)


def lower_tune_job(job: dict) -> tuple[list, list, list]:
    """The measuring worker's builder for a tuning job (`graphcost.measure.worker.lower_job`):
    ``(lowered, compiler_options, flat_args)`` of the program `job["program"]` (a reference) under each
    configuration of `job["configs"]` (codes of the `job["tune_space"]` space)."""
    from graphcost.frontend.programs.user_program import load_program
    from graphcost.frontend.programs.user_program import TuneProgram
    from graphcost.tuning.space import make_space

    fn, args, name = load_program(job["program"])
    program = TuneProgram(fn, args, name)
    space = make_space(job["tune_space"], program, allow_fast_math=job["allow_fast_math"])
    return _lowered(program, space, job["configs"])


def user_tune_calls(job: dict) -> list:
    """The measuring worker's calls builder for a tuning job timed as its user runs it (`graphcost.measure.worker`):
    `user_calls` of the program `job["program"]` under each configuration of `job["configs"]`."""
    from graphcost.frontend.programs.user_program import TuneProgram, load_program
    from graphcost.tuning.space import make_space

    fn, args, name = load_program(job["program"])
    program = TuneProgram(fn, args, name)
    return user_calls(program, make_space(job["tune_space"], program, allow_fast_math=job["allow_fast_math"]),
                      job["configs"])


def user_calls(program, space, configs: list) -> list:
    """Zero-argument calls of `program` under each of `configs` (codes of `space`) as its user runs it: plain
    ``jax.jit(fn)`` for the default, ``graphcost.compile_with(fn, configuration)`` for the others, called on the
    program's own arguments (its pytree) through their own dispatch, not the executables on flattened arguments
    (a flattening wrapper once made a tuned MLP time 1.05x where the executables ran 1.20x; `compile_with`). Each
    is called once here, so its compile is done."""
    import jax

    from graphcost.tuning.apply import compile_with
    from graphcost.tuning.result import TunedConfig

    configs = [TunedConfig.of(space, space.check(c)) for c in configs]
    fns = [jax.jit(program.fn) if cfg.is_default else compile_with(program.fn, cfg) for cfg in configs]
    calls = [lambda f=f: f(*program.args) for f in fns]
    for call in calls:
        jax.block_until_ready(call())
    return calls


def _lowered(program, space, configs: list) -> tuple[list, list, list]:
    """``(lowered, compiler_options, flat_args)`` of `program` under each of `configs` (codes of `space`)."""
    codes = [space.check(c) for c in configs]
    return [space.lower(program, c) for c in codes], [space.compiler_options(c) for c in codes], program.flat_args


def remeasure_in_process(evaluator, configs: list[Codes], passes: int, protocol: TimingProtocol,
                         kernels: bool = False, as_user: bool = False) -> Remeasurement:
    """Fallback for programs without a reference: `passes` independent interleaved passes here (with `as_user`, of
    `user_calls`, else of the executables); with `kernels`, one profiled pass after them."""
    import time

    from graphcost.measure.interleaved import measure_interleaved
    from graphcost.measure.kernel_profile import profile_arrays, profile_calls, repeats_for

    t0 = time.perf_counter()
    if as_user:
        calls = user_calls(evaluator.program, evaluator.space, configs)
    else:
        exes = [evaluator.compile(c) for c in configs]
        calls = [lambda e=e: e(*evaluator.program.flat_args) for e in exes]
    compile_s = time.perf_counter() - t0
    passes_ = [measure_interleaved(calls, replace(protocol, seed=protocol.seed + 7 * p)) for p in range(passes)]
    rows = [m.runtime_ns for m in passes_]
    profiles = None
    if kernels:
        repeats = [repeats_for(t, 30e6) for t in np.median(rows, axis=0)]
        profiles = [profile_arrays(profile_calls(calls, repeats), len(calls))]
    return Remeasurement(np.array(rows, np.float64), "in-process", [compile_s] + [0.0] * (passes - 1), profiles,
                         np.array([m.mean_ns for m in passes_], np.float64))


def profile_cross_process(ref: str, space_name: str, configs: list, labels: list[str], processes: int = 3,
                          protocol: TimingProtocol | None = None, allow_fast_math: bool = True,
                          cache_dir: str | Path | None = None, timeout_s: float = 900.0,
                          timeout_note: str = "", described: tuple[list, list] | None = None) -> ProgramProfile:
    """Profiles of `configs` (codes of the `space_name` tuning space) of the program `ref`, each of
    `processes` fresh processes timing them together and then making a profiled pass (`graphcost.kernels.times`).
    `described`: each configuration's kernels and their origins (`describe_configs`, or `describe_job` in a
    child process); None: `describe_configs` here (the tuner, which holds the program already)."""
    protocol = protocol or TimingProtocol(rounds=3, calls=5, warmup=2)
    modules, origins = described or describe_configs(ref, space_name, configs, allow_fast_math)
    rem = remeasure_cross_process(ref, space_name, configs, processes, protocol, allow_fast_math, cache_dir,
                                  timeout_s, kernels=True, timeout_note=timeout_note)
    return profile_of(rem, modules, labels, ref, origins)


def describe_configs(ref: str, space_name: str, configs: list, allow_fast_math: bool) -> tuple[list, list]:
    """``(kernels, origins)`` of each configuration of the program `ref`, compiled in this process: its
    optimized module's kernels (`optimized_kernels`, by name) and what user code each came from
    (`graphcost.frontend.hlo.origins.kernel_origins`)."""
    lowered, options, _ = lower_tune_job({"program": ref, "tune_space": space_name, "allow_fast_math": allow_fast_math,
                                          "configs": [list(c) for c in configs]})
    return _described_here(lowered, options)


def _described_here(lowered: list, options: list) -> tuple[list, list]:
    """`describe_configs` of the lowered configurations: each compiled under its options, then read."""
    from graphcost.frontend.hlo.origins import kernel_origins
    from graphcost.frontend.programs.jax_program import compile_lowered, optimized_kernels

    compiled = [compile_lowered(low, opt) for low, opt in zip(lowered, options)]
    return [optimized_kernels(exe) for exe in compiled], [kernel_origins(exe.as_text()) for exe in compiled]


@dataclass(frozen=True)
class KernelInfo:
    """What a profile says of a kernel it did not compile itself (`describe_job`)."""

    kind: str
    fingerprint: str
    parent: str


def describe_job(job: dict) -> dict:
    """`graphcost profile`'s describing process (`graphcost.measure.child_call`): the program `job["program"]`'s
    `job["tune_space"]` space built, the tuned `job["codes"]` checked in it (``{"refused": "<where>: why"}``
    when one is not of it), then the default and those codes described (`describe_configs`):
    ``{"configs", "kernels": [{name: [kind, fingerprint, parent]}], "origins": [{name: [ops, sources]}]}``,
    read back by `described`."""
    from graphcost.frontend.programs.user_program import TuneProgram, load_program
    from graphcost.tuning.space import make_space

    fn, args, name = load_program(job["program"], checked=True)  # make() runs once in this process
    program = TuneProgram(fn, args, name)
    space = make_space(job["tune_space"], program, allow_fast_math=job["allow_fast_math"])
    for c in job["codes"]:
        try:
            space.check(c)
        except ValueError as exc:  # a best.json of another program, or a dict filled in by hand
            return {"refused": f"{job['where']}: {exc}"}
    configs = [[0] * len(space.dims), *job["codes"]]
    lowered, options, _ = _lowered(program, space, configs)
    modules, origins = _described_here(lowered, options)
    return {"configs": configs,
            "kernels": [{n: [k.kind, k.fingerprint, k.parent] for n, k in m.items()} for m in modules],
            "origins": [{n: [list(o.ops), [list(s) for s in o.sources]] for n, o in orig.items()} for orig in origins]}


def described(result: dict) -> tuple[list, list]:
    """`describe_job`'s JSON as `describe_configs` returns it (`KernelInfo`s for the kernels)."""
    from graphcost.frontend.hlo.origins import Origin

    modules = [{n: KernelInfo(*k) for n, k in m.items()} for m in result["kernels"]]
    origins = [{n: Origin(tuple(ops), tuple((str(f), int(line)) for f, line in sources))
                for n, (ops, sources) in orig.items()} for orig in result["origins"]]
    return modules, origins


def profile_default(program, evaluator, space, processes: int, program_ref: str | None, allow_fast_math: bool,
                    cache_dir=None) -> ConfigProfile | None:
    """The default configuration's kernels before the search, timed in the final check's `processes` fresh
    processes, each making a profiled pass (`profile_cross_process`; in this process when the program has no
    reference), its top kernels logged with their share of the call; None (said in the log) when the profiler
    fails: the search does not depend on it."""
    from graphcost.kernels.times import profile_in_process, top_kernels

    try:
        if program_ref:
            prof = profile_cross_process(program_ref, space.name, [space.default()], ["default"], processes,
                                         TimingProtocol(rounds=3, calls=5, warmup=2), allow_fast_math, cache_dir)
        else:
            prof = profile_in_process(program.name, [evaluator.default_exe], list(program.flat_args), ["default"],
                                      [evaluator.default_probe_ns])
    except Exception as exc:  # noqa: BLE001 - the search runs without the profile
        log.warning(f"could not profile the default configuration ({type(exc).__name__}: {exc}); "
                    "searching without its kernel profile")
        return None
    base = prof.configs[0]
    where = f"{prof.processes} processes" if prof.protocol == "cross-process" else "in-process"
    log.info(f"the default: {base.runtime_ns / 1e3:.1f} µs per call ({where}); {len(base.kernels)} kernels cover "
             f"{base.coverage:.0%} of a profiled call; top: {top_kernels(base)}")
    return base
