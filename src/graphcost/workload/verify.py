"""Reproduce a tuning run as its user would: `graphcost verify RUN`.

The final check of `graphcost tune` (`graphcost.tuning.crossproc`) times the compiled default against the compiled
candidates with the collection's protocol: the MINIMUM of a visit's calls, executables called directly. A user
times ``graphcost.compile_with(fn, "RUN/best.json")`` against plain ``jax.jit(fn)``, usually as the MEAN wall time of
a loop of calls, through the functions' own dispatch. This module does the user's measurement, in P fresh
processes (not pinned, no compilation cache, the machine's default threads), and beside it the final check's two
executables in the same interleaved visits, so a disagreement can be traced to its cause:

* ``user``: plain ``jax.jit(fn)`` against ``compile_with(fn, best)``;
* ``executables``: the tuning space's compiled default against the compiled kept configuration (what the
  final check times), called with the flattened arguments.

Each is summarised two ways from the same visits: the mean per call (what a user's ``timeit`` loop reports) and the
minimum per call (the protocol's statistic). A visit makes ``n`` back-to-back calls, ``n`` chosen so the fastest
callable's visit lasts about ``visit_ms`` (or ``calls``, as a user's own ``timeit(number=calls)`` loop); the figure
of a process is the median over its rounds; the reported speedup is the median over processes of ``plain / tuned``
and the range their min..max. A third pair, ``null``, times plain ``jax.jit(fn)`` against a second ``jax.jit(fn)``:
what the timing moves by on its own here. It agrees with the run when the user's mean-per-call speedup lies inside
the run's reported range (its confirmation batch's: timings made after the kept configuration was chosen, never
widened by any other figure of the run), widened by ``tolerance`` or by the null pair's largest deviation over the P
processes, whichever is larger (on the 2-core EPYC VM, plain jit against the default configuration applied, the same
program, moved by up to 13% in one process: BENCHMARKS.md, "graphcost verify on the tune suite"). The false-alarm
rate: were the claim true and the user pair's deviation from it exchangeable with the P null deviations, it would
exceed all of them with probability 1 / (P + 1); the median of P processes deviates less than one process does, so
1 / (P + 1) bounds the rate of "DOES NOT agree" on a true claim (``false_alarm_at_most`` in verify.json). Beyond
`NOISE_CAP` the machine was too busy to tell: the verification is inconclusive, not agreeing.

The worker is ``python -m graphcost.workload.verify JOB.json OUT.json`` (an internal protocol; `verify_run` is the
entry point).
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphcost.guards.atomic import atomic_write_json
from graphcost.measure.interleaved import visit_calls
from graphcost.errors import GraphcostError

# the callables of one process, in the order the worker times them
NOISE_CAP = 0.2  # the null pair's largest deviation beyond which a verification is inconclusive
CALLABLES = ("jit", "jit_again", "compile_with", "default_executable", "kept_executable")
PAIRS = {"user": ("jit", "compile_with"), "executables": ("default_executable", "kept_executable"),
         "null": ("jit", "jit_again")}  # null: plain jax.jit(fn) against a second jax.jit(fn): the timing's own noise


class VerifyError(GraphcostError, ValueError):
    """A tuning run that cannot be verified: its directory or one of its files is missing or wrong (one line naming
    the file and the field)."""


@dataclass(frozen=True)
class VerifyProtocol:
    """How each process times: `rounds` interleaved rounds of one visit per callable, after `warmup` calls of
    each. Every visit makes the same number of calls, as one ``timeit`` loop count does: `calls` when it is set (a
    user's own ``timeit(number=calls)``), else as many as make the fastest callable's visit about `visit_ms` long
    (at least `min_calls`; `graphcost.measure.interleaved.visit_calls`)."""

    rounds: int = 9
    visit_ms: float = 100.0
    min_calls: int = 3
    warmup: int = 3
    seed: int = 0
    calls: int = 0  # > 0: exactly this many calls per visit


def read_run(run: Path, program: str | None = None) -> tuple[dict, str]:
    """(result.json's data, the program reference) of the tuning run `run`; ValueError naming the file and
    field that is missing or wrong. `program` overrides the reference result.json records."""
    result_path = run / "result.json"
    if not run.is_dir():
        raise VerifyError(f"{run}: no such tuning run directory")
    for name in ("result.json", "best.json"):
        if not (run / name).is_file():
            raise VerifyError(f"{run / name}: missing; RUN must be the --out directory of a finished `graphcost tune`")
    try:
        result = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise VerifyError(f"{result_path}: unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(result, dict):
        raise VerifyError(f"{result_path}: expected a JSON object, got {type(result).__name__}")
    def positive(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0

    for key in ("speedup", "speedup_range"):
        value = result.get(key)
        ok = positive(value) if key == "speedup" else (isinstance(value, list) and len(value) == 2
                                                      and all(positive(v) for v in value) and value[0] <= value[1])
        if not ok:
            raise VerifyError(f"{result_path}: field {key!r} is missing or not a " +
                             ("finite positive number" if key == "speedup" else "finite positive (low, high) pair"))
    if program is not None:  # the user's own choice, run as given
        return result, program
    ref = result.get("program")
    if not isinstance(ref, str) or not ref:
        raise VerifyError(f"{result_path}: field 'program' is missing (a run of graphcost.tune(fn, ...) from Python, "
                         "or of an older graphcost): give the program with --program FILE.py:FUNCTION")
    recorded = result.get("program_sha256")
    if not isinstance(recorded, str):
        raise VerifyError(f"{result_path}: field 'program_sha256' is missing (a run of an older graphcost, or an "
                          f"edited file), so nothing shows that {ref} is the program that was tuned; give it with "
                          "--program to run it")
    from graphcost.frontend.programs.user_program import program_sha256

    now = program_sha256(ref)
    if now != recorded:
        raise VerifyError(f"{result_path}: the program it names, {ref}, "
                         + ("cannot be read" if now is None else "is not the file that was tuned (its SHA-256 differs)")
                         + "; give the program with --program to run it anyway")
    return result, ref


def verify_run(run: str | Path, processes: int = 3, protocol: VerifyProtocol = VerifyProtocol(),
               program: str | None = None, tolerance: float = 0.02, timeout_s: float | None = None,
               progress=None) -> dict[str, Any]:
    """Time the run's kept configuration as a user would (module docstring) in `processes` fresh processes and
    compare with the run's claim; writes RUN/verify.json atomically and returns its data.

    The program is first prepared and called once in a child process under deadlines
    (`graphcost.measure.program_check.check_program`: a hang, an abort or a crash is a ProgramError naming it);
    each verifying process then gets `timeout_s` seconds, or with None a deadline scaled from what that check
    measured (`ProgramCheck.worker_timeout`)."""
    from graphcost.measure.cross_process import run_checked
    from graphcost.measure.program_check import check_program
    from graphcost.tuning.result import load_best

    run = _check_arguments(run, processes, protocol, program, tolerance, timeout_s)
    result, ref = read_run(run, program)
    load_best(run / "best.json")  # checked field by field before any process starts
    check = check_program(ref, run=True)
    visits = protocol.rounds * len(CALLABLES)
    scaled, note = check.worker_timeout(len(CALLABLES), (protocol.warmup + 1) * len(CALLABLES)
                                        + visits * max(protocol.min_calls, protocol.calls),
                                        wall_s=0.0 if protocol.calls else visits * protocol.visit_ms / 1e3)
    if timeout_s is not None:
        scaled, note = timeout_s, ""
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="graphcost-verify-") as tmp:
        job = Path(tmp) / "job.json"
        atomic_write_json({"program": ref, "best": str((run / "best.json").resolve()),
                           "protocol": protocol.__dict__}, job)
        for p in range(processes):
            out = Path(tmp) / f"p{p}.json"
            cmd = [sys.executable, "-m", "graphcost.workload.verify", str(job), str(out), str(p)]
            run_checked(cmd, out, scaled, None, ref, f"verifying process {p}", note)
            rows.append(json.loads(out.read_text(encoding="utf-8")))
            if progress is not None:
                progress(p + 1)
    report = summarise(rows, result, ref, tolerance, processes, protocol)
    atomic_write_json(report, run / "verify.json")
    return report


def _check_arguments(run, processes, protocol, program, tolerance, timeout_s) -> Path:
    """`verify_run`'s arguments checked before anything is read; ArgumentError naming the argument. `run` as a Path."""
    from graphcost.guards.bounds import (PROCESSES_MAX, REPEATS_MAX, SECONDS_MAX, ArgumentError, check_int,
                                         check_path, check_real)
    from graphcost.measure.interleaved import CALLS_PER_VISIT_MAX

    run = check_path("run", run)
    check_int("processes", processes, 1, PROCESSES_MAX)
    if not isinstance(protocol, VerifyProtocol):
        raise ArgumentError(f"protocol must be a VerifyProtocol, got {type(protocol).__name__}")
    check_int("protocol.rounds", protocol.rounds, 1, REPEATS_MAX)  # the bounds `graphcost verify`'s options have
    check_real("protocol.visit_ms", protocol.visit_ms, 0.0, 60_000.0)
    check_int("protocol.min_calls", protocol.min_calls, 1, CALLS_PER_VISIT_MAX)
    check_int("protocol.warmup", protocol.warmup, 0, REPEATS_MAX)
    check_int("protocol.calls", protocol.calls, 0, CALLS_PER_VISIT_MAX)
    if program is not None and not isinstance(program, str):
        raise ArgumentError(f"program must be a program reference (a string) or None, got {type(program).__name__}")
    check_real("tolerance", tolerance, 0.0, 1.0)
    if timeout_s is not None:
        check_real("timeout_s", timeout_s, 0.0, SECONDS_MAX, lo_open=True)
    return run


def summarise(rows: list[dict], result: dict, ref: str, tolerance: float, processes: int,
              protocol: VerifyProtocol) -> dict[str, Any]:
    """verify.json's data from the processes' `rows` (each `time_process`'s output) and the run's result.json."""
    mismatch = [r["outputs_differ"] for r in rows if r["outputs_differ"]]
    figures: dict[str, Any] = {}
    for pair, (base, tuned) in PAIRS.items():
        for stat in ("mean", "min"):
            sp = np.array([r[stat][base] / r[stat][tuned] for r in rows], np.float64)  # (P,)
            figures[f"{pair}_{stat}"] = {"median": float(np.median(sp)), "min": float(sp.min()),
                                         "max": float(sp.max()), "per_process": sp.tolist()}
    lo, hi = (float(v) for v in result["speedup_range"])  # the one figure the run reports, and its range
    confirmed = result.get("selected_speedup") is not None  # timed after the choice (older runs: the final check's)
    got = figures["user_mean"]["median"]
    noise = max(abs(v - 1.0) for v in figures["null_mean"]["per_process"])  # the same function against itself
    margin = max(tolerance, noise)
    conclusive = noise <= NOISE_CAP  # beyond it the machine was too busy for the comparison to say anything
    agrees = conclusive and lo * (1 - margin) <= got <= hi * (1 + margin)
    claim = float(result["speedup"])
    return {"program": ref, "processes": processes, "protocol": protocol.__dict__, "tolerance": tolerance,
            "noise": noise, "margin": margin, "conclusive": bool(conclusive),
            "claimed": {"speedup": claim, "speedup_range": [lo, hi], "beats_default": result.get("beats_default"),
                        "confirmed": confirmed},
            "false_alarm_at_most": round(1.0 / (processes + 1), 4),
            "speedup": got, "speedup_range": [figures["user_mean"]["min"], figures["user_mean"]["max"]],
            "agrees": bool(agrees), "outputs_differ": mismatch[0] if mismatch else "", "figures": figures,
            "processes_detail": rows,
            "message": (f"compile_with(fn, best.json) ran {got:.3f}x plain jax.jit(fn) (range "
                        f"{figures['user_mean']['min']:.3f}-{figures['user_mean']['max']:.3f}x over {processes} fresh "
                        f"processes, mean per call); the run claimed {claim:.3f}x (range {lo:.3f}-{hi:.3f}x"
                        + (", timed after it was chosen" if confirmed else ", the final check's") + f"); plain jit against itself moved "
                        f"by up to {noise:.1%} here" + (f", so the margin is {margin:.1%}: " + (
                            "agrees" if agrees else "DOES NOT agree") if conclusive else
                            f", more than {NOISE_CAP:.0%}: TOO NOISY to tell; run it again on a quiet machine"))}


def time_process(job: dict, process: int) -> dict[str, Any]:
    """One verifying process: build the program, the four callables (`CALLABLES`), check the tuned outputs
    against plain jit's, and time them interleaved (`VerifyProtocol`)."""
    import jax

    from graphcost.tuning.apply import compile_for, compile_with
    from graphcost.frontend.programs.user_program import load_program
    from graphcost.tuning.result import TunedConfig, load_best
    from graphcost.frontend.programs.user_program import TuneProgram
    from graphcost.tuning.space import make_space
    from graphcost.tuning.trial import _leaves, compare_outputs

    protocol = VerifyProtocol(**job["protocol"])
    fn, args, _ = load_program(job["program"])
    best = load_best(job["best"])
    leaves = jax.tree_util.tree_leaves(args)
    space = make_space(best.space, TuneProgram(fn, args))
    default = TunedConfig.of(space, space.default())
    t0 = time.perf_counter()
    jit, jit_again, tuned = jax.jit(fn), jax.jit(fn), compile_with(fn, best)
    default_exe, kept_exe = compile_for(fn, args, default), compile_for(fn, args, best)
    calls = {"jit": lambda: jit(*args), "jit_again": lambda: jit_again(*args), "compile_with": lambda: tuned(*args),
             "default_executable": lambda: default_exe(*leaves), "kept_executable": lambda: kept_exe(*leaves)}
    ref, names = _leaves(jax.block_until_ready(calls["jit"]()))  # the first calls compile
    got, _ = _leaves(jax.block_until_ready(calls["compile_with"]()))
    differ = compare_outputs(got, ref, 1e-3, 1e-5, names)
    compile_s = time.perf_counter() - t0
    for call in calls.values():
        for _ in range(protocol.warmup):
            jax.block_until_ready(call())
    one = min(_per_call(calls["jit"], 1)[0], _per_call(calls["compile_with"], 1)[0])  # seconds
    n = protocol.calls or visit_calls(protocol.visit_ms / 1e3, one, protocol.min_calls)
    rng = np.random.default_rng(protocol.seed + 1000 * process)
    per_round: dict[str, list[tuple[float, float]]] = {k: [] for k in CALLABLES}  # per round: (mean, min) s/call
    for _ in range(protocol.rounds):
        for j in rng.permutation(len(CALLABLES)):
            name = CALLABLES[j]
            per_round[name].append(_per_call(calls[name], n))
    mean = {k: float(np.median([m for m, _ in v])) * 1e9 for k, v in per_round.items()}
    low = {k: float(np.median([m for _, m in v])) * 1e9 for k, v in per_round.items()}
    return {"process": process, "calls_per_visit": n, "compile_s": round(compile_s, 3), "mean": mean, "min": low,
            "outputs_differ": differ, "loadavg": list(os.getloadavg())}


def _per_call(call, n: int) -> tuple[float, float]:
    """(mean, min) wall seconds per call over `n` back-to-back calls, each blocked on."""
    import jax

    times = []
    start = time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - t0)
    return (time.perf_counter() - start) / n, min(times)


if __name__ == "__main__":  # the worker: JOB.json OUT.json PROCESS
    from graphcost.frontend.programs.user_program import ProgramError
    from graphcost.measure.cross_process import labelled

    job_path, out_path, index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    try:
        data = time_process(job, index)
    except (ProgramError, ValueError) as exc:  # the program no longer loads, or best.json no longer fits it
        sys.exit(f"error: {labelled(' '.join(str(exc).split()), job['program'])}")
    atomic_write_json(data, Path(out_path))
