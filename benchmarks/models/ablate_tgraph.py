"""Ablation of TGraph and its recipe on the VALIDATION split of real CPU layout data (issue 24).

    python benchmarks/models/ablate_tgraph.py [--data DIR] [--seeds 3] [--shard 0/2] [--threads 1]
    python benchmarks/models/ablate_tgraph.py --render        # table -> BENCHMARKS.md

Every variant changes ONE thing of the base recipe (`BASE`) and is trained on the training graphs
and scored on every configuration of every validation graph with the final epoch's weights (no
early stopping, no selection, no TTA). The test split is never read. Metrics per validation graph:
Kendall τ over all configurations, τ within each search mode (default / random), and ``τ @ 16``:
τ when the same model scores the graph in groups of 16 configurations instead of all at once
(cross-configuration attention makes a score depend on the other configurations of its group;
training groups hold `batch_configs`).

Reference rows on the same validation graphs: LightGBM on the per-configuration table and the
moved-tensor count (`bench_real.py`), and the noise ceiling (repeat measurement vs label).

Each run's result is its own JSON file under benchmarks/results/ablation_tgraph/, so the script
resumes where it stopped and can run as several shards side by side (``--shard k/n``).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks" / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite
import bench_real  # noqa: E402  (the records, the tree baseline and the metrics)

RESULTS = ROOT / "benchmarks" / "results" / "ablation_tgraph"
SECTION = BASE_SECTION = "### TGraph ablation on the validation split — `benchmarks/models/ablate_tgraph.py`"

# the base recipe: graphcost train's defaults of the morning of 2026-11-25 except the width (128, between the
# 64-256 of the grid); the readout was then the paper's mean (the variant "readout=sum" is today's default)
BASE = {"model": "tgraph", "model_config": {"hidden": 128, "readout": "mean"}, "epochs": 20, "lr": 1e-3, "batch_configs": 64,
        "loss": "hinge"}
# variant -> (model_config changes, TrainConfig changes); each changes one thing of BASE
VARIANTS: dict[str, tuple[dict, dict]] = {
    "base": ({}, {}),
    "cross_scale=softmax (paper eq. 6)": ({"cross_scale": "softmax"}, {}),
    "no change features": ({"change_features": False}, {}),
    "readout=sum": ({"readout": "sum"}, {}),
    "readout=mean (paper eq. 7)": ({"readout": "mean"}, {}),
    # two changes: what helped under the mean readout, re-measured with the sum (today's default)
    "readout=sum + lr 3e-3": ({"readout": "sum"}, {"lr": 3e-3}),
    "readout=sum + batch 32": ({"readout": "sum"}, {"batch_configs": 32}),
    "readout=sum + norm=config": ({"readout": "sum", "norm": "config"}, {}),
    "no cross attention": ({"cross_attention": False}, {}),
    "no channel attention": ({"channel_attention": False}, {}),
    "norm=config (per configuration)": ({"norm": "config"}, {}),
    "norm=none": ({"norm": "none"}, {}),
    "hidden 64": ({"hidden": 64}, {}),
    "hidden 256": ({"hidden": 256}, {}),
    "epochs 40": ({}, {"epochs": 40}),
    "epochs 10": ({}, {"epochs": 10}),
    "lr 3e-3": ({}, {"lr": 3e-3}),
    "lr 3e-4": ({}, {"lr": 3e-4}),
    "batch 32 configurations": ({}, {"batch_configs": 32}),
    "loss listmle": ({}, {"loss": "listmle"}),
    "previous default (hidden 256, softmax, no change features)": (
        {"hidden": 256, "cross_scale": "softmax", "change_features": False}, {}),
    "sage (TpuGraphs baseline), same budget": ({"model": "sage"}, {}),
    "kaufman, same budget": ({"model": "kaufman"}, {}),
}
# --within: ONE program split by configuration; the base is graphcost train's default recipe (early
# stopping on the validation part, best epoch), since a fixed epoch count means nothing there
WITHIN_BASE = {"model": "tgraph", "model_config": {}, "lr": 1e-3, "batch_configs": 64, "loss": "hinge"}


def run_one(name: str, seed: int, train, valid, args, work: Path) -> dict:
    from graphcost.inference.ranking import ModelScorer
    from graphcost.train.trainer import TrainConfig, Trainer

    model_changes, train_changes = VARIANTS[name]
    model_changes = dict(model_changes)
    model = model_changes.pop("model", BASE["model"])
    base = WITHIN_BASE if args.within else BASE
    width = {"hidden": base["model_config"]["hidden"]} if "hidden" in base["model_config"] else {}
    model_config = {**base["model_config"], **model_changes} if model == "tgraph" else width
    settings = {**{k: v for k, v in base.items() if k not in ("model", "model_config")}, **train_changes}
    stopping = {} if args.within else {"patience": 0}  # within: the recipe's early stopping and best epoch
    config = TrainConfig(model=model, model_config=model_config, seed=seed, device="cpu", progress=False, plots=False,
                         **stopping, **settings)
    t0 = time.perf_counter()
    trainer = Trainer(config, [bench_real._prepared(r.path, dedup=True) for r in train],
                      [bench_real._prepared(r.path, dedup=False) for r in valid], work)
    result = trainer.fit()
    if args.within and result.best_path is not None:
        from graphcost.runs.checkpoint import load_checkpoint

        trainer.model.load_state_dict(load_checkpoint(result.best_path)["model"])
    rows, rows16 = [], []
    for chunk, out in ((128, rows), (16, rows16)):
        scorer = ModelScorer(trainer.model, trainer.scaler, batch_size=chunk, device=trainer.device)
        for rec in valid:
            prepared = bench_real._prepared(rec.path, dedup=False)
            full = np.full(len(rec.label), np.nan)
            full[prepared.config_source_index] = scorer.score(prepared)
            out.append(bench_real.graph_metrics(full, rec))
    res = bench_real.mean_rows(rows)
    res["tau_at_16"] = bench_real.mean_rows(rows16)["kendall_tau"]
    res["best_epoch_tau"] = max(r["valid_kendall_tau"] for r in trainer.history)  # selection-biased, for information
    res.update(variant=name, seed=seed, wall_s=time.perf_counter() - t0, load=os.getloadavg()[0])
    return res


def references(train, valid, seeds: int) -> dict:
    out = {}
    per_seed = [bench_real.mean_rows([bench_real.graph_metrics(bench_real.fit_lightgbm(train, s)(r), r) for r in valid])
                for s in range(seeds)]
    out["lightgbm (trees on the configuration table)"] = {k: float(np.mean([p[k] for p in per_seed])) for k in per_seed[0]}
    out["count heuristic"] = bench_real.mean_rows([bench_real.graph_metrics(r.moved.astype(float), r) for r in valid])
    rep = [r for r in valid if r.repeat is not None]
    if rep:
        out["noise ceiling"] = bench_real.mean_rows([bench_real.graph_metrics(r.repeat, r) for r in rep])
    return out


def summarise(files: list[Path]) -> dict:
    by: dict[str, list[dict]] = {}
    for f in files:
        r = json.loads(f.read_text(encoding="utf-8"))
        by.setdefault(r["variant"], []).append(r)
    out = {}
    for name, runs in by.items():
        keys = ("kendall_tau", "tau_default", "tau_random", "tau_at_16", "best_epoch_tau", "wall_s")
        out[name] = {k: float(np.mean([r[k] for r in runs])) for k in keys}
        out[name]["wall_s"] = float(np.median([r["wall_s"] for r in runs]))  # a run paused for a collection is an outlier
        out[name].update({f"{k}_std": float(np.std([r[k] for r in runs])) for k in keys})
        out[name]["seeds"] = len(runs)
    return out


def markdown(meta: dict, rows: dict, refs: dict) -> str:
    if meta.get("within"):
        what = (f"ONE program split by configuration (split seed 0): {meta['within']:.0%} of its configurations to "
                f"train, as many to VALIDATE (the rest, the test part, is not read). Base: `graphcost train`'s default "
                "recipe (TGraph defaults: hidden 256, readout sum, cross_scale mean, change features, reference norm; "
                "early stopping on the validation part, best epoch). Each row changes one thing; mean ± std over seeds.")
    else:
        what = (f"{meta['train']} training graphs, {meta['valid']} VALIDATION graphs (the test split is not read). Base: "
                "TGraph hidden 128, 20 epochs, lr 1e-3, 64 configurations a batch, pairwise hinge, cross_scale mean, "
                "change features on, reference norm, mean readout (the paper's eq. 7; the recipe of the morning of "
                "2026-11-25). Each row changes one thing; final-epoch weights; mean ± std over seeds.")
    lines = [SECTION, "",
             f"`{meta['command']}`; {meta['machine']}; {meta['date']}; load {meta['load']}. Data: {meta['data']} (REAL), "
             f"{what} `τ @ 16`: the same model scoring groups of 16 configurations instead of 64 or more at once.", "",
             "| variant | τ (valid) | τ default-mode | τ random-mode | τ @ 16 | best-epoch τ | s / run (median) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    base = rows.get("base", {}).get("kendall_tau")
    for name in VARIANTS:
        if name not in rows:
            continue
        r = rows[name]
        delta = f" ({r['kendall_tau'] - base:+.3f})" if base is not None and name != "base" else ""
        lines.append(f"| {name} | {r['kendall_tau']:.3f} ± {r['kendall_tau_std']:.3f}{delta} | {r['tau_default']:.3f} | "
                     f"{r['tau_random']:.3f} | {r['tau_at_16']:.3f} | {r['best_epoch_tau']:.3f} | {r['wall_s']:.0f} |")
    for name, r in refs.items():
        lines.append(f"| *{name}* | {r['kendall_tau']:.3f} | {r.get('tau_default', float('nan')):.3f} | "
                     f"{r.get('tau_random', float('nan')):.3f} | — | — | — |")
    lines += ["", *meta.get("notes", [])] if meta.get("notes") else []
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="collection directory (default: shipped cpu_layout)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--variants", default="", help="';'-separated subset of the variant names (default: all)")
    parser.add_argument("--shard", default="0/1", help="k/n: run every n-th (variant, seed) starting at k")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--within", type=float, default=None,
                        help="FRACTION: ablate within ONE program (default data: shipped cpu_layout_1k) split by "
                             "configuration, FRACTION to train and as many to validate (split seed 0)")
    parser.add_argument("--render", action="store_true", help="only write the table into BENCHMARKS.md")
    args = parser.parse_args()

    import torch

    from graphcost.guards.atomic import atomic_write_json, atomic_write_text
    from graphcost.datasets import default_dataset_dir

    global RESULTS, SECTION
    torch.set_num_threads(args.threads)
    if args.within:
        data = args.data or default_dataset_dir().parent / "cpu_layout_1k"
        train, valid = within_records(data, args.within)
        RESULTS = RESULTS.with_name(f"ablation_tgraph_within_{args.within:g}")
        SECTION = SECTION.replace("validation split", f"validation part of one program ({args.within:.0%} to train)")
    else:
        data = args.data or default_dataset_dir()
        records = bench_real.load_records(data)
        train = [r for r in records if r.split == "train"]
        valid = [r for r in records if r.split == "valid"]
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.render:
        meta = json.loads((RESULTS / "meta.json").read_text(encoding="utf-8"))
        refs = references(train, valid, args.seeds)
        text = markdown(meta, summarise(sorted(RESULTS.glob("run_*.json"))), refs)
        bench = ROOT / "BENCHMARKS.md"
        atomic_write_text(bench, put_section(bench.read_text(encoding="utf-8"), text))
        print(text)
        return
    names = [n.strip() for n in args.variants.split(";") if n.strip()] or list(VARIANTS)
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        sys.exit(f"--variants: unknown {unknown}")
    k, n = (int(x) for x in args.shard.split("/"))
    jobs = [(name, seed) for name in names for seed in range(args.seeds)][k::n]
    load0 = os.getloadavg()[0]
    meta_path = RESULTS / "meta.json"
    if not meta_path.exists():
        atomic_write_json({"command": "python benchmarks/models/ablate_tgraph.py " + " ".join(sys.argv[1:]),
                           "machine": f"{os.cpu_count()}-core CPU ({platform.machine()}), torch {torch.__version__}, "
                                      f"{args.threads} thread(s) per run", "date": date.today().isoformat(),
                           "load": f"{load0:.2f} at start", "data": str(data.name), "train": len(train),
                           "valid": len(valid), "within": args.within}, meta_path)
    with tempfile.TemporaryDirectory(prefix="ablate-") as tmp:
        for i, (name, seed) in enumerate(jobs):
            path = RESULTS / f"run_{_slug(name)}_s{seed}.json"
            if path.exists():
                continue
            res = run_one(name, seed, train, valid, args, Path(tmp) / f"{i}")
            atomic_write_json(res, path)
            print(f"[{i + 1}/{len(jobs)}] {name} seed {seed}: τ {res['kendall_tau']:.3f} (default {res['tau_default']:.3f}, "
                  f"random {res['tau_random']:.3f}, @16 {res['tau_at_16']:.3f}) {res['wall_s']:.0f} s", flush=True)


def within_records(data: Path, fraction: float) -> tuple[list, list]:
    """The train and valid parts of every program of `data` split by configuration (split seed 0,
    as bench_real's first within-program split); the test part is written but never read."""
    from graphcost.data.config_split import split_by_configuration

    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    work = Path(tempfile.mkdtemp(prefix="ablate-within-"))  # read while the process runs, removed at its exit
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    train, valid = [], []
    for name, entry in sorted(manifest["graphs"].items()):
        parts = split_by_configuration(data / entry["file"], work / name, fraction, fraction, seed=0)
        train.append(bench_real.load_record(parts["train"], entry["family"], "train", raw_configs=True))
        valid.append(bench_real.load_record(parts["valid"], entry["family"], "valid", raw_configs=True))
    return train, valid


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)[:60]


def _section_end(text: str, start: int) -> int:
    ends = [i for i in (text.find("\n## ", start + 1), text.find("\n### ", start + 1)) if i >= 0]
    return min(ends) + 1 if ends else len(text)


def put_section(text: str, section: str) -> str:
    """Replace this script's section, or put it right after the ablation's (else bench_real's) section."""
    if SECTION in text:
        start = text.index(SECTION)
        return text[:start] + section + "\n" + text[_section_end(text, start):]
    after = next((h for h in (BASE_SECTION, bench_real.SECTION) if h in text), None)
    at = _section_end(text, text.index(after)) if after else len(text)
    return text[:at] + section + "\n" + text[at:]


if __name__ == "__main__":
    main()
