"""The kernel section of a kernel collection's data card: coverage, the profiler's overhead, agreement.

For a collection made with ``graphcost collect --kernels`` (records in ``OUT/kernels/``):

* **coverage**: per program, the median over its configurations of the share of a profiled call's
  wall time inside leaf kernels (`graphcost.kernels.records.coverage`);
* **profiler overhead**: per program, the median over configurations of the profiled call's wall
  time over the timed (unprofiled) runtime, both medians over processes;
* **per-kernel agreement between processes**: per (program, configuration), the mean pairwise
  Spearman correlation across its leaf kernels of the processes' self times; the median over
  programs of their median;
* **independent repeat** (a second collection of some programs with the same parameters, e.g.
  ``OUT_repeat``): per common (program, configuration), the Spearman correlation across leaf kernels
  (matched by name) of the two collections' kernel labels; the median over programs.
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np

from graphcost.kernels.records import coverage
from graphcost.kernels.table import kernel_record_path
from graphcost.measure.interleaved import spearman


def _records(root: Path) -> dict[str, dict[str, np.ndarray]]:
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    out = {}
    for name, entry in manifest.get("graphs", {}).items():
        path = kernel_record_path(root, name, entry)  # a split or name that is a path: one-line ValueError
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                out[name] = {k: z[k] for k in ("occ_config", "occ_name", "occ_leaf", "occ_runtime_ns", "occ_samples_ns",
                                               "profile_wall_ns", "program_runtime_ns")}
    return out


def _process_agreement(r: dict) -> float:
    values = []
    for c in np.unique(r["occ_config"]):
        rows = (r["occ_config"] == c) & r["occ_leaf"]
        s = r["occ_samples_ns"][rows]
        if len(s) >= 3 and s.shape[1] >= 2:
            pairs = [spearman(s[:, i], s[:, j]) for i, j in combinations(range(s.shape[1]), 2)]
            values.append(np.nanmean(pairs))
    return float(np.nanmedian(values)) if values else float("nan")


def repeat_agreement(first: dict, second: dict) -> dict[str, float]:
    """Per program in both: the median over common configurations of the Spearman correlation across
    leaf kernels (matched by name) of the two collections' kernel labels."""
    out = {}
    for name in sorted(set(first) & set(second)):
        a, b = first[name], second[name]
        values = []
        for c in np.intersect1d(a["occ_config"], b["occ_config"]):
            ta = {n: t for n, t, ok in zip(a["occ_name"][a["occ_config"] == c], a["occ_runtime_ns"][a["occ_config"] == c],
                                          a["occ_leaf"][a["occ_config"] == c]) if ok}
            tb = {n: t for n, t in zip(b["occ_name"][b["occ_config"] == c], b["occ_runtime_ns"][b["occ_config"] == c])}
            common = sorted(set(ta) & set(tb))
            if len(common) >= 3:
                values.append(spearman(np.array([ta[n] for n in common]), np.array([tb[n] for n in common])))
        if values:
            out[name] = float(np.nanmedian(values))
    return out


def kernel_stats(root: str | Path, repeat: str | Path | None = None) -> dict:
    """The figures of the module docstring for the kernel collection in `root` (and its repeat)."""
    root = Path(root)
    records = _records(root)
    cov = {n: float(np.median(coverage(r))) for n, r in records.items()}
    overhead = {n: float(np.median(np.median(r["profile_wall_ns"], 1) / np.median(r["program_runtime_ns"], 1)))
                for n, r in records.items()}
    agreement = {n: _process_agreement(r) for n, r in records.items()}
    out = {"programs": len(records), "coverage_median": float(np.median(list(cov.values()))) if cov else float("nan"),
           "coverage_share_ge_0.9": float(np.mean([v >= 0.9 for v in cov.values()])) if cov else float("nan"),
           "overhead_median": float(np.median(list(overhead.values()))) if overhead else float("nan"),
           "process_agreement_median": float(np.nanmedian(list(agreement.values()))) if agreement else float("nan"),
           "coverage": cov, "overhead": overhead, "process_agreement": agreement}
    if repeat is not None and Path(repeat, "manifest.json").exists():
        rep = repeat_agreement(records, _records(Path(repeat)))
        out["repeat_agreement"] = rep
        out["repeat_agreement_median"] = float(np.nanmedian(list(rep.values()))) if rep else float("nan")
    return out


def kernel_card_lines(root: Path, repeat: Path | None = None) -> list[str]:
    """The card's kernel section (markdown lines)."""
    s = kernel_stats(root, repeat)
    lines = ["## Kernels", "",
             "Every configuration's compiled kernels were timed too: each measuring process made a profiled pass "
             "after its timed calls (JAX's profiler: one event per executed thunk; loops resolved so a loop keeps "
             "only what it adds to its body; `graphcost.measure.kernel_profile`), and each program has a "
             "kernel record `kernels/SPLIT/PROGRAM.npz` (`graphcost.kernels.records`). "
             "`graphcost data kernels` builds the TILE-schema kernel dataset from them.", "",
             f"* programs with a kernel record: {s['programs']}",
             f"* coverage (share of a profiled call inside leaf kernels, median over configurations): median "
             f"{s['coverage_median']:.3f}; programs with coverage >= 0.9: {s['coverage_share_ge_0.9']:.0%}",
             f"* profiler overhead (profiled call / timed runtime): median {s['overhead_median']:.3f}",
             f"* per-kernel agreement between the processes (Spearman across a configuration's leaf kernels): "
             f"median {s['process_agreement_median']:.3f}"]
    if "repeat_agreement" in s and repeat is not None:
        lines.append(f"* independent repeat ({Path(repeat).name}, {len(s['repeat_agreement'])} programs): per-kernel "
                     f"Spearman of the two collections' labels, median {s['repeat_agreement_median']:.3f}")
    return lines + [""]
