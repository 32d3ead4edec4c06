"""LayerDAG end to end on CPU or one GPU (issue 5): train, sample, evaluate on LP (synthetic) and TPU Tile (real).

    python benchmarks/layerdag/bench_layerdag.py [--quick] [--lp-graphs N --lp-epochs E --tpu-epochs E]
                                         [--work-dir /tmp/graphcost_bench_layerdag] [--json benchmarks/results/layerdag.json]
                                         [--device cpu|cuda]

Models are trained with per-module selection (each of the three modules keeps its own best
validation epoch, best.pt) and sampled from best.pt with `--final-step` (default sample, the D3PM
step; LP validity is also measured with the other choice).
`--quick` is a smoke run of a few minutes (small data, few epochs; numbers not comparable).
LP (SYNTHETIC, our generator of the paper's §V-A rules; default 20,000 graphs, 30 epochs, T_node = T_edge = 128 via
`--lp-graphs/--lp-epochs/--lp-steps`, since more steps and more data raise validity, see BENCHMARKS.md):
train on the train split, sample 200 DAGs (full T) for each of `--sample-seeds` sampling seeds,
report validity (paper Table II: 0.907; mean and spread over the seeds), MMD vs the test split, uniqueness/novelty, and a
quality-vs-time sweep of the eq.-1 linear and the constant schedules (LayerDAG §V-C).
TPU Tile (REAL, ../shared/data/tpu_tile_graphs/val.npz split 80/10/10): train (default 100 epochs,
label dropout 0.1 for classifier-free guidance, `--tpu-epochs/--tpu-label-dropout`); generate one DAG
per real train/valid label (guidance weight `--guidance`, default 0.75); fit the same surrogate
regressor on real and on synthetic train/valid (`--surrogate-repeats`, default 3 fits each with
seeds 0-2, Pearsons averaged); Pearson on the real test set (paper: 0.676 synthetic vs 0.761 real,
ratio 0.89); MMD table. The generation is repeated for `--sample-seeds`
(default 5) sampling seeds of the same model and the ratio's mean and spread are reported (on the
63 test graphs one seed's ratio varies by ±0.05-0.09).
Training resumes from the work dir's checkpoints if re-run. Prints tables and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from graphcost.guards.atomic import atomic_write_text
from layerdag_recipe import (  # benchmarks/layerdag/layerdag_recipe.py
    LP_EPOCHS,
    LP_GRAPHS,
    LP_STEPS,
    LR,
    LR_DECAY,
    SAMPLE_SEEDS,
    SURROGATE_EPOCHS,
    SURROGATE_REPEATS,
    TPU_EPOCHS,
    TPU_GUIDANCE,
    TPU_LABEL_BALANCE,
    TPU_LABEL_DROPOUT,
)

DEFAULT_JSON = "benchmarks/results/layerdag.json"


def _train(name, splits, args, epochs, ncat, label_balance=0.0, **overrides):
    from graphcost.layerdag.train import BEST, LayerDAGTrainConfig, load_checkpoint, load_model, train_layerdag

    run = args.work_dir / name
    cfg = LayerDAGTrainConfig(epochs=epochs, lr=args.lr, seed=args.seed, select=args.select, lr_decay=args.lr_decay,
                      device=args.device, size=args.size, label_balance=label_balance)  # fmt: skip
    t0 = time.perf_counter()
    model, hist = train_layerdag(splits["train"], run, cfg, valid_dags=splits["valid"], resume=True, num_categories=ncat, **overrides)
    wall = time.perf_counter() - t0
    epoch_secs = sum(h["seconds"] for h in hist)
    best = load_checkpoint(run / BEST)
    model = load_model(run).to(args.device)  # the selected weights (best.pt); sampling runs there too
    return model, {
        "select": args.select, "module_epochs": best.get("module_epochs"), "module_valid": best.get("module_valid"),
        "history": [{k: v for k, v in h.items() if k.startswith(("epoch", "valid_", "train_loss"))} for h in hist],
        "epochs": epochs, "lr": args.lr, "lr_decay": args.lr_decay, "label_balance": label_balance, "parameters": model.num_parameters(), "train_graphs": len(splits["train"]),
        "train_seconds_this_run": wall, "train_seconds_all_epochs": epoch_secs,
        "train_seconds_per_graph_epoch": epoch_secs / (epochs * len(splits["train"])),
        "final": hist[-1], "config": model.config_dict() | {"node_marginal": "..."},
    }  # fmt: skip


def bench_lp(args) -> dict:
    from graphcost.layerdag.datasets import load_dataset
    from graphcost.layerdag.experiment import evaluate_model, quality_vs_time

    splits = load_dataset("lp", seed=args.seed, num_graphs=args.lp_graphs)
    model, train = _train("lp", splits, args, args.lp_epochs, 2, T_node=args.lp_steps, T_edge=args.lp_steps)
    res, gen = evaluate_model(model, splits, "lp", seed=args.seed, num_samples=args.lp_samples, final_step=args.final_step)
    other = "sample" if args.final_step == "mode" else "mode"  # the same model with the other last step
    res["final_step"], res["other_final_step"] = args.final_step, other
    res["validity_other_final_step"] = evaluate_model(model, splits, "lp", seed=args.seed, num_samples=args.lp_samples,
                                                      final_step=other, progress=False)[0]["validity"]  # fmt: skip
    validity = [res["validity"]]
    for k in range(1, args.sample_seeds):  # the same model, other generated graphs (±0.02 per 200 samples)
        validity.append(evaluate_model(model, splits, "lp", seed=args.seed + k, num_samples=args.lp_samples,
                                       final_step=args.final_step, progress=False)[0]["validity"])  # fmt: skip
    res["validity_by_sampling_seed"] = validity
    from graphcost.layerdag.draw import draw_dags

    draw_dags(gen, args.work_dir / "lp_samples.png", title="LayerDAG on LP (synthetic)")
    sweep = quality_vs_time(model, splits, "lp", args.sweep_t, seed=args.seed, num_samples=100, final_step=args.final_step)
    return {"train": train, "eval": res, "quality_vs_time": sweep}


def bench_tpu(args) -> dict:
    from graphcost.layerdag.datasets import load_dataset
    from graphcost.layerdag.quality.surrogate import SurrogateConfig, fit_real_surrogates
    from graphcost.layerdag.experiment import evaluate_model

    splits = load_dataset("tpu-tile", seed=args.seed)
    model, train = _train("tpu_tile", splits, args, args.tpu_epochs, 47, label_balance=args.tpu_label_balance,
                          label_dropout=args.tpu_label_dropout)  # fmt: skip
    scfg = SurrogateConfig(epochs=args.surrogate_epochs, repeats=args.surrogate_repeats)
    real_fits = fit_real_surrogates(splits, 47, scfg)  # once: they do not depend on the generated graphs
    res, gen = evaluate_model(model, splits, "tpu-tile", seed=args.seed, final_step=args.final_step, guidance=args.guidance,
                              surrogate_cfg=scfg, real_fits=real_fits)  # fmt: skip
    res["guidance"] = args.guidance
    # the same model, other generated graphs (the ratio is noisy on 63 test graphs)
    scores = [res["surrogate"]] + [evaluate_model(model, splits, "tpu-tile", seed=args.seed + k, final_step=args.final_step,
                                                  progress=False, guidance=args.guidance, surrogate_cfg=scfg,
                                                  real_fits=real_fits)[0]["surrogate"] for k in range(1, args.sample_seeds)]  # fmt: skip
    for key in ("ratio", "ratio_log"):
        res[f"{key}_by_sampling_seed"] = [s[key] for s in scores]
    from graphcost.layerdag.draw import draw_dags

    draw_dags(gen, args.work_dir / "tpu_tile_samples.png", title="LayerDAG on TPU Tile")
    return {"train": train, "eval": res}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _print_seeds(name: str, by_seed: list[float]) -> None:
    if len(by_seed) > 1:
        print(f"  {name} over {len(by_seed)} sampling seeds: mean {statistics.mean(by_seed):.3f} ± "
              f"{statistics.stdev(by_seed):.3f} (" + ", ".join(f"{x:.3f}" for x in by_seed) + ")")  # fmt: skip


def _print(results: dict) -> None:
    print("\nLayerDAG (issue 5)")
    for name, r in results.items():
        if name not in ("lp", "tpu_tile"):
            continue
        e, t = r["eval"], r["train"]
        print(f"\n[{name}] {t['train_graphs']} train graphs, {t['epochs']} epochs, {t['parameters']:,} params, "
              f"selected epochs {t['module_epochs']}")  # fmt: skip
        print(f"  train s/epoch {t['train_seconds_all_epochs'] / t['epochs']:.1f}  "
              f"train ms per graph-epoch {1000 * t['train_seconds_per_graph_epoch']:.1f}  "
              f"sampling ms/graph {1000 * e['sample_seconds_per_graph']:.1f}")  # fmt: skip
        if "validity" in e:
            print(f"  validity {e['validity']:.3f} (target >= 0.90; paper 0.907)"
                  + (f"; last step {e['other_final_step']}: {e['validity_other_final_step']:.3f}" if "other_final_step" in e else ""))  # fmt: skip
            _print_seeds("validity", e.get("validity_by_sampling_seed", []))
        if "surrogate" in e:
            s = e["surrogate"]
            print(f"  Pearson real {s['pearson_real']:.3f}  synthetic {s['pearson_synthetic']:.3f}  "
                  f"ratio {s['ratio']:.3f} (target >= 0.89; paper 0.676/0.761); label fidelity {s['label_fidelity']:.3f}; "
                  f"guidance w={e.get('guidance', 0.0):g}")  # fmt: skip
            _print_seeds("ratio", e.get("ratio_by_sampling_seed", []))
            print(f"  on log labels: Pearson real {s['pearson_real_log']:.3f}  synthetic {s['pearson_synthetic_log']:.3f}  "
                  f"ratio {s['ratio_log']:.3f} (a secondary figure: every test graph weighs alike)")  # fmt: skip
            _print_seeds("ratio on log labels", e.get("ratio_log_by_sampling_seed", []))
        print(f"  nodes {e['mean_nodes']:.1f} (real {e['real_mean_nodes']:.1f})  edges {e['mean_edges']:.1f} "
              f"(real {e['real_mean_edges']:.1f})  uniqueness {e['uniqueness']:.3f}  novelty {e['novelty']:.3f}")  # fmt: skip
        print(f"  MMD^2 ({e.get('mmd_kernel', 'TV kernel before issue 20')}) " + "  ".join(f"{k} {v:.4f}" for k, v in e["mmd"].items()))
        for row in r.get("quality_vs_time", []):
            print(f"  {row['schedule']:>8} T={row['T']:<3} quality {row['quality']:.3f}  "
                  f"{1000 * row['sample_seconds_per_graph']:.1f} ms/graph")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run: LP 200 graphs / 3 epochs / 50 samples, TPU 2 epochs, "
                   "surrogate 10 epochs, sweep T=4 (overrides those options)")
    p.add_argument("--lp-graphs", type=int, default=LP_GRAPHS)
    p.add_argument("--lp-epochs", type=int, default=LP_EPOCHS)
    p.add_argument("--lp-samples", type=int, default=200)
    p.add_argument("--lp-steps", type=int, default=LP_STEPS, help="LP: diffusion steps T_node = T_edge (trained and sampled)")
    p.add_argument("--tpu-epochs", type=int, default=TPU_EPOCHS)
    p.add_argument("--tpu-label-dropout", type=float, default=TPU_LABEL_DROPOUT, help="TPU Tile: chance of training a "
                   "graph with the null label (classifier-free guidance; 0 = off)")
    p.add_argument("--tpu-label-balance", type=float, default=TPU_LABEL_BALANCE, help="TPU Tile: draw training graphs "
                   "with probability ∝ (label density)^-α (0 = each graph once per epoch)")
    p.add_argument("--guidance", type=float, default=TPU_GUIDANCE, help="TPU Tile: classifier-free guidance weight "
                   "w at sampling (needs --tpu-label-dropout > 0; 0 = plain conditional sampling)")
    p.add_argument("--surrogate-epochs", type=int, default=SURROGATE_EPOCHS)
    p.add_argument("--surrogate-repeats", type=int, default=SURROGATE_REPEATS, help="TPU Tile: regressors fitted per "
                   "training set (surrogate seeds 0..k-1), Pearsons averaged")
    p.add_argument("--sample-seeds", type=int, default=SAMPLE_SEEDS, help="report the LP validity and the TPU Tile ratio for "
                   "this many sampling seeds (seed, seed+1, ...) of the same model, with mean and spread")
    p.add_argument("--sweep-t", type=int, nargs="*", default=[4, 8, 16, 32])
    p.add_argument("--lr", type=float, default=LR)
    p.add_argument("--lr-decay", choices=["none", "cosine"], default=LR_DECAY)
    p.add_argument("--select", choices=["module", "total"], default="module", help="best.pt selection rule")
    p.add_argument("--final-step", choices=["mode", "sample"], default="sample", help="last reverse diffusion step")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", choices=["lp", "tpu"], default=None)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--size", choices=["small", "paper"], default="small", help="model size (paper: LayerDAG's widths/depths/steps)")
    p.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N — where the LayerDAG networks train and sample "
                   "(the surrogate regressor and all random draws stay on CPU)")
    p.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "graphcost_bench_layerdag")
    p.add_argument("--json", type=Path, default=Path(DEFAULT_JSON))
    args = p.parse_args()
    if args.quick:
        args.lp_graphs, args.lp_epochs, args.lp_samples, args.lp_steps, args.tpu_epochs = 200, 3, 50, 16, 2
        args.surrogate_epochs, args.sweep_t, args.sample_seeds, args.surrogate_repeats = 10, [4], 1, 1
        if args.json == Path(DEFAULT_JSON):
            args.json = Path(tempfile.gettempdir()) / "layerdag_quick.json"

    import torch

    torch.set_num_threads(args.threads)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    machine = f"{os.cpu_count()}-core CPU ({_cpu_name()}), {args.threads} torch thread(s), load average at start {os.getloadavg()[0]:.1f}"
    if args.device.startswith("cuda"):
        machine += f"; LayerDAG on {torch.cuda.get_device_name(torch.device(args.device))} (torch {torch.__version__})"
    from graphcost.models.precision import describe_cpu

    machine += f"; {describe_cpu()}"  # e.g. torch CPU capability AVX2, bf16 emulated
    results: dict = {"command": " ".join(sys.argv), "machine": machine, "device": args.device,
                     "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}  # fmt: skip
    if args.only in (None, "lp"):
        results["lp"] = bench_lp(args)
    if args.only in (None, "tpu"):
        results["tpu_tile"] = bench_tpu(args)
    results["total_seconds"] = time.perf_counter() - t0
    results["load_average_end"] = os.getloadavg()[0]
    _print(results)
    print(f"\ntotal {results['total_seconds']:.0f} s")
    atomic_write_text(args.json, json.dumps(results, indent=2, default=float))  # mode 0o666 & ~umask
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
