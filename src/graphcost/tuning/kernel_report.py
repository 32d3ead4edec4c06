"""The tuner's kernel view of a run: where the default's time goes before the search, which kernels the
kept configuration made faster, and every profiled trial's kernels.

* Before the search, `profile_default` times the default configuration in the final check's P fresh
  processes and makes a profiled pass in each (`graphcost.tuning.crossproc.profile_cross_process`;
  in this process when the program has no file reference), and the run logs its top kernels
  with their share of the call.
* After the final check, the default, the kept configuration and its ablations are timed again
  with a profiled pass (`graphcost.tuning.ablation`); `kernels_summary` pairs the default's top
  kernels with the kept configuration's (`profile.compare`: by fingerprint, then name).
* Every measured trial carries its own kernels (`trial.Evaluator(profile_kernels=True)`);
  `kernels_csv` writes them beside trials.csv, one row per (trial, kernel).
"""

from __future__ import annotations

import csv
import io
import logging
from typing import Any

from graphcost.kernels.times import ConfigProfile, ProgramProfile, compare, top_kernels
from graphcost.tuning.trial import KERNEL_ROW, Trial

log = logging.getLogger(__name__)

TOP = 10  # kernels listed in result.json


def profile_default(program, evaluator, space, processes: int, program_ref: str | None, allow_fast_math: bool,
                    cache_dir=None) -> ConfigProfile | None:
    """The default configuration's kernels before the search (module docstring), logged; None (said
    in the log) when the profiler fails: the search does not depend on it."""
    from graphcost.measure.interleaved import TimingProtocol
    from graphcost.kernels.times import profile_in_process
    from graphcost.tuning.crossproc import profile_cross_process

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


def _row(k, profile: ConfigProfile) -> dict[str, Any]:
    return {"name": k.name, "kind": k.kind, "self_ns": round(k.self_ns, 1), "share": round(profile.share(k), 4),
            "executions": k.executions, "leaf": k.leaf, "fingerprint": k.fingerprint[:16]}


def kernels_summary(before: ConfigProfile | None, final: ProgramProfile | None, top: int = TOP) -> dict[str, Any] | None:
    """result.json's ``kernels``: ``default`` (the profile before the search: runtime, coverage, top
    kernels) and, when a configuration was kept, ``kept``: the final profile's top kernels of the
    default beside the same kernels in the kept configuration (``default_ns``, ``kept_ns``,
    ``speedup``; a kernel only one side has gets null on the other). None without any profile."""
    if before is None and final is None:
        return None
    out: dict[str, Any] = {}
    if before is not None:
        out["default"] = {"runtime_ns": round(before.runtime_ns, 1), "wall_ns": round(before.wall_ns, 1),
                          "coverage": round(before.coverage, 4), "top": [_row(k, before) for k in before.kernels[:top]]}
    if final is not None and len(final.configs) > 1:
        base, kept = final.configs[0], final.configs[1]
        pairs = []
        for d, t in compare(base, kept)[:top]:
            k = d or t
            assert k is not None  # compare pairs at least one side
            pairs.append({"name": k.name, "kind": k.kind, "kept_name": t.name if t else None,
                          "default_ns": round(d.self_ns, 1) if d else None, "kept_ns": round(t.self_ns, 1) if t else None,
                          "speedup": round(d.self_ns / t.self_ns, 4) if d and t and t.self_ns > 0 else None})
        out["kept"] = {"runtime_ns": round(kept.runtime_ns, 1), "default_runtime_ns": round(base.runtime_ns, 1),
                       "coverage": round(kept.coverage, 4), "processes": final.processes, "protocol": final.protocol,
                       "top": pairs}
    return out


def faster_kernels_line(summary: dict[str, Any] | None, top: int = 3) -> str:
    """One console line on the largest kernels ('' without a kept configuration's profile): those the kept
    configuration made faster (default -> kept time per call), those it no longer has (their work moved
    into other kernels: a fusion switched off, a library call replaced) and the new ones it has instead."""
    if not summary or "kept" not in summary:
        return ""
    rows = summary["kept"]["top"]

    def us(ns: float) -> str:
        return f"{ns / 1e3:.1f} µs"

    faster = sorted((r for r in rows if r["default_ns"] is not None and r["kept_ns"] is not None
                     and r["kept_ns"] < r["default_ns"]), key=lambda r: r["kept_ns"] - r["default_ns"])[:top]
    gone = [r for r in rows if r["kept_ns"] is None][:top]
    new = [r for r in rows if r["default_ns"] is None][:top]
    parts = []
    if faster:
        parts.append("faster: " + ", ".join(f"{r['name']} ({r['kind']}) {us(r['default_ns'])} -> {us(r['kept_ns'])}"
                                            for r in faster))
    if gone:
        parts.append("not in the kept configuration: " + ", ".join(f"{r['name']} ({r['kind']}) {us(r['default_ns'])}"
                                                                  for r in gone))
    if new:
        parts.append("new in it: " + ", ".join(f"{r['name']} ({r['kind']}) {us(r['kept_ns'])}" for r in new))
    return "kernels, default -> kept: " + "; ".join(parts) if parts else ""


def kernels_csv(trials: list[Trial]) -> str:
    """One row per (profiled trial, kernel): strategy, number, status, then `KERNEL_ROW`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["strategy", "number", "status", *KERNEL_ROW])
    for t in trials:
        for row in t.extra.get("kernels", ()):
            w.writerow([t.strategy, t.number, t.status, *row])
    return buf.getvalue()
