"""What limits transfer to unseen families in the FLAG space? Table scorers under leave-one-family-out,
on the DEVELOPMENT families of the flag collection only (issue 33, part 3).

    python benchmarks/lab/diagnose_flag_transfer.py [--data DIR] [--seeds N] [--json OUT.json]

(the recorded run: ``--json benchmarks/results/diagnose_flag_transfer.json``, 2 seeds; docs/cost-models.md)

The collection's own split is by family; its TEST families are never read here. Every development
family (train + valid sides) is held out in turn; the scorers fit on the other development families
and are scored on it (Kendall τ over its 32 configurations, mean over its graphs, mean over families).

The flag table (`graphcost.models.config_table`, tile) holds the 24 flag values and 3 graph-size
columns: nothing says WHAT the program does, so a tree cannot learn "this flag matters for
convolutions" except through size. Views tried here:

* ``table``: the 27 columns `graphcost train`'s trees read (without the compiled columns);
* ``+compiled``: and the 7 columns of what the compiler did (copy and transpose bytes);
* ``+ops``: and the program's composition: for each of 14 opcode groups (dot, convolution, reduce,
  elementwise, transcendental, data movement, gather/scatter, sort, loops, fft, ...) the share of its
  nodes, n_g / N, and the share of its output elements, Σ_{n in g} e_n / Σ_n e_n (28 scale-free columns,
  the same for every configuration of a graph: they let the trees learn flag × program interactions);
* ``+changed``: and 24 indicators of which flag is off its default (configuration relative to the default);

each with LightGBM regression on the log runtime standardised within a graph (what the library's trees
fit) and LightGBM lambdarank with graphs as query groups; and ridge; the count of flags off their
default as the reference heuristic.

Figures choose recipes; they are not a headline (that is `bench_real.py --protocols lofo_flags`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite

import bench_real as br  # noqa: E402
from graphcost.frontend.hlo.opcodes import OPCODE_IDS  # noqa: E402

OPCODE_GROUPS: dict[str, tuple[str, ...]] = {
    "dot": ("dot",),
    "convolution": ("convolution",),
    "reduce": ("reduce", "reduce-window", "select-and-scatter", "all-reduce", "reduce-scatter"),
    "arithmetic": ("add", "subtract", "multiply", "divide", "maximum", "minimum", "negate", "abs", "remainder",
                   "sign", "clamp", "floor", "ceil", "round-nearest-afz", "round-nearest-even", "and", "or", "xor",
                   "not", "shift-left", "shift-right-arithmetic", "shift-right-logical", "popcnt",
                   "count-leading-zeros"),
    "transcendental": ("exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic", "rsqrt",
                       "sqrt", "cbrt", "power", "sine", "cosine", "tan", "atan2", "is-finite"),
    "compare_select": ("compare", "select"),
    "convert": ("convert", "bitcast-convert", "reduce-precision", "stochastic-convert"),
    "layout": ("transpose", "copy", "reshape", "bitcast", "dynamic-reshape", "reverse"),
    "broadcast": ("broadcast", "iota", "constant"),
    "slicing": ("slice", "dynamic-slice", "dynamic-update-slice", "concatenate", "pad"),
    "gather_scatter": ("gather", "scatter"),
    "sort": ("sort",),
    "control": ("while", "conditional", "call", "map", "custom-call", "fusion"),
    "fft": ("fft", "triangular-solve", "cholesky"),
}
ELEMENTS_COLUMN = 28  # node_feat: the number of elements of the node's output (TpuGraphs' feature list)


def _group_of_opcode() -> np.ndarray:
    """(max opcode id + 1,) int64: each opcode id's group index, -1 for opcodes in no group."""
    table = np.full(max(OPCODE_IDS.values()) + 1, -1, dtype=np.int64)
    for g, names in enumerate(OPCODE_GROUPS.values()):
        for name in names:
            table[OPCODE_IDS[name]] = g
    return table


GROUP_OF_OPCODE = _group_of_opcode()


def program_features(node_feat: np.ndarray, node_opcode: np.ndarray) -> np.ndarray:
    """(2 G,) float32: node_share (G) then element_share (G) of one graph (``+ops`` in the module docstring);
    node_feat (N, 140), node_opcode (N,) TpuGraphs opcode ids."""
    ops = np.asarray(node_opcode, dtype=np.int64)
    known = (ops >= 0) & (ops < len(GROUP_OF_OPCODE))
    group = np.where(known, GROUP_OF_OPCODE[np.where(known, ops, 0)], -1)  # (N,)
    elems = np.maximum(np.asarray(node_feat, dtype=np.float64)[:, ELEMENTS_COLUMN], 0.0)  # (N,)
    g = len(OPCODE_GROUPS)
    in_group = group >= 0
    nodes = np.bincount(group[in_group], minlength=g).astype(np.float64)
    size = np.bincount(group[in_group], weights=elems[in_group], minlength=g)
    n, total = max(len(ops), 1), max(float(elems.sum()), 1.0)
    return np.concatenate([nodes / n, size / total]).astype(np.float32)


def main() -> None:
    from graphcost import metrics
    from graphcost.frontend.programs.flags import DEFAULT

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path,
                        default=Path(__file__).resolve().parents[2] / "src" / "graphcost" / "datasets" / "cpu_zoo_flags")
    parser.add_argument("--seeds", type=int, default=2, help="LightGBM seeds averaged per scorer")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    start = time.time()
    dev = [r for r in br.load_records(args.data) if r.split != "test"]
    fams = sorted({r.family for r in dev})
    default = np.asarray(DEFAULT, np.float32)
    ops, flips = {}, {}  # per graph: (K, 28) its composition on every row; (K, 24) which flags are off the default
    for r in dev:
        with np.load(r.path, allow_pickle=False) as z:
            composition = program_features(z["node_feat"], z["node_opcode"])
            ops[r.name] = np.broadcast_to(composition, (len(r.label), len(composition)))
            flips[r.name] = (np.asarray(z["config_feat"], np.float32)[:, :len(default)] != default).astype(np.float32)
    print(f"{args.data}: {len(dev)} development graphs of {len(fams)} families (test families never read)", flush=True)
    compiled = {r.name: np.nan_to_num(r.compiled_table, nan=-1.0) for r in dev}
    views = {
        "table": lambda r: r.table,
        "table+compiled": lambda r: np.hstack([r.table, compiled[r.name]]),
        "table+ops": lambda r: np.hstack([r.table, ops[r.name]]),
        "table+changed": lambda r: np.hstack([r.table, flips[r.name]]),
        "table+ops+changed": lambda r: np.hstack([r.table, ops[r.name], flips[r.name]]),
    }

    def target(r) -> np.ndarray:
        y = np.log(r.label)
        return (y - y.mean()) / max(float(y.std()), 1e-9)

    def fit_lgbm(xs, ys, seed: int, rank: bool):
        import lightgbm as lgb

        params = {"learning_rate": 0.05, "num_leaves": 31, "min_data_in_leaf": 20, "verbose": -1, "num_threads": 2,
                  "seed": seed, "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1}
        if not rank:
            booster = lgb.train({**params, "objective": "regression"}, lgb.Dataset(np.vstack(xs), np.concatenate(ys)),
                                num_boost_round=300)
            return booster.predict
        rel = [(np.argsort(np.argsort(-y)) * 32 // len(y)).astype(int) for y in ys]  # 31 = fastest
        booster = lgb.train({**params, "objective": "lambdarank", "label_gain": list(range(32))},
                            lgb.Dataset(np.vstack(xs), np.concatenate(rel), group=[len(y) for y in ys]),
                            num_boost_round=300)
        return lambda t: -booster.predict(t)  # lower = predicted faster

    def fit_ridge(xs, ys, lam: float = 100.0):
        x, y = np.vstack(xs), np.concatenate(ys)
        mu, sd = x.mean(0), x.std(0) + 1e-6
        zx = (x - mu) / sd
        w = np.linalg.solve(zx.T @ zx + lam * np.eye(zx.shape[1]), zx.T @ (y - y.mean()))
        return lambda t: ((t - mu) / sd) @ w

    rows: dict[str, dict[str, float]] = {}
    for fam in fams:
        test = [r for r in dev if r.family == fam]
        train = [r for r in dev if r.family != fam]
        ys = [target(r) for r in train]
        scores: dict[str, list[np.ndarray]] = {"count": [r.moved.astype(np.float64) for r in test]}
        for view, feat in views.items():
            xs = [feat(r) for r in train]
            f = fit_ridge(xs, ys)
            scores[f"ridge-{view}"] = [f(feat(r)) for r in test]
            for rank in (False, True):
                name = f"{'lambdarank' if rank else 'lgbm'}-{view}"
                per_seed = [fit_lgbm(xs, ys, seed, rank) for seed in range(args.seeds)]
                scores[name] = [np.mean([f(feat(r)) for f in per_seed], axis=0) for r in test]
        rows[fam] = {name: float(np.mean([metrics.evaluate_graph(s, r.label, r.kind)["kendall_tau"]
                                          for s, r in zip(ss, test)])) for name, ss in scores.items()}
        print(f"  {fam:<10} " + " ".join(f"{k} {v:+.3f}" for k, v in sorted(rows[fam].items())), flush=True)
    names = sorted({k for row in rows.values() for k in row})
    mean = {k: float(np.mean([row[k] for row in rows.values()])) for k in names}
    wins = {k: int(sum(rows[f][k] > rows[f]["lgbm-table"] for f in fams)) for k in names}
    print(f"\n  {'scorer':<28} {'τ':>7}  families above lgbm-table   ({time.time() - start:.0f} s)")
    for k in sorted(mean, key=lambda k: -mean[k]):
        print(f"  {k:<28} {mean[k]:+.3f}  {wins[k]}/{len(fams)}")
    if args.json:
        from graphcost.guards.atomic import atomic_write_json

        root = Path(__file__).resolve().parents[2]
        data = args.data.resolve()
        shown = str(data.relative_to(root) if data.is_relative_to(root) else data)
        atomic_write_json({"data": shown, "seeds": args.seeds, "date": date.today().isoformat(),
                           "load_end": [round(x, 2) for x in os.getloadavg()], "families": rows, "mean": mean},
                          args.json)


if __name__ == "__main__":
    main()
