"""Which validation metric should choose the flag model's blend with the trees? Leave-family-out folds over
the DEVELOPMENT families only (issue 33; the runs of `compare_seed_ensemble.py`, nothing trained again).

    python benchmarks/lab/diagnose_blend_metric.py [--work runs/seed_folds] [--folds 5]
        [--json benchmarks/results/blend_metric_folds.json]

Until 2026-11-29 `graphcost train` chose its blend weight w (w · z(graph model) + (1 - w) · z(trees)) by the
validation graphs' mean of the kind's selection metric: the tile score for flag (tile) data (TGraph §2.5.2: one
minus the best of the predicted top 5 over the true best, a TpuGraphs tile metric). On the zoo's flag graphs
(32 configurations each, the default among them) the tile score of every scorer is 0.96-0.98 and differs
between weights by less than its noise, and ties go to the graph model, so w = 1 was chosen nearly always:
the trees, which ranked unseen families better than the graph model on Kendall τ (LightGBM 0.477 against the
default's 0.451 on `cpu_zoo_flags`, benchmarks/history/cost-models-2026-11-12.md), were dropped. This measurement made the blend's rule
Kendall τ (`graphcost.inference.blend.BLEND_METRIC`). This reads each fold's members (every seed
alone, `fold_k/seed_0s/best.pt`, and their average) and the trees the fold's run fitted, scores the
validation and held-out families once, and reports, for each weight on the grid and for the weight each
criterion chooses on validation (tile score, as now; Kendall τ), the held-out families' mean Kendall τ and
tile score.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

METRICS = ("kendall_tau", "tile_score")


def split_scores(predictors: dict, trees, files: list[Path]) -> list[dict]:
    """Per graph with usable labels: the prepared graph, each predictor's scores and the trees' scores."""
    from graphcost.data.transforms.preprocess import prepare_graph
    from graphcost.models.config_table import config_table

    out = []
    for f in files:
        g = prepare_graph(f, dedup=False)
        if g.num_configs < 2 or np.ptp(np.asarray(g.runtime, np.float64)) == 0:
            continue
        out.append({"graph": g, "trees": trees.score(g, config_table(g)),
                    **{name: p.score(g) for name, p in predictors.items()}})  # each (K,)
    return out


def mean_metrics(rows: list[dict], member: str, w: float) -> dict:
    from graphcost import metrics
    from graphcost.inference.blend import blended

    vals = [metrics.evaluate_graph(blended(w, r[member], r["trees"]), r["graph"].runtime, r["graph"].kind)
            for r in rows]
    return {m: float(np.mean([v[m] for v in vals])) for m in METRICS}


def fold(k: int, work: Path) -> dict:
    from graphcost.inference.ensemble import EnsemblePredictor, load_blend
    from graphcost.inference.blend import WEIGHTS, choose_blend

    run, data = work / f"fold_{k}", work / f"fold_{k}_data"
    members = sorted(p.parent for p in run.glob("seed_*/best.pt"))
    loaded = load_blend(run)
    if not members or loaded is None:
        sys.exit(f"{run}: no seed_*/best.pt or no trees.txt / blend.json (run compare_seed_ensemble.py first)")
    _, trees = loaded
    predictors = {m.name: EnsemblePredictor.load([m / "best.pt"], trees=False) for m in members}
    predictors["average"] = EnsemblePredictor.load([m / "best.pt" for m in members], trees=False)
    rows = {split: split_scores(predictors, trees, sorted((data / split).glob("*.npz"))) for split in ("valid", "test")}
    out = {"valid_graphs": len(rows["valid"]), "held_out_graphs": len(rows["test"]), "members": {}}
    valid = rows["valid"]
    for name in predictors:
        grid = {w: {split: mean_metrics(rows[split], name, w) for split in rows} for w in WEIGHTS}
        chosen = {}
        for metric in METRICS:  # the weight graphcost train would choose by `metric` (ties: more graph model)
            w = choose_blend([r[name] for r in valid], [r["trees"] for r in valid], [r["graph"] for r in valid],
                             metric).weight
            chosen[f"by valid {metric}"] = {"weight": w, **{f"held_out_{m}": grid[w]["test"][m] for m in METRICS}}
        out["members"][name] = {"chosen": chosen, "grid": {str(w): v for w, v in grid.items()}}
        print(f"fold {k} {name}: " + ", ".join(f"{c}: w {v['weight']} -> held-out tau {v['held_out_kendall_tau']:.3f}"
                                            for c, v in chosen.items()), flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "seed_folds")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "blend_metric_folds.json")
    args = p.parse_args()
    import torch

    from graphcost.guards.atomic import atomic_write_json

    torch.set_num_threads(args.threads)
    folds = [fold(k, args.work) for k in range(args.folds)]
    summary = {}
    for name in folds[0]["members"]:
        summary[name] = {c: float(np.mean([f["members"][name]["chosen"][c]["held_out_kendall_tau"] for f in folds]))
                         for c in folds[0]["members"][name]["chosen"]}
        summary[name].update({f"w={w}": float(np.mean([f["members"][name]["grid"][str(w)]["test"]["kendall_tau"]
                                                        for f in folds])) for w in (0.0, 0.5, 1.0)})
    print(json.dumps(summary, indent=1))
    work = args.work.relative_to(ROOT) if args.work.is_relative_to(ROOT) else args.work
    atomic_write_json({"date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "work": str(work),
                       "summary_mean_held_out_kendall_tau": summary, "folds": folds}, args.json, indent=1)


if __name__ == "__main__":
    main()
