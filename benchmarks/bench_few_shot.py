"""Benchmark: a user's own small measurement set (few-shot): graphcost's default against a plain LightGBM.

    python benchmarks/bench_few_shot.py [--splits 3] [--sizes 30,100,300] [--work .work/few_shot]

One program's configurations are split by configuration (`graphcost.data.config_split`, seeds 0, 1, 2):
N to train (30 / 100 / 300), V to validate (30 / 50 / 150: the validation sizes of a real TPU check),
the rest held out as the test configurations, never used for training or for any choice. Scored by
Kendall τ on the test configurations, mean over the splits:

* ``default``: `graphcost train --data-dir SPLIT` with no options (`graphcost.fit(RunSpec(data_dir=...))`),
  then `graphcost evaluate --split test` (TTA 10): the graph model blended with the trees and a prior,
  the blend chosen on the validation configurations;
* ``trees``: the same run's trees (``trees.txt``) alone; ``graph_model``: its graph model alone (TTA 10);
  ``prior``: the blend's model-free prior alone (the count of moved layouts); ``best_single``: the best of these
  three on the test configurations, which no choice could know (the blend's target: never below it by more than
  the validation noise);
* ``lightgbm_plain``: five lines of LightGBM on the flattened per-node ``node_config_feat`` (K, C · 18)
  of the training file: num_leaves 15, min_data_in_leaf 3, learning rate 0.05, 200 rounds, no early
  stopping, the log runtime as the target (as `benchmarks/models/bench_trees_within.py`'s plain LightGBM);
  ``lightgbm_plain_raw``: the same on the runtime itself (at 30 synthetic configurations far worse: 0.16 against
  0.47 on split 0, a few slow configurations dominate its squared error).

Datasets: ``synthetic_layout`` (SYNTHETIC: `graphcost.data.synth.one_program`, 372 nodes, 24 configurable,
30,000 random configurations, no default, a known non-additive runtime; its test configurations are a seeded
sample of 6,000 of the held-out ones) and ``cpu_layout_1k`` (REAL: one LSTM, 1,200 configurations measured
on a CPU, shipped with graphcost).

The graph model is the expensive part; its scores (validation: as `graphcost train` scores them to choose
the blend, TTA 0; test: as `graphcost evaluate` does, TTA 10) are kept in ``--work`` per split, so a rerun
(without ``--graph-only``) refits only the trees and the blend with the library as it is now, exactly as `graphcost
train` would after the same graph model (its training does not depend on the trees), and writes them into
the run directory. Results: benchmarks/results/bench_real.json keys ``few_shot`` ({dataset: {N: {row: τ}}},
means and ``_std`` over the splits) and ``few_shot_about`` (protocol, data, date, load), read-modify-write,
atomically, every other key kept. Other processes may share the cores: ``--graph-only --worker I/N``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "bench_real.json"
VALID = {30: 30, 100: 50, 300: 150}  # training configurations -> validation configurations
TEST_SAMPLE = 6000  # the synthetic set's test: a seeded sample of its held-out configurations
PLAIN = {"objective": "regression", "num_leaves": 15, "min_data_in_leaf": 3, "learning_rate": 0.05, "verbose": -1}


def dataset_file(name: str, work: Path) -> Path:
    if name == "cpu_layout_1k":
        from graphcost.datasets import shipped_dataset_dir

        return next(iter(sorted((shipped_dataset_dir("cpu_layout_1k") / "train").glob("*.npz"))))
    from graphcost.data.synth.one_program import write_one_program_layout

    path = work / "data" / "synthetic_layout.npz"
    if not path.is_file():
        write_one_program_layout(path, num_configs=30_000, seed=3)
    return path


def make_split(src: Path, cell: Path, n: int, seed: int) -> dict[str, Path]:
    """train / valid / test files of one split (made once; a test of more than TEST_SAMPLE configurations
    is a seeded sample of them)."""
    from graphcost.data.config_split import split_by_configuration

    k = len(np.load(src)["config_runtime"])
    split = cell / "data"
    files = {s: split / s / src.name for s in ("train", "valid", "test")}
    if not all(f.is_file() for f in files.values()):
        split_by_configuration(src, split, n / k, VALID[n] / k, seed=seed, overwrite=True)
        held = len(np.load(files["test"])["config_runtime"])
        if held > TEST_SAMPLE:
            part = split_by_configuration(files["test"], cell / "sample", TEST_SAMPLE / held, 0.0, seed=seed,
                                          overwrite=True)
            os.replace(part["train"], files["test"])
    return files


def graph_scores(cell: Path, files: dict[str, Path], progress: bool) -> dict[str, np.ndarray]:
    """Train the default run once (no options) and keep its graph model's validation (TTA 0) and test
    (TTA 10) scores."""
    import dataclasses

    from graphcost.data.transforms.preprocess import prepare_graph
    from graphcost.inference.ensemble import EnsemblePredictor
    from graphcost.train.fit import fit
    from graphcost.train.spec import RunSpec

    cache = cell / "graph_scores.npz"
    if cache.is_file():
        with np.load(cache) as z:
            return {k: z[k] for k in z.files}
    spec = RunSpec(data_dir=str(files["train"].parents[1]))
    spec = dataclasses.replace(spec, config=dataclasses.replace(spec.config, progress=progress))
    fit(spec, out=cell / "run", overwrite=True, report=lambda line: None)
    out = {}
    for split, tta in (("valid", 0), ("test", 10)):
        model = EnsemblePredictor.load([cell / "run"], device="cpu", tta=tta, trees=False)
        out[split] = model.score(prepare_graph(files[split], dedup=False))
    from graphcost.guards.atomic import atomic_write

    with atomic_write(cache) as f:
        np.savez(f, **out)
    return out


def tau(scores: np.ndarray, runtime: np.ndarray) -> float:
    from graphcost import metrics

    return float(metrics.evaluate_graph(np.asarray(scores, np.float64), np.asarray(runtime, np.float64),
                                        "layout")["kendall_tau"])


def score_cell(cell: Path, files: dict[str, Path], graph: dict[str, np.ndarray], seed: int) -> dict:
    """The trees and the blend as `graphcost train` fits them now (`graphcost.train.fit.fit_trees`, with the graph
    model's scores kept), written into the run directory, and every row's test τ."""
    import lightgbm as lgb

    from graphcost.data.transforms.pool import load_prepared
    from graphcost.data.transforms.preprocess import prepare_graph
    from graphcost.inference.blend import describe, fit_blend, prior_scores, write_blend
    from graphcost.models.config_table import config_table

    train = load_prepared([files["train"]], progress=False)  # as `graphcost train` reads them
    valid = load_prepared([files["valid"]], progress=False, dedup=False)
    blend, trees = fit_blend(lambda g: graph["valid"], train, valid, seed=0, threads=1)
    write_blend(cell / "run", blend, trees)
    test = prepare_graph(files["test"], dedup=False)
    table = config_table(test)
    tree_test = trees.score(test, table)
    prior = prior_scores(blend.prior_kind, test, table) if blend.prior else None
    row = {"default": tau(blend.combine(graph["test"], tree_test, prior), test.runtime),
           "trees": tau(tree_test, test.runtime), "graph_model": tau(graph["test"], test.runtime),
           "prior": tau(prior_scores(blend.prior_kind, test, table), test.runtime), "blend": describe(blend)}
    row["best_single"] = max(row["trees"], row["graph_model"], row["prior"])  # the best component, known on test only
    raw = {s: np.load(files[s]) for s in ("train", "test")}
    x = {s: np.asarray(z["node_config_feat"], np.float32).reshape(len(z["config_runtime"]), -1) for s, z in raw.items()}
    y = np.asarray(raw["train"]["config_runtime"], np.float64)
    for key, target in (("lightgbm_plain", np.log(y)), ("lightgbm_plain_raw", y)):
        booster = lgb.train({**PLAIN, "seed": seed, "num_threads": 1}, lgb.Dataset(x["train"], target), 200)
        row[key] = tau(booster.predict(x["test"]), raw["test"]["config_runtime"])
    return row


def write_results(summary: dict, about: dict) -> None:
    """Read-modify-write bench_real.json's ``few_shot`` ({dataset: {N: {row: τ}}}) and ``few_shot_about`` (the
    protocol, the data, the date and the load) keys, atomically, every other key kept."""
    from graphcost.guards.atomic import atomic_write_json

    data = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {}
    data["few_shot"] = summary
    data["few_shot_about"] = about
    atomic_write_json(data, RESULTS)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="synthetic_layout,cpu_layout_1k")
    p.add_argument("--sizes", default="30,100,300")
    p.add_argument("--splits", type=int, default=3)
    p.add_argument("--work", type=Path, default=ROOT / ".work" / "few_shot")
    p.add_argument("--graph-only", action="store_true",
                   help="train the graph models and keep their scores (several processes: --worker); no results")
    p.add_argument("--worker", default="0/1",
                   help="I/N: this process takes every N-th cell (share out the graph models)")
    p.add_argument("--progress", action="store_true")
    args = p.parse_args()
    me, of = (int(v) for v in args.worker.split("/"))
    if of > 1:  # several processes share the cores
        import torch

        torch.set_num_threads(1)
    sizes = [int(s) for s in args.sizes.split(",")]
    cells = [(seed, name, n) for seed in range(args.splits) for name in args.datasets.split(",") for n in sizes]
    rows: dict = {}
    for i, (seed, name, n) in enumerate(cells):
        cell = args.work / name / f"n{n}_s{seed}"
        if args.graph_only:
            if i % of == me:  # else another worker's
                t0 = time.time()
                graph_scores(cell, make_split(dataset_file(name, args.work), cell, n, seed), args.progress)
                print(f"{name} n={n} split {seed}: graph model {time.time() - t0:.0f} s", flush=True)
            continue
        if not (cell / "graph_scores.npz").is_file():
            print(f"{name} n={n} split {seed}: no graph model yet (--graph-only trains it); left out", flush=True)
            continue
        files = make_split(dataset_file(name, args.work), cell, n, seed)
        row = score_cell(cell, files, graph_scores(cell, files, args.progress), seed)
        rows.setdefault(name, {}).setdefault(str(n), []).append(row)
        print(f"{name} n={n} split {seed}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else v
                                                         for k, v in row.items()), flush=True)
    if args.graph_only:
        return
    about = {"protocol": "one program split by configuration (seeds 0..S-1): N train, V valid "
                         f"({', '.join(f'{n}: {v}' for n, v in VALID.items())}), Kendall tau on the held-out test "
                         "configurations (synthetic_layout: a seeded sample of 6,000), mean over the splits",
             "synthetic_layout": "SYNTHETIC (graphcost.data.synth.one_program: 372 nodes, 24 configurable, 30,000 "
                                 "random configurations, no default, simulated runtimes, lognormal noise 0.08)",
             "cpu_layout_1k": "REAL (shipped: one LSTM, 1,200 measured layout configurations)",
             "script": "benchmarks/bench_few_shot.py", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
             "load": Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").is_file() else None}
    summary: dict = {}
    for name, by_n in rows.items():
        summary[name] = {}
        for n, runs in by_n.items():
            keys = [k for k, v in runs[0].items() if isinstance(v, float)]
            summary[name][n] = {k: round(float(np.mean([r[k] for r in runs])), 4) for k in keys}
            summary[name][n].update({f"{k}_std": round(float(np.std([r[k] for r in runs])), 4) for k in keys})
            summary[name][n]["splits"] = len(runs)
            summary[name][n]["blends"] = [r["blend"] for r in runs]
    write_results(summary, about)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
