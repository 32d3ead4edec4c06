"""A program's kernels as a report: where the default's time goes, which kernels a kept configuration made
faster, and every profiled configuration's kernels as rows and as a table.

* `kernel_rows`: a `ConfigProfile`'s kernels as JSON rows (`KERNEL_ROW`), what a tuning trial stores;
  `kernels_csv` lays rows of several owners (a tuning run's trials: `graphcost.tuning.result`) out as one
  CSV table, one row per (owner, kernel).
* `kernels_summary` pairs the default's top kernels before a search with the kept configuration's after it
  (`graphcost.kernels.times.compare`: by fingerprint, then name): result.json's ``kernels``;
  `faster_kernels_line` says it in one console line.

The profiles come from `graphcost.kernels.times` (profiled passes, in fresh processes or in this one).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from graphcost.kernels.times import ConfigProfile, ProgramProfile, compare

TOP = 10  # kernels listed in result.json


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


KERNEL_ROW = ("name", "kind", "fingerprint", "self_ns", "executions", "leaf")


def kernel_rows(config: ConfigProfile) -> list[list]:
    """A `ConfigProfile`'s kernels as JSON rows (`KERNEL_ROW`), largest first: what a trial stores."""
    return [[k.name, k.kind, k.fingerprint[:16], round(k.self_ns, 1), k.executions, k.leaf] for k in config.kernels]


def kernels_csv(head: Sequence[str], owners: Iterable[tuple[Sequence, Iterable[Sequence]]]) -> str:
    """One row per (owner, kernel): the owner's `head` columns, then `KERNEL_ROW`; `owners`: each owner's
    values of `head` and its `kernel_rows`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*head, *KERNEL_ROW])
    for values, rows in owners:
        for row in rows:
            w.writerow([*values, *row])
    return buf.getvalue()
