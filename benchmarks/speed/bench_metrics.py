"""Speed and memory of graphcost.metrics (Kendall τ, OPA, evaluate_graph) and the ranking losses.

Synthetic inputs (random scores/runtimes with ties), not model outputs. Prints a table and
writes JSON. Usage:

    python benchmarks/speed/bench_metrics.py [--out benchmarks/results/metrics.json] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import tracemalloc
from pathlib import Path

import numpy as np
import scipy.stats

from graphcost import metrics as M
from graphcost.guards.atomic import atomic_write_text


def _best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _peak_mib(fn) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def bench_metrics(sizes, repeat: int, rng) -> list[dict]:
    rows = []
    for n in sizes:
        pred = np.round(rng.normal(size=n), 3)  # synthetic, with ties
        runtime = np.round(np.exp(pred + rng.normal(size=n)), 2) + 1.0
        ours = M.kendall_tau(pred, runtime)
        ref = scipy.stats.kendalltau(pred, runtime).statistic
        rows.append({
            "n": n,
            "kendall_tau_s": _best_time(lambda: M.kendall_tau(pred, runtime), repeat),
            "scipy_kendalltau_s": _best_time(lambda: scipy.stats.kendalltau(pred, runtime), repeat),
            "opa_s": _best_time(lambda: M.opa(pred, runtime), repeat),
            "evaluate_graph_layout_s": _best_time(
                lambda: M.evaluate_graph(pred, runtime, "layout"), repeat),
            "kendall_tau_peak_mib": _peak_mib(lambda: M.kendall_tau(pred, runtime)),
            "abs_diff_vs_scipy": abs(ours - ref),
        })
    return rows


def bench_losses(batch_sizes, repeat: int, threads: int) -> list[dict]:
    import torch

    from graphcost.models.losses import LOSS_NAMES, get_loss

    torch.set_num_threads(threads)  # the B x B pair losses are noisy under thread contention
    torch.manual_seed(0)
    rows = []
    for b in batch_sizes:
        runtime = torch.rand(b) + 0.5
        for name in LOSS_NAMES:
            fn = get_loss(name)

            def step():
                s = torch.randn(b, requires_grad=True)
                fn(s, runtime).backward()

            rows.append({"loss": name, "B": b, "fwd_bwd_s": _best_time(step, repeat)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/metrics.json"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[128, 1024])
    ap.add_argument("--threads", type=int, default=1, help="torch threads for the loss timings")
    args = ap.parse_args()
    rng = np.random.default_rng(0)

    metric_rows = bench_metrics(args.sizes, args.repeat, rng)
    print("metrics (synthetic scores/runtimes, best of %d runs)" % args.repeat)
    print(f"{'n':>8} {'tau s':>9} {'scipy s':>9} {'opa s':>9} {'eval s':>9} {'peak MiB':>9} {'|Δ|':>9}")
    for r in metric_rows:
        print(f"{r['n']:>8} {r['kendall_tau_s']:>9.4f} {r['scipy_kendalltau_s']:>9.4f} "
              f"{r['opa_s']:>9.4f} {r['evaluate_graph_layout_s']:>9.4f} "
              f"{r['kendall_tau_peak_mib']:>9.2f} {r['abs_diff_vs_scipy']:>9.1e}")

    loss_rows = bench_losses(args.batch_sizes, args.repeat, args.threads)
    print(f"\nlosses, forward+backward on CPU, {args.threads} torch thread(s) (synthetic)")
    print(f"{'loss':>9} {'B':>6} {'ms':>9}")
    for r in loss_rows:
        print(f"{r['loss']:>9} {r['B']:>6} {1e3 * r['fwd_bwd_s']:>9.2f}")

    result = {
        "machine": f"{platform.machine()} {os.cpu_count()}-core CPU, {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "data": "synthetic",
        "torch_threads": args.threads,
        "metrics": metric_rows,
        "losses": loss_rows,
    }
    atomic_write_text(args.out, json.dumps(result, indent=2))  # mode 0o666 & ~umask
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
