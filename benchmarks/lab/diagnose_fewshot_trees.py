"""Trees within ONE program: the configuration table alone vs widened with the raw layouts
(`graphcost.models.trees`, program mode), next to the count heuristic, at 30, 100 and 300
training configurations (as many to validate: LightGBM's rounds stop early on them; the rest to test).

    python benchmarks/lab/diagnose_fewshot_trees.py [--data DIR] [--splits 3]

Data: every graph of DIR (default: the shipped ``cpu_layout_1k``, one LSTM with 1,200 measured
configurations). Kendall τ over the test configurations, mean over random splits. Trees only (no
graph model): it says which features the tree component needs; the default's figures are
`bench_real.py --protocols within`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main() -> None:
    import lightgbm as lgb

    from graphcost import metrics
    from graphcost.data.transforms.pool import load_prepared
    from graphcost.datasets import shipped_dataset_dir
    from graphcost.models.config_table import config_table
    from graphcost.inference.blend import count_prior
    from graphcost.models.trees import raw_layouts

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=None)
    p.add_argument("--splits", type=int, default=3)
    p.add_argument("--sizes", default="30,100,300")
    args = p.parse_args()
    root = args.data or shipped_dataset_dir("cpu_layout_1k")
    for g in load_prepared(sorted(root.rglob("*.npz")), progress=False, dedup=False):
        y = np.log(np.asarray(g.runtime, np.float64))
        table = config_table(g)
        views = {"table": table, "raw": raw_layouts(g), "table+raw": np.hstack([table, raw_layouts(g)])}
        count = count_prior(g, table)
        print(f"{g.name}: {g.num_configs} configurations, table {table.shape[1]} columns, raw {views['raw'].shape[1]}")
        for n in (int(s) for s in args.sizes.split(",")):
            res: dict[str, list[float]] = {k: [] for k in ("count", *views)}
            for seed in range(args.splits):
                perm = np.random.default_rng(seed).permutation(g.num_configs)
                tr, va, te = perm[:n], perm[n:2 * n], perm[2 * n:]

                def tau(scores: np.ndarray) -> float:
                    return metrics.evaluate_graph(scores, g.runtime[te], "layout")["kendall_tau"]

                res["count"].append(tau(count[te]))
                for name, x in views.items():  # graphcost.models.trees.TreeRanker's parameters
                    params = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 31,
                              "min_data_in_leaf": max(2, min(20, n // 20)), "feature_fraction": 0.8,
                              "bagging_fraction": 0.8, "bagging_freq": 1, "seed": seed, "verbose": -1, "num_threads": 1}
                    booster = lgb.train(params, lgb.Dataset(x[tr], y[tr]), num_boost_round=1000,
                                        valid_sets=[lgb.Dataset(x[va], y[va])],
                                        callbacks=[lgb.early_stopping(50, verbose=False)])
                    res[name].append(tau(booster.predict(x[te], num_iteration=booster.best_iteration)))
            print(f"  {n:>4} training configurations: " + ", ".join(
                f"{k} {np.mean(v):.3f} ± {np.std(v):.3f}" for k, v in res.items()))


if __name__ == "__main__":
    main()
