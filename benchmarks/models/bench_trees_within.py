"""graphcost's trees against a plain LightGBM within one program (issue 63 item 6).

One layout program's configurations are split (`graphcost.data.config_split`): N to train (30 / 100
/ 300), V to validate, the rest to test. Three tree models are fitted on the train configurations
and scored on the test ones by Kendall τ:

* ``trees``: `graphcost.models.trees.TreeRanker` as `graphcost train` fits it (program mode: the
  configuration table + every raw layout entry; rounds chosen by cross-validation on the training
  rows when the validation configurations are fewer than `trees.FEW_VALID_ROWS`);
* ``trees, early stop on valid``: the same, its rounds stopped on the validation configurations
  however few (what `graphcost train` did before);
* ``plain LightGBM``: LightGBM's defaults (100 rounds) on the flattened per-node configuration
  features (K, C · 18) of the unprocessed graph, log runtime target;
* ``plain LightGBM, small leaves``: the same with ``min_data_in_leaf`` 2 and 300 rounds, what a user
  would set for a few dozen rows (the defaults cannot split 30 rows).

Data: the real TPU layout module of ``../shared/data/tpu_graphs_raw`` (one module, 122 runs, 112
without error, 95 distinct configurations: 300 is out of reach, so N = 30 and 60 there),
`cpu_layout_1k` (one LSTM, 1,200 REAL configurations, half of them near the compiler's default) and,
with ``--synthetic``, a SYNTHETIC layout graph with many configurable nodes and no default
configuration (`graphcost.data.synth`: 3,000 nodes, 101 configurable, 1,500 random configurations,
simulated runtimes), the kind of TpuGraphs graph the issue names.

    python benchmarks/models/bench_trees_within.py --out benchmarks/results/trees_within.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

ROOT = Path(__file__).resolve().parents[2]
TPU_MODULE = ROOT.parent / "shared" / "data" / "tpu_graphs_raw" / "module_tuning_data_layout.pb"
LSTM = ROOT / "src" / "graphcost" / "datasets" / "cpu_layout_1k" / "train" / "lstm-l1-h64-s16-b64-fwd.npz"


SYNTHETIC = Path("synthetic-layout-3000-nodes-random")  # not a file: `_graph` generates it


def _graph(source: Path):
    from graphcost.data.io.tpugraphs_io import load_graph

    if source == SYNTHETIC:
        from graphcost.data.synth.collection import synth_layout_graph

        return synth_layout_graph(num_nodes=3000, num_configs=1500, seed=1, search="random", config_fraction=0.05)
    if source.suffix == ".pb":
        from graphcost.frontend.hlo.convert import convert_layout
        from graphcost.frontend.hlo.tuning_proto import parse_module_tuning_data

        return convert_layout(parse_module_tuning_data(source.read_bytes()), source.name)[0]
    return load_graph(source)


def _tau(scores, runtime) -> float:
    return float(kendalltau(scores, runtime).statistic)


def run(source: Path, sizes: list[int], valid: int, seeds: int) -> dict:
    import lightgbm as lgb

    import graphcost.models.trees as trees
    from graphcost.data.config_split import split_by_configuration
    from graphcost.data.io.tpugraphs_io import load_graph, save_graph
    from graphcost.data.transforms.preprocess import prepare_graph

    graph = _graph(source)
    k = len(graph.config_runtime)
    name = f"SYNTHETIC: {source}" if source == SYNTHETIC else str(source.relative_to(ROOT.parent))
    out: dict = {"source": name, "configs": k, "valid": valid, "sizes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        save_graph(graph, Path(tmp) / "g.npz")
        for n in sizes:
            rows: dict[str, list[float]] = {"trees": [], "trees, early stop on valid": [], "plain LightGBM": [],
                                            "plain LightGBM, small leaves": []}
            for seed in range(seeds):
                split = Path(tmp) / f"n{n}-s{seed}"
                split_by_configuration(Path(tmp) / "g.npz", split, n / k, valid / k, seed=seed)
                raw = {s: load_graph(split / s / "g.npz") for s in ("train", "valid", "test")}
                prep = {s: prepare_graph(g) for s, g in raw.items()}
                few = trees.FEW_VALID_ROWS
                for name, floor in (("trees", few), ("trees, early stop on valid", 0)):
                    trees.FEW_VALID_ROWS = floor
                    try:
                        ranker = trees.TreeRanker.fit([prep["train"]], [prep["valid"]], seed=seed, threads=1)
                    finally:
                        trees.FEW_VALID_ROWS = few
                    rows[name].append(_tau(ranker.score(prep["test"]), prep["test"].runtime))
                x = {s: np.asarray(raw[s].node_config_feat, np.float32).reshape(len(raw[s].config_runtime), -1)
                     for s in ("train", "test")}
                for name, extra, rounds in (("plain LightGBM", {}, 100),
                                            ("plain LightGBM, small leaves", {"min_data_in_leaf": 2}, 300)):
                    booster = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1, "seed": seed,
                                         **extra}, lgb.Dataset(x["train"], np.log(raw["train"].config_runtime)), rounds)
                    pred = booster.predict(x["test"])
                    rows[name].append(_tau(pred, raw["test"].config_runtime) if np.ptp(pred) > 0 else 0.0)
            out["sizes"][str(n)] = {name: {"kendall_tau": round(float(np.mean(v)), 4),
                                           "kendall_tau_std": round(float(np.std(v)), 4), "seeds": seeds}
                                    for name, v in rows.items()}
            print(f"{source.name} n={n}: " + ", ".join(f"{name} {np.mean(v):.3f}" for name, v in rows.items()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--synthetic", action="store_true", help="also the synthetic no-default graph (module docstring)")
    args = ap.parse_args()
    results = []
    if TPU_MODULE.is_file():
        results.append(run(TPU_MODULE, [30, 60], 8, args.seeds))
    else:
        print(f"skipping the TPU module: {TPU_MODULE} not found (the shared data sits beside the checkout)")
    results.append(run(LSTM, [30, 100, 300], 30, args.seeds))
    if args.synthetic:
        results.append(run(SYNTHETIC, [30, 100, 300], 100, args.seeds))
    if args.out is not None:
        from graphcost.guards.atomic import atomic_write_json

        atomic_write_json({"note": "Kendall tau on the held-out configurations; a plain LightGBM that cannot "
                                   "split (too few rows for its min_data_in_leaf 20) ranks nothing: 0",
                           "results": results}, args.out, indent=1)


if __name__ == "__main__":
    main()
