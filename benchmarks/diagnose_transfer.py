"""What limits transfer to unseen families? Cheap scorers under leave-one-family-out, on the
DEVELOPMENT families of a collection only (issue 33, part 3).

    python benchmarks/diagnose_transfer.py [--data DIR] [--json OUT.json]

The collection's graphs are split by family (`bench_real.by_family`: `graphcost.data.splits.family_split`,
seed 0); the TEST families are never read here. Every development family
(train + valid sides) is held out in turn; the scorers fit on the other development families and
are scored on it (Kendall τ over all its configurations, mean over its graphs, mean over families):

* heuristics: the number of moved tensors (``count``), moved layout slots, size-weighted moved
  slots, moved minor-most dimensions, output slots only, input slots only;
* ridge (λ 10 and 1000) and LightGBM regression on the configuration table (`bench_real.config_table`),
  raw or standardised within each graph (``zgraph``: scale-free across programs);
* LightGBM lambdarank (graphs as query groups), with and without the count as a feature.

Figures choose recipes; they are not a headline (that is `bench_real.py --protocols lofo`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_real as br  # noqa: E402

HEURISTICS = {  # table columns: moved[class, slot] 0-8, size-weighted 9-17, minor 18-26 (graphcost.models.config_table)
    "count": lambda r: r.moved.astype(np.float64),
    "slots": lambda r: r.table[:, :9].sum(1),
    "size": lambda r: r.table[:, 9:18].sum(1),
    "minor": lambda r: r.table[:, 18:27].sum(1),
    "out": lambda r: r.table[:, [0, 3, 6]].sum(1),
    "in": lambda r: r.table[:, [1, 2, 4, 5, 7, 8]].sum(1),
}


def zgraph(table: np.ndarray) -> np.ndarray:
    """(K, F) columns standardised within one graph (constant columns -> 0)."""
    sd = table.std(0)
    return (table - table.mean(0)) / np.where(sd > 0, sd, 1.0)


def target(r) -> np.ndarray:
    y = np.log(r.label)
    return (y - y.mean()) / max(float(y.std()), 1e-9)


def fit_ridge(xs, ys, lam: float):
    x, y = np.vstack(xs), np.concatenate(ys)
    mu, sd = x.mean(0), x.std(0) + 1e-6
    z = (x - mu) / sd
    w = np.linalg.solve(z.T @ z + lam * np.eye(z.shape[1]), z.T @ (y - y.mean()))
    return lambda t: ((t - mu) / sd) @ w


def fit_lgbm(xs, ys, groups=None, seed: int = 0):
    import lightgbm as lgb

    params = {"learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20, "verbose": -1, "num_threads": 1,
              "seed": seed, "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1}
    if groups is None:
        booster = lgb.train({**params, "objective": "regression"}, lgb.Dataset(np.vstack(xs), np.concatenate(ys)),
                            num_boost_round=200)
        return booster.predict
    # lambdarank: ys are "higher = faster"; relevance = rank within the graph, 0..31 (31 = fastest)
    rel = [(np.argsort(np.argsort(y)) * 32 // len(y)).astype(int) for y in ys]
    booster = lgb.train({**params, "objective": "lambdarank", "label_gain": list(range(32))},
                        lgb.Dataset(np.vstack(xs), np.concatenate(rel), group=groups), num_boost_round=200)
    return lambda t: -booster.predict(t)  # lower = predicted faster


def main() -> None:
    from graphcost import metrics
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parent / "collections" / "cpu_zoo_layout")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    dev = [r for r in br.by_family(br.load_records(args.data)) if r.split != "test"]
    fams = sorted({r.family for r in dev})
    print(f"{args.data}: {len(dev)} development graphs of {len(fams)} families (test families never read)")

    def tau(scores, r) -> float:
        return metrics.evaluate_graph(scores, r.label, r.kind)["kendall_tau"]

    rows: dict[str, dict[str, float]] = {}
    for fam in fams:
        test, train = [r for r in dev if r.family == fam], [r for r in dev if r.family != fam]
        row = {h: float(np.mean([tau(f(r), r) for r in test])) for h, f in HEURISTICS.items()}
        ys = [target(r) for r in train]
        for view, feat in (("raw", lambda r: r.table), ("zgraph", lambda r: zgraph(r.table))):
            xs = [feat(r) for r in train]
            for lam in (10.0, 1000.0):
                f = fit_ridge(xs, ys, lam)
                row[f"ridge{lam:g}-{view}"] = float(np.mean([tau(f(feat(r)), r) for r in test]))
            f = fit_lgbm(xs, ys)
            row[f"lgbm-{view}"] = float(np.mean([tau(f(feat(r)), r) for r in test]))
        groups = [len(r.label) for r in train]
        for name, feat in (("lambdarank", lambda r: r.table),
                           ("lambdarank+count", lambda r: np.column_stack([r.table, r.moved]))):
            f = fit_lgbm([feat(r) for r in train], [-y for y in ys], groups)  # relevance: faster = higher
            row[name] = float(np.mean([tau(f(feat(r)), r) for r in test]))
        rows[fam] = row
    mean = {k: float(np.mean([row[k] for row in rows.values()])) for k in next(iter(rows.values()))}
    for k, v in sorted(mean.items(), key=lambda kv: -kv[1]):
        print(f"  {k:<18} {v:+.3f}")
    if args.json:
        from graphcost.atomic import atomic_write_json

        atomic_write_json({"data": str(args.data), "families": rows, "mean": mean}, args.json)


if __name__ == "__main__":
    main()
