"""What limits transfer to unseen families? Cheap scorers under leave-one-family-out, on the
DEVELOPMENT families of a collection only (issue 33, part 3).

    python benchmarks/lab/diagnose_transfer.py [--data DIR] [--extra DIR] [--json OUT.json]

The collection's graphs are split by family (`bench_real.by_family`: `graphcost.data.splits.family_split`,
seed 0); the TEST families are never read here. Every development family
(train + valid sides) is held out in turn; the scorers fit on the other development families and
are scored on it (Kendall τ over all its configurations, mean over its graphs, mean over families):

* heuristics: the number of moved tensors (``count``), moved layout slots, size-weighted moved
  slots, moved minor-most dimensions, output slots only, input slots only;
* ridge (λ 10 and 1000) and LightGBM regression on the configuration table (`bench_real.config_table`),
  raw or standardised within each graph (``zgraph``: scale-free across programs);
* LightGBM lambdarank (graphs as query groups), with and without the count as a feature;
* the same on SCALE-FREE size columns (``frac``): each moved slot weighted by its tensor's share of
  all the graph's output elements, s_c = e_c / Σ_n e_n, so that moving a tensor that holds 10% of a
  program's data counts the same in a small and a large program (the table's own size columns are
  log2 of absolute element counts, which differ between families by orders of magnitude); and a
  log-ratio target (log t − median_k log t, not standardised), which keeps how much a graph's
  configurations differ. (The size shares were adopted into `graphcost.models.config_table` from
  these figures; here the table is cut to its 31 columns from before, so ``raw`` still means those.)

``--extra DIR`` adds every graph of another collection to each fold's training side, except those of
the held-out family (by name): does a wider zoo help on the families of ``--data``?

Figures choose recipes; they are not a headline (that is `bench_real.py --protocols lofo`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite

import bench_real as br  # noqa: E402

HEURISTICS = {  # table columns: moved[class, slot] 0-8, size-weighted 9-17, minor 18-26 (graphcost.models.config_table)
    "count": lambda r: r.moved.astype(np.float64),
    "slots": lambda r: r.table[:, :9].sum(1),
    "size": lambda r: r.table[:, 9:18].sum(1),
    "minor": lambda r: r.table[:, 18:27].sum(1),
    "out": lambda r: r.table[:, [0, 3, 6]].sum(1),
    "in": lambda r: r.table[:, [1, 2, 4, 5, 7, 8]].sum(1),
    "frac": lambda r: r.frac[:, 18],
    "frac-in": lambda r: r.frac[:, 19],
    "frac-minor": lambda r: r.frac[:, 20],
}


def frac_columns(path: Path) -> np.ndarray:
    """(K, 18 + 3) scale-free columns of one layout file, in the file's configuration order: per opcode
    class k and slot s, Σ_c moved_{c,s} · share_{c,s} (9) and Σ_c minor_{c,s} · share_{c,s} (9), then the
    totals Σ moved·share over all slots, over input slots only, and Σ minor·share. share_{c,s}: the
    slot's tensor's elements over all nodes' output elements; the output slot is the node's output,
    the input slot its largest operand, the kernel slot its smallest (the files keep operands unordered)."""
    from graphcost.models.config_table import NUM_CLASSES, OPCODE_CLASS

    with np.load(path, allow_pickle=False) as z:
        elems = np.maximum(np.asarray(z["node_feat"], np.float64)[:, 28], 1.0)  # (N,)
        ids = np.asarray(z["node_config_ids"], np.int64)  # (C,)
        cfg = np.asarray(z["node_config_feat"], np.int64)  # (K, C, 18)
        opcode = np.asarray(z["node_opcode"], np.int64)
        edges = np.asarray(z["edge_index"], np.int64).reshape(-1, 2)  # [u, v]: u consumes v
    total = elems.sum()
    share = np.zeros((len(ids), 3))
    for j, c in enumerate(ids):
        ops = np.sort(elems[edges[edges[:, 0] == c, 1]])
        share[j] = [elems[c], ops[-1] if len(ops) else 0.0, ops[0] if len(ops) > 1 else 0.0]
    share /= total
    slots = cfg.reshape(cfg.shape[0], cfg.shape[1], 3, 6)  # (K, C, 3, 6)
    valid = slots >= 0
    default = valid.sum(-1, keepdims=True) - 1 - np.arange(6)
    moved = ((slots != default) & valid).any(-1).astype(np.float64)  # (K, C, 3)
    minor = (valid[..., 0] & (slots[..., 0] != default[..., 0])).astype(np.float64)
    onehot = np.eye(NUM_CLASSES)[[OPCODE_CLASS.get(int(o), 2) for o in opcode[ids]]]  # (C, 3)
    per = [np.einsum("kcs,cs,cj->kjs", x, share, onehot).reshape(len(cfg), -1) for x in (moved, minor)]
    ms = moved * share
    totals = np.column_stack([ms.sum((1, 2)), ms[..., 1:].sum((1, 2)), (minor * share).sum((1, 2))])
    return np.hstack(per + [totals])


def logratio(r) -> np.ndarray:
    y = np.log(r.label)
    return y - np.median(y)


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
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "collections" / "cpu_zoo_layout")
    parser.add_argument("--extra", type=Path, default=None, help="collection added to every fold's training side")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    dev = [r for r in br.by_family(br.load_records(args.data)) if r.split != "test"]
    extra = br.load_records(args.extra) if args.extra else []
    fams = sorted({r.family for r in dev})
    from graphcost.models.config_table import LEGACY_LAYOUT_COLUMNS

    for r in dev + extra:  # "table": the 31 columns before the data shares, which are `frac` here
        r.table, r.frac = r.table[:, :LEGACY_LAYOUT_COLUMNS], frac_columns(r.path)
    print(f"{args.data}: {len(dev)} development graphs of {len(fams)} families (test families never read)"
          + (f"; + {len(extra)} training graphs from {args.extra}" if extra else ""))

    def taus(score, test) -> dict[str, float]:
        """Mean τ over the family's graphs: over all configurations, and within each search mode
        (``@random``: configurations that move many tensors; ``@default``: 1-3 moved)."""
        out: dict[str, list[float]] = {"": [], "@random": [], "@default": []}
        for r in test:
            s = score(r)
            out[""].append(metrics.evaluate_graph(s, r.label, r.kind)["kendall_tau"])
            for mode in ("random", "default"):
                sel = r.modes == mode if r.modes is not None else np.zeros(len(s), bool)
                if sel.sum() >= 2 and np.ptp(r.label[sel]) > 0:
                    out["@" + mode].append(metrics.evaluate_graph(s[sel], r.label[sel], r.kind)["kendall_tau"])
        return {k: float(np.mean(v)) for k, v in out.items() if v}

    def z(s: np.ndarray) -> np.ndarray:
        return (s - s.mean()) / max(float(s.std()), 1e-9)

    rows: dict[str, dict[str, float]] = {}
    for fam in fams:
        test = [r for r in dev if r.family == fam]
        train = [r for r in dev + extra if r.family != fam]
        scorers = dict(HEURISTICS)
        ys = [target(r) for r in train]
        views = (("raw", lambda r: r.table), ("zgraph", lambda r: zgraph(r.table)),
                 ("frac", lambda r: np.column_stack([r.table[:, :9], r.frac])),
                 ("raw+frac", lambda r: np.column_stack([r.table, r.frac])))
        for view, feat in views:
            xs = [feat(r) for r in train]
            for lam in (10.0, 1000.0):
                f = fit_ridge(xs, ys, lam)
                scorers[f"ridge{lam:g}-{view}"] = lambda r, f=f, feat=feat: f(feat(r))
            f = fit_lgbm(xs, ys)
            scorers[f"lgbm-{view}"] = lambda r, f=f, feat=feat: f(feat(r))
            if view.endswith("frac"):  # the log-ratio target keeps each graph's spread
                yr = [logratio(r) for r in train]
                f = fit_ridge(xs, yr, 10.0)
                scorers[f"ridge10-{view}-logratio"] = lambda r, f=f, feat=feat: f(feat(r))
                f = fit_lgbm(xs, yr)
                scorers[f"lgbm-{view}-logratio"] = lambda r, f=f, feat=feat: f(feat(r))
        groups = [len(r.label) for r in train]
        for name, feat in (("lambdarank", lambda r: r.table),
                           ("lambdarank+count", lambda r: np.column_stack([r.table, r.moved])),
                           ("lambdarank-raw+frac", lambda r: np.column_stack([r.table, r.frac]))):
            f = fit_lgbm([feat(r) for r in train], [-y for y in ys], groups)  # relevance: faster = higher
            scorers[name] = lambda r, f=f, feat=feat: f(feat(r))
        # equal-weight ensembles of a heuristic and a learned scorer, each standardised within the graph
        for a, b in (("count", "lambdarank+count"), ("in", "lgbm-raw+frac"), ("count", "ridge1000-raw+frac")):
            scorers[f"{a}+{b}"] = lambda r, a=scorers[a], b=scorers[b]: z(a(r)) + z(b(r))
        rows[fam] = {name + k: v for name, score in scorers.items() for k, v in taus(score, test).items()}
    keys = sorted({k for row in rows.values() for k in row})
    mean = {k: float(np.mean([row[k] for row in rows.values() if k in row])) for k in keys}
    print(f"  {'scorer':<34} {'all':>7} {'random':>7} {'default':>7}  (mean Kendall τ over held-out families)")
    for k in sorted((k for k in mean if "@" not in k), key=lambda k: -mean[k]):
        modes = " ".join(f"{mean.get(k + m, np.nan):+.3f}" for m in ("@random", "@default"))
        print(f"  {k:<34} {mean[k]:+.3f} {modes}")
    if args.json:
        from graphcost.guards.atomic import atomic_write_json

        atomic_write_json({"data": str(args.data), "extra": str(args.extra) if args.extra else None,
                           "families": rows, "mean": mean}, args.json)


if __name__ == "__main__":
    main()
