"""Benchmark: cost models on graphcost's own REAL CPU data, next to the noise ceiling (issues 17, 24).

    python benchmarks/models/bench_real.py [--seeds 3] [--protocols official,lofo,flags,within] [--within DIR]

Data: a collection written by `graphcost collect` with a repeat pass (``--repeat``): every file holds
the label (median over 3 measuring processes) and an independent second measurement of the same
configurations (``config_runtime_repeat_samples``); default: the shipped ``cpu_layout``.

Models, each trained on the training data only, selected on the validation data only, and scored
on every configuration of the test data (no TTA):

* ``default``   what `graphcost train` does with no options (`graphcost.train.recipe`: TGraph with
  its defaults, the budget that follows the configurations, early stopping, best validation epoch,
  then the trees on the configuration table blended in with a weight chosen on validation);
* ``tgraph-no-compiled`` the default before TGraph's ``compiled_stats`` term (what the compiler did to
  each configuration, `graphcost.data.transforms.compiled`, added to the score) was part of it;
* ``tgraph-paper`` the same TGraph as the paper writes it: eq. 6 weights (softmax, 1/B for shared
  states), eq. 7's mean readout, no layout change features; same budget;
* ``sage``      the TpuGraphs layout baseline (GraphSAGE; tile: its MLP baseline), same budget;
* ``kaufman``   Kaufman et al. (GraphSAGE encoder, column-wise reduction), same budget;
* ``lightgbm``  gradient-boosted trees (LightGBM) on per-configuration features of fixed width
  (`config_table`): which tensors move, by opcode class and operand slot, weighted by tensor size,
  whether the minor-most dimension moves, plus graph size (within one program also every layout
  entry, one-hot); regression on the log runtime standardised within each graph; rounds chosen by
  early stopping on the validation data;
* ``ridge``     ridge regression on the same features (standardised), λ chosen on the validation data;
* ``count``     the trivial heuristic: number of tensors moved off the default layout (tile: the
  number of flags off their default); fewer = predicted faster.
* ``copies``    what the compiler did, nothing learned: the bytes the optimized module spends on
  ``copy`` and ``transpose`` instructions (`graphcost.frontend.hlo.compiled_stats`; the files'
  ``config_compiled_stats``, from `graphcost collect` or ``collect --annotate``); fewer = faster.
* ``lightgbm-compiled``, ``ridge-compiled``: ``lightgbm`` and ``ridge`` with the table's 7 columns of
  compiled statistics, scale-free (`graphcost.data.transforms.compiled.compiled_columns`), which the
  ``default`` row's trees and TGraph read too.

Protocols: ``official`` (train split -> test split), ``lofo`` (leave one family out: train on
every graph of the other families, test on all graphs of the left-out one; the figures average
over families), ``flags`` (the flag dataset `cpu_flags`, official split, tile schema) and
``within`` (ONE program with >= 1,000 measured configurations, split by configuration: 1% or 10%
to train, as many to validate, the rest to test; `graphcost.data.config_split`). ``zero_shot`` (the
tune suite's measured tables, `--tables`: Kendall τ of the shipped pretrained models, or
`--layout-model` / `--flags-model`, on programs never in the training data, per program and space).
Metrics per test graph over ALL its configurations: Kendall tau, OPA, top-1 slowdown; mean over graphs; mean ± std
over seeds. Layout rows also give Kendall tau within each
search mode (``default``: 1-3 tensors moved around the compiler default; ``random``: several
configurations per moved count), where the count heuristic has least to go on.

Noise ceiling: the same metric with the REPEAT measurement as the prediction and the label as the
truth, on the same graphs: what a perfect predictor of an independent measurement would score.

Leave-family-out folds are kept as they finish in benchmarks/results/bench_real_parts/ (``--parts``),
so a stopped run resumes at the next fold; the same command started several times at once shares the
folds out among its processes (each claims the fold it measures; give each ``--threads 1`` on 2 cores),
and ``--first-seed K`` measures further seeds into parts of their own, which a later ``--seeds N`` run
combines. Writes benchmarks/results/bench_real.json and the section "Real CPU data" at the top of
BENCHMARKS.md's cost-model section.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "bench_real.json"
SECTION = "### Real CPU data, with the noise ceiling — `benchmarks/models/bench_real.py`"
PARENT = "## Cost models (issue 3)"
GNNS = {  # row -> (registry model, model config); each at graphcost train's default recipe and budget
    "default": ("tgraph", {}),  # + graphcost train's recipe.MODEL_CONFIG (fit_gnn)
    "tgraph-no-compiled": ("tgraph", {}),  # the default before 2026-11-27: no term for what the compiler did
    "tgraph-paper": ("tgraph", {"cross_scale": "softmax", "change_features": False, "readout": "mean"}),
    "sage": ("sage", {}),
    "kaufman": ("kaufman", {}),
}
MODELS = (*GNNS, "lightgbm", "ridge", "count", "copies", "lightgbm-compiled", "ridge-compiled")
DETERMINISTIC = ("count", "ridge", "copies", "ridge-compiled")  # measured once, whatever --seeds says
WITHIN_FRACTIONS = (0.01, 0.10)


@dataclass
class Record:
    """One graph of the collection: what the non-graph scorers and the metrics need."""

    name: str
    family: str
    split: str
    path: Path
    kind: str
    label: np.ndarray  # (K,) float64 ns
    repeat: np.ndarray | None  # (K,) float64 ns, independent second measurement
    modes: np.ndarray | None  # (K,) str, layout search mode per configuration
    table: np.ndarray  # (K, F) float32 fixed-width configuration features (`config_table`)
    moved: np.ndarray  # (K,) tensors moved off the default layout (tile: flags off the default)
    compiled: np.ndarray | None = None  # (K, 7) what the compiler did (config_compiled_stats), if the file has it
    compiled_table: np.ndarray | None = None  # (K, 7) the table's scale-free compiled columns (NaN without them)


def config_table(path: Path, z) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fixed-width per-configuration features of one npz file in the file's configuration order
    (`graphcost.models.config_table`, what `graphcost train`'s trees use) without, then only, its
    compiled columns; and the moved count."""
    from graphcost.data.transforms.compiled import COMPILED_COLUMNS
    from graphcost.models.config_table import config_table as library_table

    prepared = _prepared(path, dedup=False)
    rows = library_table(prepared)
    full = np.zeros((len(z["config_runtime"]), rows.shape[1]), np.float32)
    full[prepared.config_source_index] = rows
    table, compiled = full[:, :-COMPILED_COLUMNS], full[:, -COMPILED_COLUMNS:]
    if "config_feat" in z.files:  # tile: the number of flags off their default (graphcost.frontend.programs.flags)
        from graphcost.frontend.programs.flags import DEFAULT

        flags = np.asarray(z["config_feat"], np.float32)[:, : len(DEFAULT)]
        return table, compiled, (flags != np.asarray(DEFAULT, np.float32)).sum(1)
    from graphcost.frontend.programs.layouts import moved_tensors

    return table, compiled, moved_tensors(np.asarray(z["node_config_feat"], np.float32))


def load_record(path: Path, family: str, split: str, raw_configs: bool = False, statistic: str = "median") -> Record:
    """One file as a Record; `raw_configs` adds every layout entry, one-hot, to the table (within one
    program the configurable nodes are the same in every file, so the columns line up). The repeat's
    label combines its processes with `statistic`, the collection's (`collect.local.label_statistic`)."""
    from graphcost.measure.cross_process import combine

    with np.load(path, allow_pickle=False) as z:
        table, compiled_table, moved = config_table(path, z)
        if raw_configs and "node_config_feat" in z.files:
            raw = np.asarray(z["node_config_feat"], np.int64).reshape(len(table), -1) + 1  # (K, C * 18) in 0..6
            table = np.hstack([table, np.eye(7, dtype=np.float32)[raw].reshape(len(table), -1)])
        rep = z["config_runtime_repeat_samples"] if "config_runtime_repeat_samples" in z.files else None
        return Record(
            name=path.stem, family=family, split=split, path=path,
            kind="tile" if "config_feat" in z.files else "layout",
            label=np.asarray(z["config_runtime"], np.float64),
            repeat=None if rep is None else combine(rep, statistic, z["config_executable_ids"]
                                                     if "config_executable_ids" in z.files else None),
            modes=np.asarray(z["config_search_mode"]) if "config_search_mode" in z.files else None,
            table=table, moved=moved,
            compiled=np.asarray(z["config_compiled_stats"], np.float64) if "config_compiled_stats" in z.files else None,
            compiled_table=compiled_table)


def read_json_object(path: Path, what: str, field: str, hint: str = "") -> dict:
    """The JSON object at `path` whose `field` holds an object, or exit with one line naming the file and
    what is wrong (`what`: the kind of file, in the message; `hint`: appended to a missing-field message)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        sys.exit(f"{path}: not a readable {what} ({type(exc).__name__}: {exc})")
    if not isinstance(data, dict) or not isinstance(data.get(field), dict):
        sys.exit(f"{path}: field {field!r} is missing or not an object{hint}")
    return data


def read_manifest(root: Path) -> dict:
    """A collection's manifest.json, or exit with one line saying what is wrong with it."""
    return read_json_object(root / "manifest.json", "collection manifest", "graphs",
                            f"; is {root} a graphcost collection?")


def dataset_dir(root: Path) -> Path:
    """`root`, or, where it holds no manifest and is named for a shipped dataset (``--data cpu_zoo_layout``, or
    that dataset's directory in the package, which holds only its packed file), the shipped dataset's directory."""
    from graphcost.datasets import SHIPPED

    if not (root / "manifest.json").is_file() and root.name in SHIPPED:
        from graphcost.data.io.packed import shipped_data_dir

        return shipped_data_dir(root.name)
    return root


def load_records(root: Path) -> list[Record]:
    from graphcost.collect.local import label_statistic

    root = dataset_dir(root)
    manifest = read_manifest(root)
    return [load_record(root / entry["file"], entry["family"], entry["split"], statistic=label_statistic(manifest))
            for _, entry in sorted(manifest["graphs"].items())]


def by_family(records: list[Record]) -> list[Record]:
    """`records` re-split BY FAMILY (`graphcost.data.splits.family_split`, seed 0: whole families per
    side, as the shipped data is split), so validation and test hold families training never saw."""
    from dataclasses import replace

    from graphcost.data.splits import family_split

    side = family_split([(r.name, r.family) for r in records], (0.7, 0.15, 0.15), 0)
    return [replace(r, split=side[r.name]) for r in records]


def graph_metrics(scores: np.ndarray, rec: Record) -> dict:
    """Kendall tau, OPA, top-1 slowdown over all configurations (+ tau within each search mode)."""
    from graphcost import metrics

    m = metrics.evaluate_graph(scores, rec.label, rec.kind)
    row = {"kendall_tau": m["kendall_tau"], "opa": m["opa"], "top1_slowdown": m["top1_slowdown"]}
    if rec.modes is not None:
        for mode in ("default", "random"):
            sel = rec.modes == mode
            if sel.sum() >= 2 and np.ptp(rec.label[sel]) > 0:
                row[f"tau_{mode}"] = metrics.evaluate_graph(scores[sel], rec.label[sel], rec.kind)["kendall_tau"]
    return row


def mean_rows(rows: list[dict]) -> dict:
    keys = sorted({k for r in rows for k in r})
    return {k: float(np.nanmean([r.get(k, np.nan) for r in rows])) for k in keys}


# --- scorers ---------------------------------------------------------------------------------

def _compiled(rec: Record) -> np.ndarray:
    if rec.compiled is None:
        sys.exit(f"{rec.path}: key 'config_compiled_stats' is missing; add it with `graphcost collect --out DIR "
                 "--annotate` and the collection's parameters")
    return rec.compiled


def copies_score(rec: Record) -> np.ndarray:
    """Bytes of the compiled module's copies and transposes: the library's blend prior
    (`graphcost.inference.blend.copies_prior`, which reads a Record as it reads a prepared graph)."""
    from graphcost.inference.blend import copies_prior

    _compiled(rec)  # a file without the statistics: exit naming it
    copies = copies_prior(rec)
    if copies is None:  # the prior is defined on layout graphs only
        sys.exit(f"{rec.path}: --models copies ranks layout graphs by their copied bytes; this is a {rec.kind} graph")
    return copies


def with_compiled(records: list[Record]) -> list[Record]:
    """The records with the library table's compiled columns (`graphcost.data.transforms.compiled`)
    appended to their tables."""
    from dataclasses import replace

    for r in records:
        _compiled(r)  # a file without the statistics: exit naming it
    return [replace(r, table=np.hstack([r.table, r.compiled_table])) for r in records]


def _xy(records: list[Record]) -> tuple[np.ndarray, np.ndarray]:
    """Stacked tables and the log runtime standardised within each graph."""
    x = np.vstack([r.table for r in records])
    y = np.concatenate([(np.log(r.label) - np.log(r.label).mean()) / max(np.log(r.label).std(), 1e-9) for r in records])
    return x, y


def fit_lightgbm(train: list[Record], seed: int, valid: list[Record] | None = None, threads: int = 2):
    """LightGBM regression; with `valid`, the number of rounds (<= 1000) stops early on it."""
    import lightgbm as lgb

    x, y = _xy(train)
    params = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 31,
              "min_data_in_leaf": max(2, min(20, len(y) // 20)), "feature_fraction": 0.8, "bagging_fraction": 0.8,
              "bagging_freq": 1, "seed": seed, "verbose": -1, "num_threads": threads}
    if valid:
        xv, yv = _xy(valid)
        booster = lgb.train(params, lgb.Dataset(x, y), num_boost_round=1000, valid_sets=[lgb.Dataset(xv, yv)],
                            callbacks=[lgb.early_stopping(50, verbose=False)])
    else:
        booster = lgb.train(params, lgb.Dataset(x, y), num_boost_round=300)
    return lambda rec: booster.predict(rec.table, num_iteration=booster.best_iteration or None)


def fit_ridge(train: list[Record], valid: list[Record] | None = None):
    """Ridge regression on the standardised table, w = (XᵀX + λI)⁻¹Xᵀy, or the same in its dual form
    Xᵀ(XXᵀ + λI)⁻¹y when features outnumber configurations (within one program, every raw layout entry);
    λ in {0.1, 1, 10, 100, 1000} by Kendall τ on `valid` (else 10)."""
    from graphcost import metrics

    x, y = _xy(train)
    mu, sd = x.mean(0), x.std(0) + 1e-6
    z = (x - mu) / sd
    dual = z.shape[1] > z.shape[0]
    gram = z @ z.T if dual else z.T @ z

    def make(lam: float):
        eye = np.eye(len(gram))
        w = z.T @ np.linalg.solve(gram + lam * eye, y - y.mean()) if dual else np.linalg.solve(gram + lam * eye,
                                                                                                z.T @ (y - y.mean()))
        return lambda rec: ((rec.table - mu) / sd) @ w

    if not valid:
        return make(10.0)
    best = max((float(np.mean([metrics.evaluate_graph(make(lam)(r), r.label, r.kind)["kendall_tau"] for r in valid])),
                lam) for lam in (0.1, 1.0, 10.0, 100.0, 1000.0))  # fmt: skip
    return make(best[1])


@functools.lru_cache(maxsize=None)
def _prepared(path: Path, dedup: bool):
    """The prepared graph of one file, made once per run (every model, seed and protocol reuses it)."""
    from graphcost.data.transforms.pool import load_prepared

    return load_prepared([path], progress=False, dedup=dedup)[0]


def fit_gnn(row: str, train: list[Record], valid: list[Record], seed: int, args, work: Path):
    from graphcost.train import recipe
    from graphcost.inference.blend import describe, fit_blend
    from graphcost.runs.checkpoint import load_checkpoint
    from graphcost.inference.ranking import ModelScorer
    from graphcost.train.trainer import TrainConfig, Trainer

    model, opts = GNNS[row]
    if model == "sage" and train[0].kind == "tile":
        model = "tile-mlp"
    if row == "default":  # what graphcost train builds with no --model-opt
        opts = {**recipe.MODEL_CONFIG, **opts}
    opts = {**opts, **({} if args.hidden is None else {"hidden": args.hidden})}  # default: each model's defaults
    budget = {"epochs": args.epochs} if args.epochs else {}  # default: graphcost train's (train/recipe.py)
    config = TrainConfig(model=model, model_config=opts, batch_configs=args.batch_configs, seed=seed,
                         device=args.device, progress=False, plots=False, **budget)
    prepared_train = [_prepared(r.path, dedup=True) for r in train]
    prepared_valid = [_prepared(r.path, dedup=False) for r in valid]
    trainer = Trainer(config, prepared_train, prepared_valid, work)
    result = trainer.fit()  # early stopping on the validation graphs; the best validation epoch is kept
    if result.best_path is not None:
        trainer.model.load_state_dict(load_checkpoint(result.best_path)["model"])
    scorer = ModelScorer(trainer.model, trainer.scaler, device=trainer.device)
    blend = None
    # graphcost train's trees and blend (graphcost.inference.blend)
    if row in ("default", "tgraph-no-compiled") and recipe.TREES and prepared_valid:
        blend = fit_blend(scorer.score, prepared_train, prepared_valid, seed=seed)
        print(f"      seed {seed}: {describe(blend[0])}", flush=True)

    def score(rec: Record) -> np.ndarray:
        prepared = _prepared(rec.path, dedup=False)
        scores = scorer.score(prepared)
        if blend is not None:
            scores = blend[0].score(scores, blend[1], prepared)
        full = np.full(len(rec.label), np.nan)
        full[prepared.config_source_index] = scores  # back to the file's configuration order
        return full

    return score


def _seed_stats(per_seed: list[dict]) -> dict:
    """Mean and std over seeds of each metric, and the number of seeds."""
    keys = sorted({k for s in per_seed for k in s})
    out = {k: float(np.nanmean([s.get(k, np.nan) for s in per_seed])) for k in keys}
    out.update({f"{k}_std": float(np.nanstd([s.get(k, np.nan) for s in per_seed])) for k in keys})
    out["seeds"] = len(per_seed)
    return out


def run_split(train: list[Record], valid: list[Record], test: list[Record], models, seeds: int, args,
              work: Path, first_seed: int = 0, keep_seeds: bool = False) -> dict:
    """Every model x seed on one train/test split: per-model mean over test graphs, then mean ± std over
    seeds; ``by_family`` holds the same per family of the test graphs (what leave-family-out folds report).
    ``keep_seeds``: each row also keeps its per-seed rows (``per_seed``; what `combine_seed_parts` joins)."""
    out: dict = {}
    rankable = [r for r in test if len(r.label) >= 2 and np.ptp(r.label) > 0]
    if len(rankable) < len(test):  # one configuration, or all runtimes equal: nothing to rank (as `graphcost evaluate`)
        print(f"  {len(test) - len(rankable)} of {len(test)} test graphs have fewer than 2 distinct runtimes: "
              "not scored", flush=True)
        test = rankable
    families = sorted({r.family for r in test})
    by_family: dict[str, dict] = {f: {} for f in families}
    for model in models:
        per_seed, per_seed_family = [], {f: [] for f in families}
        for seed in range(first_seed, first_seed + (1 if model in DETERMINISTIC else seeds)):
            t0 = time.perf_counter()
            scored = test
            if model == "count":
                score = lambda rec: rec.moved.astype(np.float64)  # noqa: E731
            elif model == "copies":
                score = copies_score
            elif model in ("lightgbm-compiled", "ridge-compiled"):
                fit = fit_lightgbm if model.startswith("lightgbm") else fit_ridge
                extra = (seed, with_compiled(valid), args.threads) if fit is fit_lightgbm else (with_compiled(valid),)
                score, scored = fit(with_compiled(train), *extra), with_compiled(test)
            elif model == "lightgbm":
                score = fit_lightgbm(train, seed, valid, args.threads)
            elif model == "ridge":
                score = fit_ridge(train, valid)
            else:
                score = fit_gnn(model, train, valid, seed, args, work / f"{model}_s{seed}")
            rows = [graph_metrics(score(r), r) for r in scored]
            per_seed.append({**mean_rows(rows), "wall_s": time.perf_counter() - t0})
            for f in families:
                per_seed_family[f].append(mean_rows([m for m, r in zip(rows, test) if r.family == f]))
        out[model] = {**_seed_stats(per_seed), **({"per_seed": per_seed} if keep_seeds else {})}
        for f in families:
            by_family[f][model] = {**_seed_stats(per_seed_family[f]),
                                   **({"per_seed": per_seed_family[f]} if keep_seeds else {})}
        print(f"    {model:<9} tau {out[model]['kendall_tau']:+.3f} ± {out[model]['kendall_tau_std']:.3f}  "
              f"opa {out[model]['opa']:.3f}  top1 {out[model]['top1_slowdown']:.3f}", flush=True)
    with_repeat = [r for r in test if r.repeat is not None]
    if with_repeat:
        out["noise ceiling"] = {**mean_rows([graph_metrics(r.repeat, r) for r in with_repeat]),
                                "graphs": len(with_repeat)}
        for f in families:
            fam = [r for r in with_repeat if r.family == f]
            if fam:
                by_family[f]["noise ceiling"] = {**mean_rows([graph_metrics(r.repeat, r) for r in fam]),
                                                 "graphs": len(fam)}
    if len(families) > 1:
        out["by_family"] = by_family
    return out


def family_folds(records: list[Record], folds: int) -> list[list[str]]:
    """Families in `folds` groups of about equal graph counts (`family_groups`)."""
    counts: dict[str, int] = {}
    for r in records:
        counts[r.family] = counts.get(r.family, 0) + 1
    return family_groups(counts, folds)


def family_groups(counts: dict[str, int], folds: int) -> list[list[str]]:
    """Families (``{family: graphs}``) in `folds` groups of about equal graph counts (largest family first
    into the lightest group); 0 = one family per group. Every family is held out exactly once."""
    if folds <= 0 or folds >= len(counts):
        return [[f] for f in sorted(counts)]
    groups: list[list[str]] = [[] for _ in range(folds)]
    load = [0] * folds
    for fam in sorted(counts, key=lambda f: (-counts[f], f)):
        i = int(np.argmin(load))
        groups[i].append(fam)
        load[i] += counts[fam]
    return [sorted(g) for g in groups]


def official(records: list[Record], models, args, work: Path) -> dict:
    by = {s: [r for r in records if r.split == s] for s in ("train", "valid", "test")}
    print(f"  official split: train {len(by['train'])} / valid {len(by['valid'])} / test {len(by['test'])} graphs",
          flush=True)
    return {"test_graphs": len(by["test"]), **run_split(by["train"], by["valid"] or by["train"][:2], by["test"],
                                                         models, args.seeds, args, work / "official")}


def fold_part(args, data: Path, models, group: list[str], seeds: int | None = None,
              first_seed: int | None = None) -> tuple[Path, dict]:
    """Where one leave-family-out fold's result is kept (``--parts``), and the settings it must match:
    a stopped run resumes at the first fold not yet finished, on this machine or, committed, on another.
    Seeds ``first_seed .. first_seed + seeds - 1`` (default: ``--first-seed`` and ``--seeds``); a part of
    seeds from 0 is named ``-s{seeds}``, one from a later seed ``-s{seeds}from{first_seed}``."""
    seeds = args.seeds if seeds is None else seeds
    first_seed = getattr(args, "first_seed", 0) if first_seed is None else first_seed
    key = {"data": data.name, "group": group, "models": list(models), "seeds": seeds, "epochs": args.epochs,
           "batch_configs": args.batch_configs, "hidden": args.hidden, "family_split": args.family_split,
           "family_folds": args.family_folds}
    if first_seed:
        key["first_seed"] = first_seed
    if "default" in models:  # the recipe's blend rules: a part made under others is measured again
        from graphcost.inference.blend import BLEND_METRIC, PRIOR_RULE

        key["blend_metric"], key["blend_prior"] = BLEND_METRIC, PRIOR_RULE
    name = f"lofo-{data.name}-{'_'.join(group)}-{'_'.join(models)}-s{seeds}{f'from{first_seed}' if first_seed else ''}"
    return args.parts / f"{name}.json", key


def _read_part(part: Path, key: dict) -> dict | None:
    """The result a part holds if it was made with `key`; None if it is missing, damaged or another's."""
    try:
        kept = json.loads(part.read_text(encoding="utf-8")) if part.is_file() else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:  # a damaged part is measured again
        print(f"    {part}: unreadable ({type(exc).__name__}), this fold runs again", flush=True)
        return None
    return kept if isinstance(kept, dict) and kept.get("key") == key else None


def _seed_rows(row: dict) -> list[dict]:
    """The per-seed rows of one model's fold result: stored since 2026-12-01; a one-seed row is its own."""
    if "per_seed" in row:
        return row["per_seed"]
    if row.get("seeds") == 1:
        return [{k: v for k, v in row.items() if not k.endswith("_std") and k != "seeds"}]
    raise ValueError("a part of several seeds without per-seed rows cannot be combined")


def combine_seed_parts(results: list[dict]) -> dict:
    """One fold's result from parts of disjoint seed ranges of the same models (e.g. seed 0 measured on one
    day, seeds 1-2 on another, or on two machines): every model's per-seed rows joined, then mean ± std over
    them again, overall and per family; a deterministic row (`DETERMINISTIC`) and the noise ceiling are
    taken from the first part."""
    def join(rows: list[dict], model: str) -> dict:
        if model == "noise ceiling":
            return rows[0]
        seeds = [s for r in rows for s in _seed_rows(r)]
        seeds = seeds[:1] if model in DETERMINISTIC else seeds
        return {**_seed_stats(seeds), "per_seed": seeds}

    out = {m: join([r[m] for r in results], m) for m in results[0] if m != "by_family"}
    if "by_family" in results[0]:
        out["by_family"] = {f: {m: join([r["by_family"][f][m] for r in results], m) for m in rows}
                            for f, rows in results[0]["by_family"].items()}
    return out


def seed_parts(args, data: Path, models, group: list[str]) -> dict | None:
    """The fold's result for seeds 0 .. ``--seeds`` - 1 combined from parts of narrower seed ranges
    (``-s1`` + ``-s2from1`` for 3 seeds, say; the first range found at each seed), or None if they do
    not cover every seed."""
    results, seed = [], 0
    while seed < args.seeds:
        for width in range(args.seeds - seed, 0, -1):
            kept = _read_part(*fold_part(args, data, models, group, seeds=width, first_seed=seed))
            if kept is not None:
                results.append(kept["result"])
                seed += width
                break
        else:
            return None
    if len(results) < 2:
        return None
    try:
        return combine_seed_parts(results)
    except (KeyError, TypeError, ValueError) as exc:  # a part edited by hand, or of another layout
        print(f"    seed parts of {'_'.join(group)} cannot be combined ({type(exc).__name__}: {exc}); "
              "this fold runs again", flush=True)
        return None


def claim_fold(part: Path) -> Path | None:
    """Claim the fold whose result goes to `part` for this process: a ``.claim`` file beside it, made with
    O_EXCL and holding its owner ``host:pid`` (`graphcost.tuning.study.process_owner`, as a tuning
    reservation). None if a live process holds it, so several processes started with the same command
    share the folds out (one thread each on a multi-core machine). A claim whose process is gone
    (`owner_alive`) is taken over; the caller removes its claim when done."""
    from graphcost.tuning.study import owner_alive, process_owner

    claim = part.with_name(part.name + ".claim")
    claim.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                owner = claim.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                owner = ""
            host, _, pid = owner.rpartition(":")
            alive = bool(host) and pid.isdigit() and owner_alive(owner)  # not host:pid: its writer died mid-write
            if alive:
                return None
            claim.unlink(missing_ok=True)  # stale: its process is gone
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(process_owner())
        return claim
    return None


def lofo(records: list[Record], models, args, work: Path, data: Path) -> dict | None:
    """Leave families out: every family is held out once (alone, or with ``--family-folds K`` in one of
    K groups of families, a stricter test that trains on less); the models train on every graph of the
    other families. The result averages the per-family means (each family weighs the same). Each
    finished fold is kept in ``--parts`` (`fold_part`), so a stopped run loses at most one fold. A fold
    another process is measuring (`claim_fold`) is skipped; then the result is None (nothing to average
    yet) and the last process to finish, or a re-run, averages every part."""
    from graphcost.guards.atomic import atomic_write_json

    first_seed = getattr(args, "first_seed", 0)
    per_family: dict[str, dict] = {}
    elsewhere: list[str] = []  # folds another process is measuring
    for group in family_folds(records, args.family_folds):
        test = [r for r in records if r.family in group]
        rest = [r for r in records if r.family not in group and r.split != "valid"]
        valid = [r for r in records if r.family not in group and r.split == "valid"]  # selection only, never trained on
        print(f"  leave out {','.join(group)}: train {len(rest)} / valid {len(valid)} / test {len(test)} graphs",
              flush=True)
        part, key = fold_part(args, data, models, group)
        kept = _read_part(part, key)
        if kept is not None:
            print(f"    kept from {part.name} ({kept['date']})", flush=True)
            res = kept["result"]
        elif not first_seed and (combined := seed_parts(args, data, models, group)) is not None:
            print("    combined from parts of fewer seeds (-s*from*)", flush=True)
            atomic_write_json({"key": key, "date": date.today().isoformat(), "machine": args.machine,
                               "combined_from_seed_parts": True, "result": combined}, part)
            res = combined
        else:
            claim = claim_fold(part)
            if claim is None:
                print(f"    being measured by another process ({part.name}.claim): skipped", flush=True)
                elsewhere.append(",".join(group))
                continue
            try:
                res = run_split(rest, valid, test, models, args.seeds, args, work / f"lofo_{'_'.join(group)}",
                                first_seed=first_seed, keep_seeds=True)
                atomic_write_json({"key": key, "date": date.today().isoformat(), "machine": args.machine,
                                   "result": res}, part)
            finally:
                claim.unlink(missing_ok=True)
        fold = res.pop("by_family", {group[0]: res})
        per_family.update({f: {m: {k: v for k, v in row.items() if k != "per_seed"} for m, row in rows.items()}
                           for f, rows in fold.items()})
    if first_seed:
        print(f"  seeds {first_seed}..{first_seed + args.seeds - 1} kept in their fold parts; not averaged: "
              "run --seeds N without --first-seed to combine them with the other seeds' parts", flush=True)
        return None
    if elsewhere:
        done = [g for g in elsewhere if _read_part(*fold_part(args, data, models, g.split(","))) is not None]
        if len(done) < len(elsewhere):  # (a part of another key on disk is not done: it is being measured again)
            print(f"  {len(elsewhere) - len(done)} fold(s) still measured by other processes: not averaged; "
                  "the same command, run again when they finish, averages every fold", flush=True)
            return None
        return lofo(records, models, args, work, data)  # every fold is on disk now: read them all
    names = sorted({m for res in per_family.values() for m in res})
    avg = {}
    for model in names:
        rows = [per_family[f][model] for f in per_family if model in per_family[f]]
        keys = sorted({k for r in rows for k in r if not k.endswith("_std")})
        avg[model] = {k: float(np.nanmean([r.get(k, np.nan) for r in rows])) for k in keys}
        for k in keys:  # seed spread: mean over families of the per-family std
            if f"{k}_std" in rows[0]:
                avg[model][f"{k}_std"] = float(np.mean([r[f"{k}_std"] for r in rows]))
        avg[model]["families"] = len(rows)
    graphs = {f: sum(r.family == f for r in records) for f in per_family}
    return {"families": per_family, "family_graphs": graphs, "family_folds": args.family_folds, **avg}


def flags(records: list[Record], models, args, work: Path) -> dict:
    """The flag dataset (tile schema), official split."""
    return official(records, models, args, work / "flags")


def within(root: Path, fraction: float, models, args, work: Path) -> dict:
    """ONE program split by configuration (`graphcost.data.config_split`): `fraction` of the
    configurations to train, as many to validate, the rest to test; a new split per seed. Every
    graph of the collection at `root` is one program; the figures average over programs and splits."""
    from graphcost.data.config_split import split_by_configuration

    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    runs = []
    for name, entry in sorted(manifest["graphs"].items()):
        for seed in range(args.seeds):
            parts = split_by_configuration(root / entry["file"], work / f"within_{fraction}_{name}_s{seed}", fraction,
                                           fraction, seed=seed)
            rec = {s: load_record(p, entry["family"], s, raw_configs=True) for s, p in parts.items()}
            print(f"  {name}, split seed {seed}: train {len(rec['train'].label)} / valid {len(rec['valid'].label)} / "
                  f"test {len(rec['test'].label)} configurations", flush=True)
            runs.append(run_split([rec["train"]], [rec["valid"]], [rec["test"]], models, 1, args,
                                  work / f"within_{fraction}_{name}_s{seed}_models", first_seed=seed))
    out = {"programs": sorted(manifest["graphs"]), "fraction": fraction}
    for model in {m for r in runs for m in r}:
        rows = [r[model] for r in runs if model in r]
        keys = sorted({k for r in rows for k in r if not k.endswith("_std") and isinstance(r[k], float)})
        out[model] = {k: float(np.nanmean([r.get(k, np.nan) for r in rows])) for k in keys}
        out[model].update({f"{k}_std": float(np.nanstd([r.get(k, np.nan) for r in rows])) for k in keys})
        out[model]["seeds"] = len(rows)
    return out


# what remeasure_suite_tables.py's resume and zero_shot read of its JSON
REMEASURED_NEEDED = ("configs", "codes", "remeasured_ratio", "table_vs_remeasured")


def read_remeasured(path: Path) -> dict:
    """`benchmarks/tune/remeasure_suite_tables.py`'s JSON at `path`, or exit with one line saying which field of which
    table is wrong."""
    data = read_json_object(path, "re-measurement", "programs")
    for name, row in data["programs"].items():
        missing = [k for k in REMEASURED_NEEDED if not isinstance(row, dict) or k not in row]
        if missing:
            sys.exit(f"{path}: programs.{name}: field {missing[0]!r} is missing")
    return data


def zero_shot(tables: Path, runs: dict[str, Path | None], remeasured: Path | None = None) -> dict:
    """Kendall τ between a cost model's scores and the measured runtimes of every table of the
    tune suite's programs (`benchmarks/tune/tune_suite.py`, never in the training data: a test checks
    HLO fingerprints), per program and space: how well the model ranks programs it has never
    seen. `runs`: the run scoring each graph kind (None: the shipped pretrained model).

    `remeasured` (`benchmarks/tune/remeasure_suite_tables.py`'s JSON, when it exists): for each table, a
    sample of its configurations timed again in fresh processes. Per program it adds the
    noise ceiling (τ between the table and the re-measurement on the sample) and the model's τ
    against the re-measured median (``kendall_tau_remeasured``, same sample)."""
    from scipy.stats import kendalltau

    sys.path.insert(0, str(ROOT / "benchmarks" / "tune"))
    import bench_tune as bt
    import graphcost.pretrained as pretrained
    from graphcost.tuning.scoring import GraphModelScorer

    runs = {k: Path(v) if v else pretrained.shipped_model_dir(k) for k, v in runs.items()}
    def shown(p: Path) -> str:
        return str(p.resolve().relative_to(ROOT)) if p.resolve().is_relative_to(ROOT) else str(p)

    out: dict = {"models": {k: shown(v) for k, v in runs.items()}, "tables": shown(tables), "programs": {}}
    second_look = {}
    if remeasured is not None and remeasured.exists():
        second_look = read_remeasured(remeasured)["programs"]
        out["remeasured"] = shown(remeasured)
    for path in sorted(tables.glob("*.json")):
        table = bt.suite_table(path)
        name, space_name = table.data["program"], table.data["space"]
        scorer = GraphModelScorer([runs[k] for k in table.space.kinds], table.program, table.space)
        tau = float(kendalltau(scorer(table.configs), table.ratios).statistic)
        row = out["programs"].setdefault(space_name, {})[name] = {"kendall_tau": tau, "configs": len(table.configs)}
        again = second_look.get(path.stem)  # "moe-flags": the table's own re-measured sample
        if again:
            codes = [tuple(c) for c in again["codes"]]
            row.update({"noise_ceiling": again["table_vs_remeasured"], "remeasured_configs": len(codes),
                        "kendall_tau_remeasured": float(kendalltau(
                            scorer(codes), np.median(np.asarray(again["remeasured_ratio"]), axis=0)).statistic)})
        print(f"  {name} {space_name}: zero-shot tau {tau:+.3f} over {len(table.configs)} configurations"
              + (f"; {row['kendall_tau_remeasured']:+.3f} on {len(codes)} re-measured (ceiling "
                 f"{row['noise_ceiling']:+.3f})" if again else ""), flush=True)
    for space_name, progs in out["programs"].items():
        taus = [v["kendall_tau"] for v in progs.values()]
        out[space_name] = {"median_kendall_tau": float(np.median(taus)), "mean_kendall_tau": float(np.mean(taus)),
                           "below_0.2": int(sum(t < 0.2 for t in taus)), "programs": len(taus)}
        for key in ("noise_ceiling", "kendall_tau_remeasured"):
            vals = [v[key] for v in progs.values() if key in v]
            if vals:
                out[space_name][f"median_{key}"] = float(np.median(vals))
    return out


def keep_earlier_rows(previous: dict | None, res: dict) -> dict:
    """`res` plus the model rows of an earlier run of the same protocol that this run did not
    redo (``--models`` subset), each marked with the date and command of the run that made it;
    only from a run on the same data, split and family folds. Rows with a ``source`` (another
    benchmark's, on its own data) are always kept."""
    meta = (previous or {}).get("meta", {})
    for key, row in (previous or {}).items():  # rows another benchmark put here (bench_kernels.py --into)
        if isinstance(row, dict) and "source" in row and key not in res:
            res[key] = row
    same = ("data", "family_split", "family_folds")  # rows of a run on other data (or another split) never mix
    if not previous or any(meta.get(k) != res.get("meta", {}).get(k) for k in same):
        return res
    for model in MODELS:
        if model in previous and model not in res:
            res[model] = {**previous[model], "earlier_run": previous[model].get(
                "earlier_run", f"{meta.get('date', '?')}, `{meta.get('command', '?')}`")}
            for family, rows in res.get("families", {}).items():  # leave-family-out: its per-family rows too
                if model in previous.get("families", {}).get(family, {}):
                    rows[model] = previous["families"][family][model]
    return res


# --- report ------------------------------------------------------------------------------------

def _cell(row: dict, key: str) -> str:
    if key not in row or not np.isfinite(row[key]):
        return "—"
    std = row.get(f"{key}_std")
    return f"{row[key]:.3f} ± {std:.3f}" if std is not None and row.get("seeds", 1) > 1 else f"{row[key]:.3f}"


def _within_key(p: str) -> float:
    try:
        return float(p[7:])
    except ValueError:
        return math.inf


def markdown(report: dict) -> str:
    lines = [SECTION, "",
             "All data REAL, measured with the cross-process protocol (label = median of 3 processes; 5 for cpu_zoo_flags). "
             "GNNs: graphcost train's default recipe and budget (`graphcost.train.recipe`: early stopping and the best "
             "epoch on the validation data), no TTA; LightGBM rounds and ridge λ chosen on the validation data; mean ± "
             "std over seeds (within one program: over splits). Noise ceiling: the metric of an independent repeat "
             "measurement (as many other processes, another time) against the label. `default` is what `graphcost train` "
             "does with no options. JSON: `benchmarks/results/bench_real.json`.", ""]
    keys = [("kendall_tau", "Kendall τ"), ("tau_default", "τ default-mode"), ("tau_random", "τ random-mode"),
            ("opa", "OPA"), ("top1_slowdown", "top-1 slowdown")]
    titles = {"official": "cpu_layout, official split (train → test graphs)",
              "lofo": "Layout, leave families out",
              "lofo_flags": "Flags, leave families out",
              "flags": "cpu_flags (XLA flag configurations, tile schema), official split",
              **{p: f"One program, split by configuration: {float(p[7:]):.3g} of the configurations to train, as "
                 "many to validate, the rest to test" for p in sorted(report["results"], key=_within_key)
                 if p.startswith("within_")}, "zero_shot": "zero-shot"}
    for proto, title in titles.items():
        if proto not in report["results"]:
            continue
        if proto == "zero_shot":
            lines += zero_shot_table(report["results"][proto])
            continue
        res, meta = report["results"][proto], report["results"][proto]["meta"]
        what = f"data {meta.get('data', report['data'])}" + (f" ({', '.join(res['programs'])})" if "programs" in res else "")
        lines += [f"**{title}** — {what}; `{meta['command']}`; {meta['machine']}, {meta['date']}, load average "
                  f"{meta['load']}; epochs {meta['epochs'] or 'default'}, {meta['batch_configs']} configurations per "
                  f"batch, hidden {meta['hidden'] or 'each model default'}, {meta['seeds']} seeds, "
                  f"{meta['wall_min']:.0f} min.", "",
                  "| model | " + " | ".join(k[1] for k in keys) + " |", "| --- |" + " --- |" * len(keys)]
        earlier = sorted({res[m]["earlier_run"] for m in MODELS if m in res and "earlier_run" in res[m]})
        for model in [*MODELS, "noise ceiling"]:
            if model in res:
                mark = "†" * (earlier.index(res[model]["earlier_run"]) + 1) if "earlier_run" in res[model] else ""
                some = res[model].get("families", 0) < len(res.get("families", {}))  # lofo: a repeat on some only
                name = f"{model} ({res[model]['families']} of {len(res['families'])} families)" if some else model
                lines.append(f"| {name}{mark} | " + " | ".join(_cell(res[model], k) for k, _ in keys) + " |")
        lines += ["", *(f"{'†' * (i + 1)} row from an earlier run at that run's recipe: {run}." for i, run in
                        enumerate(earlier))] if earlier else []
        lines.append("")
        if "families" in res:
            lines += family_table(res)
    lines += report.get("notes", [])
    return "\n".join(lines).rstrip() + "\n"


def family_table(res: dict) -> list[str]:
    """Kendall τ of each held-out family (mean ± std over seeds) for every model, and its noise ceiling."""
    fams = res["families"]
    cols = [m for m in [*MODELS, "noise ceiling"] if any(m in fams[f] for f in fams)]
    how = (f"in {res['family_folds']} groups of families" if res.get("family_folds") else "one family at a time")
    lines = [f"Kendall τ per held-out family (held out {how}):", "",
             "| family | graphs | " + " | ".join(cols) + " |", "| --- | ---: |" + " ---: |" * len(cols)]
    for fam in sorted(fams):
        cells = [_cell(fams[fam][m], "kendall_tau") if m in fams[fam] else "—" for m in cols]
        lines.append(f"| {fam} | {res.get('family_graphs', {}).get(fam, '—')} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def zero_shot_table(res: dict) -> list[str]:
    """Per-program zero-shot τ of each space, with the median."""
    spaces = sorted(res["programs"])
    names = sorted({n for sp in spaces for n in res["programs"][sp]})
    meta = res["meta"]
    lines = [f"**Zero-shot on the tune suite's tables** (`{res['tables']}`; programs never in the training data) — "
             f"models {', '.join(f'{k}: {v}' for k, v in res['models'].items())}; `{meta['command']}`; {meta['machine']}, "
             f"{meta['date']}, load average {meta['load']}.", "",
             "| program | " + " | ".join(f"{sp} τ" for sp in spaces) + " |", "| --- |" + " ---: |" * len(spaces)]
    again = [sp for sp in spaces if "median_noise_ceiling" in res[sp]]  # spaces with a re-measured sample
    if again:
        lines[0] += (f" Re-measured: a sample of each {', '.join(again)} table timed again in fresh processes "
                     f"(`{res.get('remeasured', '?')}`): the model's τ on those labels, and the noise ceiling (τ "
                     "between the table and the re-measurement on the sample).")
        lines[2] = lines[2][:-2] + " | " + " | ".join(f"{sp} τ, re-measured | {sp} noise ceiling" for sp in again) + " |"
        lines[3] += " ---: | ---: |" * len(again)

    def cell(sp: str, n: str, key: str) -> str:
        row = res["programs"][sp].get(n, {})
        return f"{row[key]:+.3f}" if key in row else "—"

    for n in names:
        cells = [cell(sp, n, "kendall_tau") for sp in spaces]
        cells += [cell(sp, n, k) for sp in again for k in ("kendall_tau_remeasured", "noise_ceiling")]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    medians = [f"**{res[sp]['median_kendall_tau']:+.3f}**" for sp in spaces]
    medians += [f"**{res[sp][f'median_{k}']:+.3f}**" for sp in again for k in ("kendall_tau_remeasured", "noise_ceiling")]
    lines.append("| **median** | " + " | ".join(medians) + " |")
    return [*lines, ""]


def replace_section(text: str, section: str) -> str:
    """Put `section` first under PARENT, replacing an earlier copy of it (up to the next heading)."""
    start = text.find(SECTION)
    if start >= 0:
        ends = [i for i in (text.find("\n## ", start + 1), text.find("\n### ", start + 1)) if i >= 0]
        end = min(ends) + 1 if ends else len(text)
        text = text[:start] + text[end:]
    parent = text.find(PARENT)
    if parent < 0:
        return text.rstrip() + "\n\n" + PARENT + "\n\n" + section
    at = text.find("\n", parent) + 2  # right under the heading and its blank line
    return text[:at] + section + "\n" + text[at:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="collection directory (default: shipped cpu_layout)")
    parser.add_argument("--protocols", default="official,lofo,flags,within",
                        help="official, lofo (--data; every family held out in turn), lofo_flags (the same on "
                        "--flags-data), flags (cpu_flags), within (--within), zero_shot (--tables)")
    parser.add_argument("--flags-data", type=Path, default=None, help="flag collection (default: shipped cpu_flags)")
    parser.add_argument("--within", type=Path, default=None,
                        help="collection of programs with >= 1,000 configurations each (default: shipped cpu_layout_1k)")
    parser.add_argument("--within-fractions", default=",".join(f"{f:g}" for f in WITHIN_FRACTIONS),
                        help="within: training fractions, comma-separated (as many to validate; e.g. "
                        "0.025,0.0833333,0.25 = 30, 100, 300 of cpu_layout_1k's 1,200)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="lofo protocols: measure seeds first-seed .. first-seed + seeds - 1 into their own "
                        "parts (-s{seeds}from{first}); a later run with --seeds N and no --first-seed combines "
                        "parts whose seed ranges cover 0 .. N - 1 instead of training again")
    parser.add_argument("--family-split", action="store_true",
                        help="re-split --data by family (graphcost.data.splits.family_split, seed 0) before the "
                        "protocols: validation (early stopping, blend, LightGBM rounds) on families never trained on")
    parser.add_argument("--family-folds", type=int, default=0,
                        help="lofo protocols: hold families out in this many groups (0: one family at a time)")
    parser.add_argument("--parts", type=Path, default=ROOT / "benchmarks" / "results" / "bench_real_parts",
                        help="lofo protocols: where each finished fold is kept (a re-run resumes from them)")
    parser.add_argument("--epochs", type=int, default=None, help="default: graphcost train's (train/recipe.py)")
    parser.add_argument("--batch-configs", type=int, default=64, help="as graphcost train")
    parser.add_argument("--hidden", type=int, default=None, help="default: each model's own default width")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tables", type=Path, default=ROOT / "benchmarks" / "results" / "tune_wide" / "tables",
                        help="zero_shot: the tune suite's measured tables (benchmarks/tune/bench_tune.py measure)")
    parser.add_argument("--remeasured", type=Path, default=ROOT / "benchmarks" / "results" / "suite_remeasured.json",
                        help="zero_shot: a sample of each table timed again in fresh processes "
                        "(benchmarks/tune/remeasure_suite_tables.py): the noise ceiling, and τ on those labels")
    parser.add_argument("--layout-model", type=Path, default=None, help="zero_shot: layout run (default: shipped)")
    parser.add_argument("--flags-model", type=Path, default=None, help="zero_shot: tile run (default: shipped)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-markdown", action="store_true", help="do not rewrite BENCHMARKS.md")
    parser.add_argument("--render", action="store_true", help="only rewrite BENCHMARKS.md from the --out JSON")
    args = parser.parse_args()
    if args.first_seed < 0:
        sys.exit(f"--first-seed: must be >= 0, got {args.first_seed}")
    if args.first_seed and not any(p in ("lofo", "lofo_flags") for p in args.protocols.split(",")):
        sys.exit("--first-seed: only the lofo and lofo_flags protocols keep seed parts; add one to --protocols")
    if args.render:
        from graphcost.guards.atomic import atomic_write_text

        bench = ROOT / "BENCHMARKS.md"
        report = json.loads(args.out.read_text(encoding="utf-8"))
        atomic_write_text(bench, replace_section(bench.read_text(encoding="utf-8"), markdown(report)))
        print(markdown(report))
        return

    import torch

    from graphcost.guards.atomic import atomic_write_json, atomic_write_text
    from graphcost.datasets import default_dataset_dir

    torch.set_num_threads(args.threads)
    data = args.data or default_dataset_dir()
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        sys.exit(f"--models: unknown {unknown}; choose from {', '.join(MODELS)}")
    records = load_records(data)
    if args.family_split:
        records = by_family(records)
    print(f"{data}: {len(records)} graphs, {len({r.family for r in records})} families, "
          f"{sum(r.repeat is not None for r in records)} with a repeat measurement", flush=True)
    machine = f"{os.cpu_count()}-core CPU ({platform.machine()}), torch {torch.__version__}, {args.threads} thread(s)"
    args.machine = machine
    report = {"data": str(Path(data).resolve().relative_to(ROOT)) if Path(data).resolve().is_relative_to(ROOT)
              else str(data), "results": {}}
    if args.out.exists():  # other protocols' results (run separately) are kept
        report["results"] = json.loads(args.out.read_text(encoding="utf-8")).get("results", {})
    datasets_dir = Path(default_dataset_dir()).parent
    flags_data = args.flags_data or datasets_dir / "cpu_flags"
    within_data = args.within or datasets_dir / "cpu_layout_1k"
    fractions = [float(f) for f in args.within_fractions.split(",") if f]
    runs = {"official": lambda w: ("official", data, official(records, models, args, w)),
            "lofo": lambda w: ("lofo", data, lofo(records, models, args, w, data)),
            "lofo_flags": lambda w: ("lofo_flags", flags_data, lofo(load_records(flags_data), models, args, w,
                                                                    flags_data)),
            "flags": lambda w: ("flags", flags_data, flags(load_records(flags_data), models, args, w)),
            **{f"within_{f:g}": (lambda w, f=f: (f"within_{f:g}", within_data, within(within_data, f, models, args, w)))
               for f in fractions},
            "zero_shot": lambda w: ("zero_shot", args.tables, zero_shot(args.tables, {"layout": args.layout_model,
                                                                                       "tile": args.flags_model},
                                                                            args.remeasured))}
    def named(p: str, name: str) -> bool:  # "within" names within_0.01 and within_0.1; "lofo" is not lofo_flags
        return p == name or (name == "within" and p.startswith("within_"))

    chosen = [p for name in args.protocols.split(",") for p in runs if named(p, name)]
    unknown = [name for name in args.protocols.split(",") if not any(named(p, name) for p in runs)]
    if unknown:
        sys.exit(f"--protocols: unknown {unknown}; choose from official, lofo, lofo_flags, flags, within, zero_shot")
    done: list[str] = []  # the protocols this process has measured
    with tempfile.TemporaryDirectory(prefix="bench-real-") as tmp:
        for proto in chosen:
            load0, t0 = os.getloadavg(), time.perf_counter()
            _, used, res = runs[proto](Path(tmp) / proto)
            if res is None:  # lofo folds still measured by other processes
                continue
            load1 = os.getloadavg()
            res["meta"] = {"command": "python benchmarks/models/bench_real.py " + " ".join(sys.argv[1:]), "machine": machine,
                           "date": date.today().isoformat(), "load": f"{load0[0]:.2f} → {load1[0]:.2f}",
                           "seeds": args.seeds, "epochs": args.epochs, "batch_configs": args.batch_configs,
                           "hidden": args.hidden, "models": models, "wall_min": (time.perf_counter() - t0) / 60,
                           "data": Path(used).name, "family_split": args.family_split,
                           "family_folds": args.family_folds}
            if args.out.exists():  # another bench_real process may have written its protocols meanwhile:
                on_disk = json.loads(args.out.read_text(encoding="utf-8")).get("results", {})  # theirs win,
                report["results"] = {**on_disk, **{p: report["results"][p] for p in done}}  # except ours
            report["results"][proto] = keep_earlier_rows(report["results"].get(proto), res)
            done.append(proto)
            atomic_write_json(report, args.out)  # after every protocol: a stopped run keeps what it finished
    print(markdown(report))
    if not args.no_markdown:
        bench = ROOT / "BENCHMARKS.md"
        atomic_write_text(bench, replace_section(bench.read_text(encoding="utf-8"), markdown(report)))


if __name__ == "__main__":
    main()
