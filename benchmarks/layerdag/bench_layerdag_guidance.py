"""LayerDAG classifier-free guidance on TPU Tile (issue 5): the surrogate Pearson ratio vs guidance weight.

    python benchmarks/layerdag/bench_layerdag_guidance.py --out /tmp/ld_guidance --label-dropout 0.1 --epochs 25 \
        --guidance 0 1 2 --seeds 3 [--threads 2] [--device cpu]

Trains one conditional LayerDAG on the REAL TPU Tile train split (../shared/data/tpu_tile_graphs/val.npz,
80/10/10 by graph; small model, lr 3e-3 with cosine decay, per-module best.pt, seed 0) with label
dropout p, then for each guidance weight w and sampling seed generates one DAG per real train/valid
label and scores it as bench_layerdag.py does (surrogate regressor fitted on real vs synthetic,
Pearson on the real test set, their ratio; label fidelity). `--model RUN` scores an existing run
instead of training (w must then be 0 unless it was trained with label dropout). Resumable: the
run directory resumes training and OUT/results.json keeps every finished (w, seed) cell.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from graphcost.guards.atomic import atomic_write_json
from graphcost.layerdag.datasets import load_dataset
from graphcost.layerdag.quality.surrogate import SurrogateConfig, fit_real_surrogates
from graphcost.layerdag.experiment import evaluate_model
from graphcost.layerdag.train import (
    BEST,
    LayerDAGTrainConfig,
    load_checkpoint,
    load_model,
    train_layerdag,
)
from layerdag_recipe import LR, LR_DECAY, SURROGATE_EPOCHS, TPU_LABEL_DROPOUT  # benchmarks/layerdag/layerdag_recipe.py


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--model", type=Path, default=None, help="score this run directory instead of training one")
    p.add_argument("--label-dropout", type=float, default=TPU_LABEL_DROPOUT)
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--guidance", type=float, nargs="+", default=[0.0, 1.0, 2.0])
    p.add_argument("--seeds", type=int, default=3, help="sampling seeds 0..N-1 per guidance weight")
    p.add_argument("--surrogate-epochs", type=int, default=SURROGATE_EPOCHS)
    p.add_argument("--surrogate-repeats", type=int, default=1, help="regressors fitted per training set, Pearsons averaged")
    p.add_argument("--lr", type=float, default=LR)
    p.add_argument("--dim", type=int, default=None, help="LayerDAG width (default: the small model's 96)")
    p.add_argument("--label-balance", type=float, default=0.0, help="draw training graphs ∝ label density^-α (0 = off)")
    p.add_argument("--ema-decay", type=float, default=0.0, help="EMA of the weights per step (0 = off)")
    p.add_argument("--steps", type=int, default=None, help="diffusion steps T_node = T_edge (default: the small model's 32)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    splits = load_dataset("tpu-tile", seed=0)
    res_path = a.out / "results.json"
    res = json.loads(res_path.read_text()) if res_path.is_file() else {"args": {}, "cells": {}}
    res["args"] = {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()}
    run = a.model
    if run is None:
        run = a.out / "run"
        t0 = time.perf_counter()
        cfg = LayerDAGTrainConfig(epochs=a.epochs, lr=a.lr, lr_decay=LR_DECAY, device=a.device, ema_decay=a.ema_decay,
                          label_balance=a.label_balance)
        train_layerdag(splits["train"], run, cfg, valid_dags=splits["valid"], resume=True, num_categories=47,
                       progress=False, label_dropout=a.label_dropout,
                       **({} if a.steps is None else {"T_node": a.steps, "T_edge": a.steps}),
                       **({} if a.dim is None else {"dim": a.dim}))  # fmt: skip
        res.setdefault("train_seconds", time.perf_counter() - t0)
        res["module_epochs"] = load_checkpoint(run / BEST).get("module_epochs")
    model = load_model(run).to(a.device)
    res["label_dropout"] = model.config.label_dropout
    scfg = SurrogateConfig(epochs=a.surrogate_epochs, repeats=a.surrogate_repeats)
    real_fits = None  # fitted once, on the first cell that needs them
    for w in a.guidance:
        for seed in range(a.seeds):
            key = f"w={w:g} seed={seed}"
            if key in res["cells"]:
                continue
            real_fits = real_fits or fit_real_surrogates(splits, 47, scfg)
            r, _ = evaluate_model(model, splits, "tpu-tile", seed=seed, progress=False, guidance=w, surrogate_cfg=scfg,
                                  real_fits=real_fits)  # fmt: skip
            s = r["surrogate"]
            res["cells"][key] = {"w": w, "seed": seed, "ratio": s["ratio"], "pearson_real": s["pearson_real"],
                                 "pearson_synthetic": s["pearson_synthetic"], "label_fidelity": s["label_fidelity"],
                                 "ratio_log": s["ratio_log"], "pearson_real_log": s["pearson_real_log"],
                                 "pearson_synthetic_log": s["pearson_synthetic_log"],
                                 "mean_nodes": r["mean_nodes"], "real_mean_nodes": r["real_mean_nodes"],
                                 "mmd": r["mmd"], "mmd_kernel": r["mmd_kernel"], "uniqueness": r["uniqueness"], "novelty": r["novelty"],
                                 "sample_seconds_per_graph": r["sample_seconds_per_graph"]}  # fmt: skip
            atomic_write_json(res, res_path)
            print(key, json.dumps({k: round(v, 4) for k, v in res["cells"][key].items() if isinstance(v, float)}), flush=True)
    print("\nguidance  ratio mean ± sd (seeds)            label fidelity  nodes (real)")
    for w in a.guidance:
        cells = [c for c in res["cells"].values() if c["w"] == w]
        ratios = [c["ratio"] for c in cells]
        sd = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
        print(f"{w:8g}  {statistics.mean(ratios):.3f} ± {sd:.3f} ({', '.join(f'{x:.3f}' for x in ratios)})  "
              f"{statistics.mean(c['label_fidelity'] for c in cells):.3f}  "
              f"{statistics.mean(c['mean_nodes'] for c in cells):.1f} ({cells[0]['real_mean_nodes']:.1f})")


if __name__ == "__main__":
    main()
