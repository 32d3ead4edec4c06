"""Where does a flag model's ranking fall apart between the zoo and the tune suite? Kendall τ of one
tile run within the near-default configurations (1-3 flags off the default) and within the farther
ones, on the zoo's held-out families and on the tune suite's flag tables (issue 33).

    python benchmarks/lab/diagnose_zero_shot_subsets.py [--run RUN] [--json OUT.json]

The two pools are sampled differently: the zoo's configurations are half the default with 1-3 flags
changed and half a uniformly random value of EVERY flag (`graphcost.frontend.programs.flags.flag_configs`);
the tune suite's tables are half 1-3 changes and half `Space.sample`, which leaves each flag at its
default with probability 1 - ρ, ρ ~ U(0, 1), so its far half spreads from near the default to far
from it. τ over all configurations mixes the two halves; this reads each half on its own.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks" / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite

NEAR = 3  # flags off the default in the near-default half of both pools


def taus(scores: np.ndarray, label: np.ndarray, moved: np.ndarray) -> dict[str, float]:
    """Kendall τ over all configurations, the near-default ones and the farther ones (higher label = slower)."""
    from scipy.stats import kendalltau

    near = moved <= NEAR
    return {"all": float(kendalltau(scores, label).statistic),
            "near-default": float(kendalltau(scores[near], label[near]).statistic),
            "farther": float(kendalltau(scores[~near], label[~near]).statistic)}


def zoo(run: Path) -> dict:
    """The run on the flag zoo's validation and test families (never trained on)."""
    import bench_real as br
    from graphcost.data.io.packed import shipped_data_dir
    from graphcost.inference.ensemble import load_predictor

    pred = load_predictor([run], tta=0, device="cpu")
    out: dict[str, dict] = {}
    for r in br.load_records(shipped_data_dir("cpu_zoo_flags")):
        if r.split == "train":
            continue
        prepared = br._prepared(r.path, dedup=False)
        scores = np.full(len(r.label), np.nan)
        scores[prepared.config_source_index] = pred.score(prepared)  # back to the file's order
        out.setdefault(r.split, {})[r.name] = taus(scores, r.label, r.moved)
    return out


def tune_suite(run: Path, tables: Path) -> dict:
    """The run on the tune suite's flag tables (ratio = runtime / default: higher = slower)."""
    import bench_tune as bt
    from graphcost.tuning.scoring import GraphModelScorer

    out = {}
    for path in sorted(tables.glob("*-flags.json")):
        t = bt.suite_table(path)
        moved = np.array([sum(c != 0 for c in codes) for codes in t.codes])
        scores = GraphModelScorer([run], t.program, t.space)(t.configs)
        out[t.data["program"]] = taus(np.asarray(scores), np.array(t.ratios), moved)
    return out


def summary(per_graph: dict) -> dict:
    keys = ("all", "near-default", "farther")
    return {f"{stat} {k}": float(fn([v[k] for v in per_graph.values()])) for stat, fn in (("mean", np.nanmean),
            ("median", np.nanmedian)) for k in keys} | {"graphs": len(per_graph)}


def main() -> None:
    import graphcost.pretrained as pretrained

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", type=Path, default=None, help="tile run (default: the shipped flag model)")
    p.add_argument("--tables", type=Path, default=ROOT / "benchmarks" / "results" / "tune_wide" / "tables")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    run = args.run or pretrained.shipped_model_dir("tile")
    if not Path(run).is_dir():
        sys.exit(f"--run {run}: no such run directory")
    sets = {f"zoo {split} families": graphs for split, graphs in zoo(run).items()}
    sets["tune suite"] = tune_suite(run, args.tables)
    report = {name: {"summary": summary(graphs), "graphs": graphs} for name, graphs in sets.items()}
    for name, rep in report.items():
        s = rep["summary"]
        print(f"{name:<22} ({s['graphs']:>2}): mean τ all {s['mean all']:.3f}, near-default {s['mean near-default']:.3f}, "
              f"farther {s['mean farther']:.3f}; median {s['median all']:.3f} / {s['median near-default']:.3f} / "
              f"{s['median farther']:.3f}")
    if args.json:
        from graphcost.guards.atomic import atomic_write_json

        shown = Path(run).resolve()
        atomic_write_json({"run": str(shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown),
                           "date": date.today().isoformat(), "load_end": [round(x, 2) for x in os.getloadavg()],
                           **report}, args.json)


if __name__ == "__main__":
    main()
