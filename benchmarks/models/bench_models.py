"""Benchmark: TGraph vs the TpuGraphs layout baseline (GraphSAGE, `sage`), plus TGraph ablations.

    python benchmarks/models/bench_models.py [--epochs 5] [--graphs 25] [--threads 2] [--no-markdown]
    python benchmarks/models/bench_models.py --device cuda --no-markdown --out bench_models_cuda.json

Every model gets the same budget on the same data: the same training graphs, epochs, batch of
configurations, optimiser/schedule (TGraph §2.4.2), seed, and validation over ALL configurations
of every validation graph (no TTA). Rows:

* tgraph                   full TGraph (channel + cross-configuration attention, edges)
* tgraph -channel-attn     TGraph Table 3 ablation: no channel-wise self-attention
* tgraph -cross-attn       no cross-configuration attention
* tgraph -edges            no graph edges (no message passing)
* sage                     TpuGraphs layout baseline (3-layer GraphSAGE)

Datasets:

* SYNTHETIC layout:xla:random from `graphcost.data.synth.collection` (simulated runtimes; labelled so);
* the REAL CPU dataset shipped in `graphcost/datasets` when it is installed.

Reports the final-epoch validation Kendall tau, OPA, top-1/top-10 slowdown and training
throughput (configurations / second of optimisation steps). Writes
benchmarks/results/bench_models.json and replaces the "Cost models (issue 3)" section of
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from graphcost.guards.atomic import atomic_write_text

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "bench_models.json"
SECTION = "### Training quality and throughput — `benchmarks/models/bench_models.py`"
PARENT = "## Cost models (issue 3)"

VARIANTS = [
    ("tgraph", "tgraph", {}),
    ("tgraph -channel-attn", "tgraph", {"channel_attention": False}),
    ("tgraph -cross-attn", "tgraph", {"cross_attention": False}),
    ("tgraph -edges", "tgraph", {"use_edges": False}),
    ("sage", "sage", {}),
]


def synthetic_data(root: Path, graphs: int) -> Path:
    from graphcost.data.synth.collection import write_synthetic_collection

    write_synthetic_collection(
        root, "layout:xla:random", num_graphs=graphs, seed=0, split_fractions=(0.8, 0.2, 0.0),
        max_nodes=400, max_configs=300, progress=False,
    )  # fmt: skip
    return root


def run_dataset(name: str, data_dir: Path | None, collection: str | None, args, out_dir: Path, seeds: int) -> dict:
    import numpy as np

    from graphcost.data.io.locate import resolve_splits
    from graphcost.data.transforms.pool import load_prepared
    from graphcost.train.trainer import TrainConfig, Trainer

    splits = resolve_splits(data_dir, collection, seed=0, max_graphs=args.max_graphs)
    train = load_prepared(splits.files["train"], progress=False)
    valid = load_prepared(splits.files["valid"], progress=False, dedup=False)  # every configuration
    if not valid:
        raise SystemExit(f"{name}: no validation graphs")
    info = {
        "dataset": name, "train_graphs": len(train), "valid_graphs": len(valid),
        "valid_configs": int(sum(g.num_configs for g in valid)), "seeds": seeds,
        "train_nodes_mean": float(sum(g.num_nodes for g in train) / len(train)), "rows": [],
    }  # fmt: skip
    where = "graphcost/datasets/" + splits.root.name if data_dir is None else f"{collection} written by synth"
    info["source"] = f"{where}; train {len(train)} / valid {len(valid)} graphs"
    print(f"\n{name}: {splits.describe()}", flush=True)
    kind = train[0].kind
    info["kind"] = kind
    variants = [v if v[0] != "sage" or kind == "layout" else ("tile-mlp", "tile-mlp", {}) for v in VARIANTS]
    for model in dict.fromkeys(v[1] for v in variants):  # warm-up: one-time imports / JIT out of the timings
        warm = TrainConfig(model=model, model_config={"hidden": 8}, epochs=1, batch_configs=8, device=args.device,
                           progress=False, plots=False)  # fmt: skip
        Trainer(warm, train[:1], valid[:1], out_dir / "warmup" / model).fit()
    for label, model, overrides in variants:
        opts = {"hidden": args.hidden, **overrides}
        runs = []
        for seed in range(seeds):
            config = TrainConfig(
                model=model, model_config=opts, epochs=args.epochs, batch_configs=args.batch_configs, seed=seed,
                device=args.device, progress=False, plots=False,
            )  # fmt: skip
            start = time.perf_counter()
            trainer = Trainer(config, train, valid, out_dir / name / f"{label.replace(' ', '_')}_s{seed}")
            result = trainer.fit()
            wall = time.perf_counter() - start
            last = result.history[-1]
            configs = sum(r["configs_per_s"] * r["train_seconds"] for r in result.history)
            seconds = sum(r["train_seconds"] for r in result.history)
            runs.append({
                "kendall_tau": last["valid_kendall_tau"], "opa": last["valid_opa"],
                "top1_slowdown": last["valid_top1_slowdown"], "top10_slowdown": last["valid_top10_slowdown"],
                "best_epoch_tau": max(r["valid_kendall_tau"] for r in result.history),
                "train_loss": last["train_loss"], "configs_per_s": configs / max(seconds, 1e-9), "wall_s": wall,
            })  # fmt: skip
        row = {"variant": label, "model": model, "model_config": opts, "runs": runs,
               "params": int(sum(p.numel() for p in trainer.model.parameters()))}  # fmt: skip
        for key in runs[0]:
            values = np.array([r[key] for r in runs], dtype=float)
            row[key], row[f"{key}_std"] = float(values.mean()), float(values.std())
        info["rows"].append(row)
        print(
            f"  {label:<22} tau {row['kendall_tau']:+.4f} ± {row['kendall_tau_std']:.4f}  opa {row['opa']:.4f}  "
            f"top1 {row['top1_slowdown']:.4f}  {row['configs_per_s']:7.1f} configs/s  ({row['wall_s'] * seeds:.0f} s)",
            flush=True,
        )
    return info


def markdown(report: dict) -> str:
    lines = [
        SECTION, "",
        f"`{report['command']}` — {report['machine']}, {report['date']}. Same budget for every row: "
        f"{report['epochs']} epochs x every training graph, {report['batch_configs']} configurations per batch, "
        f"hidden {report['hidden']}, AdamW 1e-3 + 5% warm-up + cosine, pairwise hinge, seeds 0..n-1; validation over ALL "
        "configurations of each validation graph, no TTA, final epoch. Throughput = configurations "
        "per second of optimisation steps (forward + backward + step), torch threads = "
        f"{report['threads']}, device {report.get('device', 'cpu')}. "
        f"JSON: `{report.get('json', 'benchmarks/results/bench_models.json')}`.", "",
    ]  # fmt: skip
    for ds in report["datasets"]:
        lines += [
            f"**{ds['dataset']}** — {ds['source']}; {ds['valid_configs']} validation configurations; "
            f"{ds['seeds']} seed(s) per row.", "",
            "| model | params | Kendall τ (mean ± std over seeds) | OPA | top-1 slowdown | top-10 slowdown | "
            "best-epoch τ | configs/s |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]  # fmt: skip
        for r in ds["rows"]:
            lines.append(
                f"| {r['variant']} | {r['params']:,} | {r['kendall_tau']:.4f} ± {r['kendall_tau_std']:.4f} | {r['opa']:.4f} | "
                f"{r['top1_slowdown']:.4f} | {r['top10_slowdown']:.4f} | {r['best_epoch_tau']:.4f} | "
                f"{r['configs_per_s']:.0f} |"
            )
        lines.append("")
    lines += report.get("notes", [])
    return "\n".join(lines).rstrip() + "\n"


def replace_section(text: str, section: str) -> str:
    """Replace this script's subsection SECTION (up to the next '## ' or '### ' heading) with
    `section`, leaving the rest of PARENT (other scripts' results) untouched."""
    start = text.find(SECTION)
    if start < 0:
        parent = text.find(PARENT)
        if parent < 0:
            return text.rstrip() + "\n\n" + PARENT + "\n\n" + section
        start = end = parent + len(PARENT) + 2
        return text[:start] + section + "\n" + text[end:]
    ends = [i for i in (text.find("\n## ", start + 1), text.find("\n### ", start + 1)) if i >= 0]
    end = min(ends) + 1 if ends else len(text)
    return text[:start] + section + "\n" + text[end:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--graphs", type=int, default=25, help="synthetic graphs (80/20 train/valid)")
    parser.add_argument("--max-graphs", type=int, default=None, help="at most N graphs per split")
    parser.add_argument("--batch-configs", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=1, help="seeds per row on the synthetic data")
    parser.add_argument("--real-seeds", type=int, default=3, help="seeds per row on the real shipped data")
    parser.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N: where the models train")
    parser.add_argument("--out", type=Path, default=RESULTS, help="JSON results file")
    parser.add_argument("--no-markdown", action="store_true", help="do not rewrite BENCHMARKS.md")
    parser.add_argument("--skip-real", action="store_true", help="skip the shipped real dataset")
    args = parser.parse_args()

    import torch

    from graphcost.datasets import shipped_for_collection
    from graphcost.runs.distributed import check_device

    check_device(args.device)
    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda"):
        machine = (f"{torch.cuda.get_device_name(torch.device(args.device))} GPU, {os.cpu_count()} CPU cores "
                   f"({platform.machine()}), torch {torch.__version__}")
    else:
        machine = f"2-core CPU ({platform.machine()}, shared with other jobs), torch {torch.__version__}"
    from graphcost.models.precision import describe_cpu

    machine += f"; {describe_cpu()}"  # e.g. torch CPU capability AVX2, bf16 emulated
    report = {
        "command": "python benchmarks/models/bench_models.py " + " ".join(sys.argv[1:]),
        "machine": machine, "device": args.device, "json": str(args.out),
        "date": str(date.today()), "epochs": args.epochs, "batch_configs": args.batch_configs,
        "hidden": args.hidden, "threads": args.threads, "datasets": [], "notes": [],
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        synth_root = synthetic_data(tmp / "synthetic", args.graphs)
        report["datasets"].append(
            run_dataset("SYNTHETIC layout:xla:random (graphcost.data.synth.collection)", synth_root, "layout:xla:random",
                        args, tmp / "runs", args.seeds)
        )  # fmt: skip
        real = None if args.skip_real else shipped_for_collection()
        if real is not None:
            report["datasets"].append(run_dataset("REAL shipped CPU dataset", None, None, args, tmp / "runs", args.real_seeds))
        else:
            report["notes"].append(
                "The real shipped CPU dataset (graphcost/datasets) was not installed when this ran, so only the "
                "synthetic rows exist."
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    if not args.no_markdown:
        bench = ROOT / "BENCHMARKS.md"
        atomic_write_text(bench, replace_section(bench.read_text(), markdown(report)))
        print(f"updated {bench} ({SECTION})")


if __name__ == "__main__":
    main()
