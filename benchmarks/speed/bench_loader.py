"""Training throughput with and without DataLoader workers (`graphcost train --loader-workers N`).

Trains the same model on the same data once per worker count and reports the training steps'
throughput (configurations/s and steps/s over the optimisation steps only: the `train_seconds`
of metrics.csv, which include waiting for a worker's batch; validation is excluded). The runs
must agree: their losses are compared and printed (workers build the same batches).

Data (`--data`):
  shipped  the real CPU layout dataset shipped in the package (13 small training graphs), held
           in memory: batch preparation = sampling + decompressing B configurations.
  synth    a SYNTHETIC layout:nlp:random collection written to a temp dir (`--graphs`,
           `--configs`), trained with the prepared graphs read back from the preprocessing
           cache at every step (what `--max-memory-gb` does for NLP-size splits; the LRU of
           LazyPrepared is cut to one graph so that a few graphs behave like a large split):
           batch preparation = reading a cache entry + sampling + decompressing.

    python benchmarks/speed/bench_loader.py --data shipped --workers 0 2 --out benchmarks/results/bench_loader_shipped.json
    python benchmarks/speed/bench_loader.py --data synth --workers 0 2 --out benchmarks/results/bench_loader_synth.json
    python benchmarks/speed/bench_loader.py --device cuda ...   (GPU: the model on the GPU, batches from CPU workers)
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import torch

from graphcost.guards.atomic import atomic_write_json
from graphcost.models.precision import describe_cpu
from graphcost.data.io.locate import resolve_splits
from graphcost.data.transforms.pool import load_prepared
from graphcost.train.trainer import TrainConfig, Trainer


def _data(kind: str, tmp: Path, graphs: int, configs: int, seed: int):
    """(train graphs, valid graphs, description) prepared through the cache in `tmp`."""
    cache = tmp / "cache"
    if kind == "shipped":
        splits = resolve_splits(None, seed=seed)
        train = load_prepared(splits.files["train"], cache, False)
        valid = load_prepared(splits.files["valid"][:1], cache, False, dedup=False)
        return train, valid, f"shipped cpu_layout: {len(train)} training graphs, in memory"
    from graphcost.data.synth.collection import write_synthetic_collection

    write_synthetic_collection(tmp / "synth", "layout:nlp:random", num_graphs=graphs + 2, seed=seed,
                               split_fractions=(graphs / (graphs + 2), 1 / (graphs + 2), 1 / (graphs + 2)),
                               min_configs=configs, max_configs=configs, progress=False)  # fmt: skip
    splits = resolve_splits(tmp / "synth", "layout:nlp:random", seed=seed)
    train = load_prepared(splits.files["train"], cache, False, max_memory_gb=0.0)  # a LazyPrepared
    train.keep = 1  # its LRU holds one graph, as when a split is much larger than the LRU: a cache read per step
    valid = load_prepared(splits.files["valid"][:1], cache, False, dedup=False)
    mib = sum(train[i].nbytes() for i in range(len(train))) / 2**20
    return train, valid, (f"SYNTHETIC layout:nlp:random: {len(train)} training graphs x {configs} configurations "
                          f"({mib:.0f} MiB prepared), read back from the cache per step")  # fmt: skip


def _run(train, valid, out: Path, workers: int, args) -> dict:
    config = TrainConfig(model=args.model, model_config={"hidden": args.hidden}, epochs=args.epochs,
                         batch_configs=args.batch_configs, seed=args.seed, device=args.device, progress=False,
                         plots=False, loader_workers=workers)  # fmt: skip
    trainer = Trainer(config, train, valid, out)
    history = trainer.fit().history
    seconds = sum(r["train_seconds"] for r in history)
    steps = len(train) * args.epochs
    configs = sum(r["configs_per_s"] * r["train_seconds"] for r in history)
    load = os.getloadavg()[0]
    return {"workers": workers, "train_seconds": seconds, "steps_per_s": steps / seconds,
            "configs_per_s": configs / seconds, "losses": [r["train_loss"] for r in history], "load_avg_1min": load}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", choices=("shipped", "synth"), default="shipped")
    ap.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    ap.add_argument("--repeats", type=int, default=1, help="runs of each worker count, interleaved")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--model", default="tgraph")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--batch-configs", type=int, default=64)
    ap.add_argument("--graphs", type=int, default=6, help="synth: training graphs")
    ap.add_argument("--configs", type=int, default=20000, help="synth: configurations per graph")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of the training process")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        train, valid, described = _data(args.data, Path(tmp), args.graphs, args.configs, args.seed)
        for repeat in range(args.repeats):
            for workers in args.workers:
                out = Path(tmp) / f"run-{repeat}-{workers}"
                rows.append({**_run(train, valid, out, workers, args), "repeat": repeat})
    same = all(r["losses"] == rows[0]["losses"] for r in rows) if args.device == "cpu" else None
    device = torch.device(args.device if args.device != "auto" else "cpu")
    info = {"benchmark": "train_loader_workers", "data": described, "model": args.model, "hidden": args.hidden,
            "batch_configs": args.batch_configs, "epochs": args.epochs, "threads": args.threads, "device": args.device,
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; {describe_cpu()}"
                       + (f", {torch.cuda.get_device_name(device)}" if device.type == "cuda" else ""),
            "torch": torch.__version__, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "same_losses": same, "results": rows}  # fmt: skip
    print(f"{described}; {args.model} hidden {args.hidden}, B={args.batch_configs}, {args.epochs} epochs, "
          f"{args.threads} threads, device {args.device}; {info['machine']}")
    print(f"{'workers':>7} {'repeat':>6} {'train s':>8} {'steps/s':>8} {'configs/s':>10} {'load':>5}")
    for r in rows:
        print(f"{r['workers']:>7} {r['repeat']:>6} {r['train_seconds']:>8.2f} {r['steps_per_s']:>8.2f} "
              f"{r['configs_per_s']:>10.0f} {r['load_avg_1min']:>5.1f}")
    print(f"same losses across worker counts: {same}")
    if args.out:
        atomic_write_json(info, args.out)


if __name__ == "__main__":
    main()
