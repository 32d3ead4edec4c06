"""LayerDAG LP ablation (issue 5): one LP training run with chosen set statistics, diffusion steps and
data size, then validity with both last-step choices. Run several side by side to compare.

    python benchmarks/layerdag/bench_layerdag_ablation.py --tag base3k --edge-stats 0 --size-stats 0 --steps 32 \
        --graphs 3000 --epochs 40 --device cuda --out /tmp/lp_ablation

Same training recipe as bench_layerdag.py (small model, lr 3e-3 with cosine decay, per-module
best.pt, seed 0, split 80/10/10 of `--graphs` SYNTHETIC LP graphs); `--edge-stats` / `--size-stats`
switch the edge denoiser's predecessor-set statistics and the size head's frontier histogram
(graphcost.layerdag.denoisers / layer_size). Writes OUT/TAG.json; resumes OUT/TAG if re-run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from graphcost.guards.atomic import atomic_write_json
from graphcost.layerdag.datasets import load_dataset
from graphcost.layerdag.experiment import evaluate_model
from graphcost.layerdag.train import (
    BEST,
    LayerDAGTrainConfig,
    load_checkpoint,
    load_model,
    train_layerdag,
)
from layerdag_recipe import LR, LR_DECAY  # benchmarks/layerdag/layerdag_recipe.py


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tag", required=True)
    p.add_argument("--edge-stats", type=int, choices=[0, 1], default=1)
    p.add_argument("--size-stats", type=int, choices=[0, 1], default=1)
    p.add_argument("--steps", type=int, default=32, help="T_node = T_edge")
    p.add_argument("--graphs", type=int, default=3000)
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--sample-seeds", type=int, default=1, help="validity for sampling seeds 0..N-1")
    p.add_argument("--transformer-layers", type=int, default=1, help="node denoiser transformer depth")
    p.add_argument("--dim", type=int, default=96)
    p.add_argument("--final", nargs="+", default=["sample", "mode"], choices=["sample", "mode"])
    p.add_argument("--lr", type=float, default=LR)
    p.add_argument("--seed", type=int, default=0, help="LP data, split and training seed")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    splits = load_dataset("lp", seed=a.seed, num_graphs=a.graphs)
    run = a.out / a.tag
    t0 = time.perf_counter()
    train_layerdag(splits["train"], run, LayerDAGTrainConfig(epochs=a.epochs, lr=a.lr, lr_decay=LR_DECAY, device=a.device, seed=a.seed),
                   valid_dags=splits["valid"], resume=True, num_categories=2, progress=False,
                   edge_set_features=bool(a.edge_stats), size_set_features=bool(a.size_stats), T_node=a.steps, T_edge=a.steps,
                   transformer_layers=a.transformer_layers, dim=a.dim)  # fmt: skip
    best = load_checkpoint(run / BEST)
    res = {"tag": a.tag, "args": vars(a) | {"out": str(a.out)}, "train_seconds": time.perf_counter() - t0,
           "module_valid": best.get("module_valid"), "module_epochs": best.get("module_epochs")}  # fmt: skip
    model = load_model(run).to(a.device)
    for final in a.final:
        for seed in range(a.sample_seeds):
            r, _ = evaluate_model(model, splits, "lp", seed=seed, num_samples=a.samples, progress=False, final_step=final)
            key = f"{final}" if seed == 0 else f"{final}_seed{seed}"
            res[f"validity_{key}"], res[f"sample_seconds_{key}"] = r["validity"], r["sample_seconds"]
    print(json.dumps(res))
    atomic_write_json(res, a.out / f"{a.tag}.json")


if __name__ == "__main__":
    main()
