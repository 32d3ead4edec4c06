"""LayerDAG on TPU Tile with 10-fold cross-validation (issue 5): the surrogate Pearson ratio over all 630 graphs.

    python benchmarks/layerdag/bench_layerdag_kfold.py --out OUT [--folds-to-run 0 2 4] [--train-only] [--threads 1]
    python benchmarks/layerdag/bench_layerdag_kfold.py --out OUT --report [--json benchmarks/results/layerdag_tpu_kfold.json]
    python benchmarks/layerdag/bench_layerdag_kfold.py --out OUT_126 --train-graphs 126 --folds-to-run 0 1 2   # learning curve

Why: the single 80/10/10 split's test set has 63 graphs, and on raw labels its Pearson is carried by
its few largest labels (one graph at 20x the median), so one split's ratio says as much about that
split as about the generator. Here the real TPU Tile graphs (../shared/data/tpu_tile_graphs/val.npz)
are cut into 10 seeded parts (`graphcost.data.splits.kfold_train_valid_test`); fold f tests on part f, validates on part f − 1 and
trains on the other 8, so each fold has the sizes of the 80/10/10 split (504 / 63 / 63) and fold 9
IS that split. Per fold the default TPU recipe of bench_layerdag.py is trained (100 epochs, label
dropout 0.1, lr 3e-3 cosine, per-module best.pt, seed 0), one DAG is generated per real train/valid
label (guidance w = 0.75, `--sample-seeds`), and the same surrogate regressor is fitted on real and
on synthetic train/valid (`--surrogate-repeats` fits each, seeds 0..k-1). Every graph is a test
graph exactly once, so the test predictions of the 10 folds are pooled and scored together: one
Pearson per (fit seed[, sampling seed]) over all 630 graphs, averaged over fit seeds, and the ratio
of the means — the protocol of LayerDAG §V-A on a test set the size of the paper's (its TPU Tile
test split is about 630 of 6,301 graphs). The per-fold ratios are reported too.

Learning curve (`--train-graphs N`): each fold's training graphs are cut to a seeded nested subset
of N, used for the generator and the real-trained regressor alike (the protocol at a smaller
training set), trained for the full fold's optimiser steps; one OUT per N (OUT/setting.json).

Resumable: each fold's run directory resumes training, and OUT/fold{f}/result.json (with its test
predictions) is written once the fold is scored, so several processes can take disjoint folds
(`--folds-to-run`); `--report` pools whatever folds are finished and says which are missing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from graphcost.guards.atomic import atomic_write_json
from graphcost.layerdag.datasets import load_dataset
from graphcost.layerdag.datasets.tpu_tile import NUM_CATEGORIES
from graphcost.layerdag.quality.surrogate import (
    SurrogateConfig,
    fit_real_surrogates,
    fit_synthetic_predictions,
    label_fidelity,
    score_predictions,
)
from graphcost.layerdag.experiment import evaluate_model
from graphcost.layerdag.train import BEST, LayerDAGTrainConfig, load_checkpoint, load_model, train_layerdag
from layerdag_recipe import (  # benchmarks/layerdag/layerdag_recipe.py
    LR,
    LR_DECAY,
    SURROGATE_EPOCHS,
    SURROGATE_REPEATS,
    TPU_EPOCHS,
    TPU_GUIDANCE,
    TPU_LABEL_DROPOUT,
)

FOLDS = 10


def subset_train(splits: dict, train_graphs: int | None) -> dict:
    """The learning-curve setting: train cut to a seeded subset of n graphs (the first n of one fixed
    permutation, so smaller subsets are nested in larger ones); valid and test stay whole."""
    if train_graphs is None:
        return splits
    train = splits["train"]
    if not 0 < train_graphs <= len(train):
        raise SystemExit(f"--train-graphs: a fold has {len(train)} training graphs, asked for {train_graphs}")
    keep = np.sort(np.random.default_rng(0).permutation(len(train))[:train_graphs])
    return splits | {"train": [train[i] for i in keep]}


def train_fold(out: Path, fold: int, splits: dict, full_train: int, device: str) -> Path:
    """Train fold `fold`'s generator on `splits`; a train subset of n of the fold's `full_train` graphs
    gets TPU_EPOCHS x full_train / n epochs, so it takes the optimiser steps (and cosine schedule) of
    the full fold."""
    run = out / f"fold{fold}" / "run"
    epochs = round(TPU_EPOCHS * full_train / len(splits["train"]))
    cfg = LayerDAGTrainConfig(epochs=epochs, lr=LR, lr_decay=LR_DECAY, device=device)
    t0 = time.perf_counter()
    train_layerdag(splits["train"], run, cfg, valid_dags=splits["valid"], resume=True, num_categories=NUM_CATEGORIES,
                   progress=False, label_dropout=TPU_LABEL_DROPOUT)  # fmt: skip
    print(f"fold {fold}: trained in {time.perf_counter() - t0:.0f} s", flush=True)
    return run


def score_fold(out: Path, fold: int, run: Path, splits: dict, sample_seeds: int, scfg: SurrogateConfig, device: str) -> dict:
    """Generate and score fold `fold` for sampling seeds 0..sample_seeds-1; OUT/fold{f}/result.json
    is rewritten after each seed, so an interrupted fold resumes at its next seed."""
    path = out / f"fold{fold}" / "result.json"
    res = json.loads(path.read_text()) if path.is_file() else {}
    if res and res.get("surrogate") != asdict(scfg):
        raise SystemExit(f"{path}: scored with surrogate {res.get('surrogate')}, asked for {asdict(scfg)}; use another --out")
    y_test = [d.label for d in splits["test"]]
    res = res or {"fold": fold, "surrogate": asdict(scfg), "test_labels": y_test, "seeds": {},
                  "module_epochs": load_checkpoint(run / BEST).get("module_epochs")}  # fmt: skip
    model, real_fits = None, None
    for seed in range(sample_seeds):
        if str(seed) in res["seeds"]:
            continue
        model = model or load_model(run).to(device)
        if real_fits is None:
            real_fits = fit_real_surrogates(splits, NUM_CATEGORIES, scfg)
            res["real_predictions"] = [p.tolist() for p in real_fits.test_predictions]
        r, gen = evaluate_model(model, splits, "tpu-tile", seed=seed, progress=False, guidance=TPU_GUIDANCE, surrogate=False)
        n_train = len(splits["train"])
        syn = fit_synthetic_predictions(gen[:n_train], gen[n_train:], splits["test"], NUM_CATEGORIES, scfg)
        cell = score_predictions(np.array(y_test), real_fits.test_predictions, syn)
        cell |= {"label_fidelity": label_fidelity(gen, real_fits), "synthetic_predictions": [p.tolist() for p in syn],
                 "mean_nodes": r["mean_nodes"], "real_mean_nodes": r["real_mean_nodes"], "mmd": r["mmd"], "mmd_kernel": r["mmd_kernel"],
                 "uniqueness": r["uniqueness"], "novelty": r["novelty"],
                 "sample_seconds_per_graph": r["sample_seconds_per_graph"]}  # fmt: skip
        res["seeds"][str(seed)] = cell
        atomic_write_json(res, path)
        print(f"fold {fold} seed {seed}: ratio {cell['ratio']:.3f} (real {cell['pearson_real']:.3f}, synthetic "
              f"{cell['pearson_synthetic']:.3f}), on log labels {cell['ratio_log']:.3f}", flush=True)
    return res


def pooled_report(out: Path) -> dict:
    """Pool the finished folds' test predictions (module docstring) and summarise the per-fold ratios."""
    folds = {}
    for f in range(FOLDS):
        path = out / f"fold{f}" / "result.json"
        if path.is_file():
            folds[f] = json.loads(path.read_text())
    if not folds:
        raise SystemExit(f"{out}: no fold has a result.json yet")
    seeds = sorted(set.intersection(*(set(r["seeds"]) for r in folds.values())), key=int)
    if not seeds:
        raise SystemExit(f"{out}: the finished folds share no sampling seed")
    y = np.concatenate([r["test_labels"] for r in folds.values()])  # (n_pooled,)
    real = np.concatenate([np.array(r["real_predictions"]) for r in folds.values()], axis=1)  # (repeats, n_pooled)
    pooled = {}
    for seed in seeds:
        syn = np.concatenate([np.array(r["seeds"][seed]["synthetic_predictions"]) for r in folds.values()], axis=1)
        pooled[seed] = {k: v for k, v in score_predictions(y, real, syn).items() if not k.endswith("_by_seed")}
    per_fold = {f: [r["seeds"][s]["ratio"] for s in seeds] for f, r in folds.items()}
    ratios = [pooled[s]["ratio"] for s in seeds]
    setting = out / "setting.json"
    summary = {
        "train_graphs": json.loads(setting.read_text()).get("train_graphs") if setting.is_file() else None,
        "folds_done": sorted(folds), "folds_missing": [f for f in range(FOLDS) if f not in folds],
        "sample_seeds": [int(s) for s in seeds], "pooled_test_graphs": int(len(y)),
        "pooled_by_seed": pooled,
        "pooled_ratio_mean": statistics.mean(ratios),
        "pooled_ratio_sd": statistics.stdev(ratios) if len(ratios) > 1 else 0.0,
        "pooled_ratio_log_mean": statistics.mean(pooled[s]["ratio_log"] for s in seeds),
        "per_fold_ratio": {str(f): v for f, v in per_fold.items()},
        "per_fold_ratio_mean": statistics.mean(statistics.mean(v) for v in per_fold.values()),
        "per_fold_ratio_sd": statistics.stdev([statistics.mean(v) for v in per_fold.values()]) if len(folds) > 1 else 0.0,
        "label_fidelity_mean": statistics.mean(r["seeds"][s]["label_fidelity"] for r in folds.values() for s in seeds),
        "module_epochs": {str(f): r["module_epochs"] for f, r in folds.items()},
    }  # fmt: skip
    print(f"pooled over folds {summary['folds_done']} ({len(y)} test graphs), sampling seeds {', '.join(seeds)}, "
          f"training graphs per fold: {summary['train_graphs'] or 'all'}")
    for s in seeds:
        q = pooled[s]
        print(f"  seed {s}: Pearson real {q['pearson_real']:.3f}, synthetic {q['pearson_synthetic']:.3f}, ratio "
              f"{q['ratio']:.3f}; on log labels {q['pearson_real_log']:.3f} / {q['pearson_synthetic_log']:.3f} = {q['ratio_log']:.3f}")
    print(f"pooled ratio {summary['pooled_ratio_mean']:.3f} ± {summary['pooled_ratio_sd']:.3f}; "
          f"per-fold ratio {summary['per_fold_ratio_mean']:.3f} ± {summary['per_fold_ratio_sd']:.3f} over folds")
    for f, r in folds.items():
        cells = [r["seeds"][s] for s in seeds]
        print(f"  fold {f}: ratio " + " / ".join(f"{c['ratio']:.3f}" for c in cells) + " (Pearson real / synthetic "
              + ", ".join(f"{c['pearson_real']:.3f} / {c['pearson_synthetic']:.3f}" for c in cells)
              + f"), largest test label {max(r['test_labels']):.1f}")
    if summary["folds_missing"]:
        print(f"MISSING folds {summary['folds_missing']}: the pooled figure covers only the finished ones")
    return summary


def check_setting(out: Path, train_graphs: int | None) -> None:
    """OUT holds runs of one training-set size only: OUT/setting.json records it on first use."""
    path = out / "setting.json"
    if path.is_file():
        had = json.loads(path.read_text()).get("train_graphs")
        if had != train_graphs:
            raise SystemExit(f"{path}: OUT was started with --train-graphs {had}, asked for {train_graphs}; use another --out")
    else:
        atomic_write_json({"train_graphs": train_graphs}, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--folds-to-run", type=int, nargs="+", default=list(range(FOLDS)))
    p.add_argument("--train-only", action="store_true", help="train the folds' generators, score nothing")
    p.add_argument("--report", action="store_true", help="only pool the finished folds and print/write the summary")
    p.add_argument("--json", type=Path, default=None, help="with --report: also write the summary here")
    p.add_argument("--sample-seeds", type=int, default=1, help="sampling seeds 0..N-1 per fold")
    p.add_argument("--surrogate-repeats", type=int, default=SURROGATE_REPEATS)
    p.add_argument("--surrogate-epochs", type=int, default=SURROGATE_EPOCHS)
    p.add_argument("--train-graphs", type=int, default=None,
                   help="learning curve: train generator and real surrogate on a nested seeded subset of this many of "
                        "the fold's training graphs, with the full fold's optimiser steps (valid/test unchanged)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    if a.report:
        summary = pooled_report(a.out)
        if a.json is not None:
            atomic_write_json(summary, a.json)
        return
    bad = [f for f in a.folds_to_run if not 0 <= f < FOLDS]
    if bad:
        p.error(f"--folds-to-run: folds are 0..{FOLDS - 1}, got {bad}")
    torch.set_num_threads(a.threads)
    scfg = SurrogateConfig(epochs=a.surrogate_epochs, repeats=a.surrogate_repeats)
    for f in a.folds_to_run:
        full = load_dataset("tpu-tile", seed=0, fold=(f, FOLDS))
        splits = subset_train(full, a.train_graphs)  # a bad --train-graphs fails here, before OUT is touched
        check_setting(a.out, a.train_graphs)
        run = train_fold(a.out, f, splits, len(full["train"]), a.device)
        if not a.train_only:
            score_fold(a.out, f, run, splits, a.sample_seeds, scfg, a.device)


if __name__ == "__main__":
    main()
