"""The final check of `graphcost tune`: the best measured configurations re-measured against the
default by the cross-process protocol (`graphcost.tuning.crossproc`), and the answer picked.

The best of them is accepted only if it is faster than the default in EVERY process by at least
`min_gain`; when none of the first `finalists` is, the next ones get their own re-measurement before
the default is kept. The agreement of in-search and final speedups is reported (`search_vs_final`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, cast

import numpy as np

from graphcost.measure.interleaved import TimingProtocol
from graphcost.tuning.crossproc import Remeasurement
from graphcost.tuning.result import TunedConfig, TuneResult
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import Codes, Space
from graphcost.tuning.trial import OK, Evaluator, Trial, pooled_ratio

log = logging.getLogger(__name__)


def finish(program: TuneProgram, space: Space, evaluator: Evaluator, trials: list[Trial], protocol: TimingProtocol,
           processes: int, finalists: int, min_gain: float, program_ref: str | None, allow_fast_math: bool,
           out: Path | None, progress: bool) -> TuneResult:
    """Re-measure the best measured configurations against the default and pick the answer.

    The `finalists` best (by in-search ratio: the geometric mean of each configuration's timings over
    all strategies, racing's included) are re-measured first; when none of them beats the
    default in every process, the next `finalists` get their own re-measurement before the default
    is kept, so one noisy in-search figure does not throw a real win away."""
    ok = [t for t in trials if t.status == OK]
    timings: dict[Codes, list[float]] = {}  # every timing of each configuration, over all strategies
    for t in ok:
        if "same_executable_as" in t.extra:  # a copy of another trial's executable: that one is re-measured
            continue
        timings.setdefault(t.codes, []).extend(t.extra.get("ratios", [cast(float, t.ratio)]))
    estimate = {c: pooled_ratio(r) for c, r in timings.items()}  # in-search ratio: geometric mean of its timings
    ranked = sorted((c for c, r in estimate.items() if r < 1.0), key=estimate.__getitem__)
    default = space.default()
    if not ranked:
        return TuneResult(TunedConfig.of(space, default), 1.0, (1.0, 1.0), False,
                          float(np.median([t.default_ns for t in ok])) if ok else float("nan"), trials, {},
                          "no measured configuration was faster than the default: keep the default")
    in_search = {c: 1.0 / r for c, r in estimate.items()}
    checked: list[tuple[Codes, float, float, float]] = []  # (codes, median, min, max) of every re-measured one
    remeasures, default_ns = [], []
    for batch in (ranked[:finalists], ranked[finalists:2 * finalists]):
        if not batch or (checked and any(lo >= 1.0 + min_gain for _, _, lo, _ in checked)):
            break
        if checked:  # every batch is announced: the second one decides when it runs
            log.info(f"none of the first {len(checked)} re-measured candidates beat the default by "
                     f"{min_gain:.0%} in every process: the next {len(batch)} get their own re-measurement")
        rem = _remeasure(program, space, evaluator, [default] + batch, processes, protocol, program_ref,
                         allow_fast_math, out)
        sp = rem.speedups  # (P, len(batch))
        checked += [(c, float(np.median(sp[:, k])), float(sp[:, k].min()), float(sp[:, k].max()))
                    for k, c in enumerate(batch)]
        remeasures.append(rem.to_json())
        default_ns.append(float(np.median(rem.runtime_ns[:, 0])))
    remeasure = remeasures[0] if len(remeasures) == 1 else {  # one list entry per re-measured candidate, as for one batch
        **remeasures[0], **{k: remeasures[0][k] + remeasures[1][k] for k in ("speedup_median", "speedup_min", "speedup_max")},
        "batches": remeasures}
    agreement = search_vs_final([(in_search[c], med) for c, med, _, _ in checked])
    winners = [item for item in checked if item[2] >= 1.0 + min_gain]
    what = f"{processes} {'processes' if program_ref else 'in-process passes'}"
    if not winners:
        codes, med, lo, hi = max(checked, key=lambda item: item[1])
        return TuneResult(TunedConfig.of(space, default), 1.0, (1.0, 1.0), False, float(np.median(default_ns)), trials,
                          remeasure, f"nothing beat the default beyond the noise: the best of {len(checked)} "
                          f"re-measured candidates ran {med:.3f}x (range {lo:.3f}-{hi:.3f}x over {what}, needed "
                          f">= {1 + min_gain:.2f}x in every one): keep the default", search_vs_final=agreement)
    codes, med, lo, hi = max(winners, key=lambda item: item[1])
    return TuneResult(TunedConfig.of(space, codes), med, (lo, hi), True, float(np.median(default_ns)), trials,
                      remeasure, f"{med:.3f}x faster than the default (range {lo:.3f}-{hi:.3f}x over {what})",
                      search_vs_final=agreement)


def _remeasure(program: TuneProgram, space: Space, evaluator: Evaluator, configs: list[Codes], processes: int,
               protocol: TimingProtocol, program_ref: str | None, allow_fast_math: bool, out: Path | None,
               kernels: bool = False, as_user: bool = False) -> Remeasurement:
    """The final check of `configs` (the default first): fresh processes when the program has a file;
    with `kernels`, a profiled pass after the timings (`Remeasurement.profiles`); with `as_user`, the program
    timed as its user runs it (`crossproc.user_calls`), else the executables."""
    from graphcost.tuning.crossproc import remeasure_cross_process, remeasure_in_process

    log.info(f"re-measuring {len(configs) - 1} candidate(s) against the default in {processes} "
             f"{'processes' if program_ref else 'passes (in-process: the program has no file reference)'}")
    if program_ref:
        cache = (out / "jax_cache") if out is not None else None
        timeout, note = process_deadline(evaluator, len(configs), protocol, kernels)
        return remeasure_cross_process(program_ref, space.name, configs, processes, protocol, allow_fast_math, cache,
                                       timeout=timeout, kernels=kernels, timeout_note=note, as_user=as_user)
    return remeasure_in_process(evaluator, configs, processes, protocol, kernels=kernels, as_user=as_user)


def process_deadline(evaluator: Evaluator, configs: int, protocol: TimingProtocol, kernels: bool) -> tuple[float, str]:
    """``(seconds, why)``: the deadline of one final-check process (`measure.program_check.worker_deadline`, the rule
    of rank's and profile's) from this run's own figures: the default's compile time (for the rebuild, taken as
    its preparation, and for each configuration's compile) and its measured time per call, for the protocol's
    calls of every configuration (a profiled pass: 20 more each) and, with visits sized by their length, that
    length for every visit."""
    from graphcost.measure.program_check import worker_deadline

    compile_s = float(getattr(evaluator, "default_compile_s", 0.0))
    call_s = float(getattr(evaluator, "default_probe_ns", 0.0)) * 1e-9
    sizing = 1 if protocol.visit_ms > 0 else 0  # the timed call that sizes the visits
    calls = configs * (protocol.rounds * protocol.calls + protocol.warmup + sizing + (20 if kernels else 0))
    wall_s = configs * protocol.rounds * protocol.visit_ms / 1e3  # visits sized by their length
    return worker_deadline(compile_s, compile_s, call_s, configs, calls, wall_s, source="this run's")


def search_vs_final(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    """Agreement of in-search and final-check speedups: the pairs and their Spearman correlation
    (None with fewer than two pairs or no spread on either side)."""
    from graphcost.measure.interleaved import spearman

    rho = None
    if len(pairs) >= 2 and len({a for a, _ in pairs}) > 1 and len({b for _, b in pairs}) > 1:
        rho = round(float(spearman(np.array([a for a, _ in pairs]), np.array([b for _, b in pairs]))), 4)
    return {"spearman": rho, "candidates": [{"in_search": round(a, 4), "final": round(b, 4)} for a, b in pairs]}
