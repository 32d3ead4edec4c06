"""The confirmation batch: the kept configuration timed again after it was chosen (`confirmation`, the speedup
a run reports), and what it owes to each of its changes: each dropped in turn, re-measured.

For a kept configuration c* whose changed dimensions are D = {i : c*_i ≠ 0} (a flag set off its
default, a tensor moved off its layout), the ablated configuration c⁻ⁱ is c* with dimension i back
at its default. The default, c* and every c⁻ⁱ are timed together in each of P fresh processes (the ablation
batch, the search's protocol, `graphcost.tuning.crossproc`), and per process p

    s_p(c) = T_p(default) / T_p(c),

T_p the mean wall time per call (the median over the protocol's rounds of each round's mean, `graphcost.measure.
interleaved`): what a user's own ``timeit`` of the tuned function against plain ``jax.jit`` measures. The final
check that chose the configuration ranks by the per-round minimum instead (less noisy); the minimum overstated
what a user then timed (a kept 1.075x by the minimum ran 0.989x by the mean), so the figure the run reports is
the mean's.

Per change i the report gives the speedup kept without it, median_p s_p(c⁻ⁱ) with its range over
the processes, and its share of the gain

    share_i = 1 − log s(c⁻ⁱ) / log s(c*)        (1: the whole gain is this change; ≤ 0: none of it),

and says it *carries* the speedup when c⁻ⁱ is slower than c* in every process
(max_p s_p(c⁻ⁱ) < min_p s_p(c*)): dropping it costs more than the processes' noise. Shares need not
add to 1: changes interact (one flag may only matter with another).

A configuration with more than `ABLATION_MAX` changes is not ablated (the result says so): each
change costs one more compile and timing in every process.

The figure the run reports (`confirmation`) is the median over processes of s_p(c*). Where the processes
disagree, more are timed (the default and c* only, `CONFIRM_STEP` at a time, up to `most`: 9) until the
median's standard error, estimated as 1.2533 · sd_p(log s_p) / √P, is at most `CONFIRM_SE`: half the ±3% within
which a user's own timing of the program should find the reported speedup. Its interval is the 95% prediction
interval of one more process's speedup (Student's t on the logs, centred on the median):

    log s ± t_{0.975, P−1} · sd_p(log s_p) · √(1 + 1/P),

what a fresh timing of the same pair should fall inside, not the processes' min..max (which covers a new
process only with probability (P − 1) / (P + 1)).

The confirmation times the default and c* alone, in processes of its own, as a user runs and times them rather than
as the search does: plain ``jax.jit(fn)`` against ``compile_with(fn, c*)`` on the program's own arguments
(`graphcost.tuning.crossproc.user_calls`; in `graphcost verify`'s processes on the held-out programs the
executables' pair and this one, timed in the same visits, differed by 9.7-15.8% on one program and 5.3-8.9% on a
suite one, one way in every process), with `confirmation_protocol`: each visit lasts about `CONFIRM_VISIT_MS`
(``timeit``'s loops last at least 0.2 s; `graphcost.measure.interleaved`, step 3), over at least `CONFIRM_ROUNDS`
rounds (a newcomer's own timing: 15 rounds of 100 calls). With the search's 5 rounds of 10 calls, one held-out
program's interval from 9 processes was 3.1-6.2x (`benchmarks/history/verify-2026-12-07-short-visits.md`); by this
protocol, 3.7-4.4x (`benchmarks/history/verify-2026-12-07-executables-confirmation.md`). With 9 rounds of 100 ms
visits beside the ablation, the processes of two of three suite programs still spread 3x wider (sd of the log
speedup) than the user's own timing of the same runs. The ablation, which needs many configurations in each
process, keeps the search's shorter protocol: its figures are its own, labelled so, and never the reported one.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np

from graphcost.measure.interleaved import TimingProtocol
from graphcost.tuning.defaults import CONFIRM_PROCESSES
from graphcost.tuning.space import Codes, Space

log = logging.getLogger(__name__)

ABLATION_MAX = 32  # changes ablated one by one at most (the flag space has fewer dimensions)
CONFIRM_SE = 0.015  # the reported speedup's relative standard error to reach by adding processes (docstring)
CONFIRM_STEP = 2  # processes added at a time while the standard error is above CONFIRM_SE
CONFIRM_ROUNDS = 15  # interleaved rounds per process of the confirmation, at least
CONFIRM_VISIT_MS = 200.0  # how long one visit of a configuration lasts in the confirmation
CONFIRM_MIN_CALLS = 3  # calls per visit at least (a slow program's visit lasts longer)


def confirmation_protocol(protocol: TimingProtocol) -> TimingProtocol:
    """The confirmation batch's timing protocol: the search's, with visits sized by their length (module
    docstring)."""
    return replace(protocol, rounds=max(protocol.rounds, CONFIRM_ROUNDS), calls=CONFIRM_MIN_CALLS,
                   visit_ms=CONFIRM_VISIT_MS)


def ablated_configs(space: Space, kept: Codes) -> list[tuple[str, Any, Codes]]:
    """Per change of `kept`: (dimension's parameter name, its value in `kept`, `kept` without it)."""
    out = []
    for i in (i for i, c in enumerate(kept) if c):
        d = space.dims[i]
        without = tuple(0 if j == i else c for j, c in enumerate(kept))
        out.append((d.param_name, d.param_values[kept[i]], without))
    return out


def ablation_report(labels: list[tuple[str, Any]], speedups: np.ndarray, protocol: str) -> dict[str, Any]:
    """The ablation of one kept configuration (module docstring).

    labels: per ablated configuration (dimension, value); speedups: (P, 1 + A) s_p of the kept
    configuration (column 0) and of each ablated one, per process."""
    sp = np.asarray(speedups, np.float64)
    kept = sp[:, 0]
    kept_med = float(np.median(kept))
    rows = []
    for (dim, value), col in zip(labels, sp[:, 1:].T):
        med = float(np.median(col))
        share = 1.0 - np.log(med) / np.log(kept_med) if kept_med > 0 and abs(np.log(kept_med)) > 1e-12 else float("nan")
        rows.append({"dimension": dim, "value": value, "speedup_without": round(med, 4),
                     "range": [round(float(col.min()), 4), round(float(col.max()), 4)],
                     "share_of_gain": round(float(share), 4), "carries": bool(col.max() < kept.min())})
    rows.sort(key=lambda r: r["speedup_without"])
    return {"kept_speedup": round(kept_med, 4), "kept_range": [round(float(kept.min()), 4), round(float(kept.max()), 4)],
            "processes": int(sp.shape[0]), "protocol": protocol, "changes": rows}


def skipped(reason: str) -> dict[str, Any]:
    """The ablation entry of a run that made none, and why."""
    return {"skipped": reason, "changes": []}


def summary_line(ablation: dict[str, Any], top: int = 4) -> str:
    """One line for the console: which changes carry the speedup, and how many do nothing."""
    if ablation.get("skipped"):
        return f"ablation: {ablation['skipped']}"
    rows = ablation["changes"]
    carry = [r for r in rows if r["carries"]]
    text = ", ".join(f"{r['dimension']}={r['value']} (without it {r['speedup_without']:.3f}x)" for r in carry[:top])
    rest = len(rows) - len(carry)
    n = ablation["processes"]
    return (f"ablation, in {n} process{'es' if n != 1 else ''} where the kept configuration ran "
            f"{ablation['kept_speedup']:.3f}x (the ablation's own timing, not the reported figure): "
            + (f"carried by {text}" if carry else "no single change carries it (they act together)")
            + (f"; {rest} of {len(rows)} change(s) within the noise" if rest else ""))


def confirmation(speedups: np.ndarray, protocol: str) -> dict[str, Any]:
    """The kept configuration's speedup on the confirmation batch: timings that did not choose it.

    The final check keeps the best of several noisy candidates, so its figure of the one it keeps is biased up
    (the winner's curse: the maximum of noisy estimates overstates the true maximum); the batch timed after the
    choice is not. speedups: (P,) s_p of the kept configuration in each of the batch's processes."""
    from scipy.stats import t as student_t

    sp = np.asarray(speedups, np.float64)
    centre = float(np.median(sp))
    n = sp.shape[0]
    half = float(student_t.ppf(0.975, n - 1) * np.log(sp).std(ddof=1) * np.sqrt(1 + 1 / n)) if n >= 2 else 0.0
    return {"speedup": round(centre, 4), "range": [round(centre * float(np.exp(-half)), 4),
                                                   round(centre * float(np.exp(half)), 4)],
            "processes": int(n), "protocol": protocol, "per_process": [round(float(v), 4) for v in sp]}


def median_standard_error(speedups: np.ndarray) -> float:
    """The relative standard error of the median of (P,) per-process speedups: 1.2533 · sd(log s) / √P
    (the normal approximation; inf below 2 processes)."""
    logs = np.log(np.asarray(speedups, np.float64))
    return float(1.2533 * logs.std(ddof=1) / np.sqrt(logs.shape[0])) if logs.shape[0] >= 2 else float("inf")


def ablate_kept(program, space: Space, evaluator, kept: Codes, processes: int, protocol, program_ref: str | None,
                allow_fast_math: bool, out, ablation: bool = True, kernels: bool = True,
                most: int = CONFIRM_PROCESSES):
    """After the choice (module docstring): the confirmation, [default, kept] in `processes` fresh processes (more
    while they disagree) by `confirmation_protocol`, with a profiled pass when `kernels`; then the ablation,
    [default, kept, each ablation of kept] in `processes` more by the search's `protocol`. The confirmation times at
    most `most` processes (passes). Returns (`confirmation`
    of the kept configuration, ablation report or None, `ProgramProfile` of the default and the kept configuration
    or None)."""
    from graphcost.tuning.final_check import _remeasure

    ablated = ablated_configs(space, kept) if ablation else []
    report = None
    if len(ablated) > ABLATION_MAX:
        report, ablated = skipped(f"{len(ablated)} changes, more than the {ABLATION_MAX} ablated one by one"), []
    pair = [space.default(), kept]
    log.info("confirming the kept configuration against the default on timings that did not choose it")
    timing = confirmation_protocol(protocol)
    rem = _remeasure(program, space, evaluator, pair, min(processes, most), timing, program_ref, allow_fast_math, out,
                     kernels=kernels, as_user=True)
    kept_sp = rem.mean_speedups[:, 0]  # (P,) by the mean per call (module docstring)
    while kept_sp.shape[0] < most and (se := median_standard_error(kept_sp)) > CONFIRM_SE:
        more = min(CONFIRM_STEP, most - kept_sp.shape[0])
        log.info(f"the confirmation's processes disagree (standard error {se:.1%} of the speedup): {more} more")
        extra = _remeasure(program, space, evaluator, pair, more, timing, program_ref, allow_fast_math, out,
                           as_user=True)
        kept_sp = np.concatenate([kept_sp, extra.mean_speedups[:, 0]])
    confirmed = {**confirmation(kept_sp, rem.protocol),
                 "timing": {"rounds": timing.rounds, "visit_ms": timing.visit_ms, "min_calls": timing.calls}}
    if ablated:
        log.info(f"ablation: the kept configuration without each of its {len(ablated)} change(s)")
        abl = _remeasure(program, space, evaluator, [*pair, *(c for _, _, c in ablated)], processes, protocol,
                         program_ref, allow_fast_math, out)
        report = ablation_report([(d, v) for d, v, _ in ablated], abl.mean_speedups, abl.protocol)
    profile = None
    if kernels and rem.profiles:
        from graphcost.frontend.programs.jax_program import optimized_kernels
        from graphcost.kernels.times import profile_of

        exes = [evaluator.default_exe, evaluator.checked.get(kept) or evaluator.compile(kept)]
        modules = [optimized_kernels(e) for e in exes]
        profile = profile_of(rem, modules, ["default", "kept"], program.name)  # levels: over all its configurations
    return confirmed, report, profile

