"""Zero-shot through kernels on the tune suite (issue 63 §5): the shipped kernel model costs the
configurations of the 14 tune-suite programs (never in its training data), against their measured tables.

    python benchmarks/models/bench_kernels_zero_shot.py --tables benchmarks/results/tune_wide/tables --sample 96 \\
        --out benchmarks/results/kernels/zero_shot.json --into benchmarks/results/bench_real.json

For each table (program x space, ``flags`` or ``both``) a seeded sample of `--sample` of its measured
configurations (all with 0) is compiled and costed by `graphcost.kernels.scoring.KernelModelScorer`
(each configuration's kernels, Σ n_k t̂_k through the sum rule; the default flags for the layout part of
``both``, whose layouts are in the kernels' graphs) and ranked as `graphcost rank` ranks them
(`KernelCostModel.rank_scores`: the kernel sum blended with the model's flag trees). Per table: Kendall's τ
between that ranking and the table's measured ratios (``kendall_tau``; the kernel sum alone:
``kernel_sum_kendall_tau``), and on the SAME sample the τ of the shipped whole-graph models (the zero-shot
rows of bench_real.json), so the two stand side by side. Medians over programs per space.

The result is written after every table (a re-run resumes: finished tables are kept) and, with
`--into`, put into bench_real.json as ``results.zero_shot.kernels`` in the shape
``{"flags": {"median_kendall_tau": ..}, "both": {"median_kendall_tau": ..}}`` plus the details.
Nothing is timed: a model's costs against stored measurements (the load does not enter the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path[:0] = [str(ROOT / "benchmarks" / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite

from graphcost.guards.atomic import atomic_write_json  # noqa: E402


def table_row(path: Path, sample: int, seed: int, kernel_model, runs: dict) -> dict:
    """τ of the kernel model and of the shipped graph models on a sample of one table's configurations."""
    from scipy.stats import kendalltau

    import bench_tune as bt
    from graphcost.kernels.scoring import KernelModelScorer
    from graphcost.tuning.scoring import GraphModelScorer
    from graphcost.tuning.trial import Evaluator

    table = bt.suite_table(path)
    picked = np.arange(len(table.configs))
    if 0 < sample < len(picked):
        picked = np.sort(np.random.default_rng(seed).choice(picked, sample, replace=False))
    configs = [table.configs[i] for i in picked]
    ratios = np.asarray([table.ratios[i] for i in picked], np.float64)
    t0 = time.perf_counter()
    evaluator = Evaluator(table.program, table.space)
    scorer = KernelModelScorer(evaluator.executables, table.space.flag_vector, kernel_model)
    costs = scorer(configs)
    scores = kernel_model.rank_scores(costs, np.stack([scorer.flags(c) for c in configs]))  # what `rank` orders by
    seconds = time.perf_counter() - t0
    ok = np.isfinite(costs)
    graph = GraphModelScorer([runs[k] for k in table.space.kinds], table.program, table.space)
    return {"kendall_tau": float(kendalltau(scores[ok], ratios[ok]).statistic),
            "kernel_sum_kendall_tau": float(kendalltau(costs[ok], ratios[ok]).statistic),
            "graph_model_kendall_tau": float(kendalltau(graph(configs), ratios).statistic),
            "configs": int(len(configs)), "costed": int(ok.sum()), "distinct_modules": scorer.distinct_modules,
            "table_configs": len(table.configs), "seconds": seconds}


def summarise(out: dict) -> None:
    """Per space: medians over programs, in place."""
    for space_name, progs in out["programs"].items():
        rows = list(progs.values())
        out[space_name] = {"median_kendall_tau": float(np.median([r["kendall_tau"] for r in rows])),
                           "median_kernel_sum_kendall_tau": float(np.median([r.get("kernel_sum_kendall_tau",
                                                                                   r["kendall_tau"]) for r in rows])),
                           "median_graph_model_kendall_tau": float(np.median([r["graph_model_kendall_tau"]
                                                                             for r in rows])),
                           "wins_vs_graph_model": int(sum(r["kendall_tau"] > r["graph_model_kendall_tau"]
                                                          for r in rows)),
                           "programs": len(rows),
                           "median_seconds_per_config": float(np.median([r["seconds"] / r["configs"] for r in rows]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, default=ROOT / "benchmarks" / "results" / "tune_wide" / "tables")
    parser.add_argument("--sample", type=int, default=96, help="configurations per table (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernel-model", type=Path, default=None, help="a kernel model directory (default: shipped)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "kernels" / "zero_shot.json")
    parser.add_argument("--into", type=Path, default=None, help="bench_real.json: put the result under zero_shot.kernels")
    parser.add_argument("--only", default="", help="comma-separated table names (e.g. moe-flags): only these")
    args = parser.parse_args()

    import graphcost.pretrained as pretrained
    from graphcost.kernels.model import KernelCostModel

    kernel_model = KernelCostModel.load(args.kernel_model)
    runs = {k: pretrained.shipped_model_dir(k) for k in ("layout", "tile")}
    out = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    model_id = {k: kernel_model.meta.get(k) for k in ("data", "date", "programs", "rounds", "flag_blend")}
    if out and (out.get("sample"), out.get("seed"), out.get("kernel_model_id")) != (args.sample, args.seed, model_id):
        sys.exit(f"{args.out}: holds a run of --sample {out.get('sample')} --seed {out.get('seed')} with another "
                 "kernel model; give another --out or the same parameters and model")
    load0 = os.getloadavg()
    out.update({"tables": str(args.tables.resolve().relative_to(ROOT)) if args.tables.resolve().is_relative_to(ROOT)
                else str(args.tables), "sample": args.sample, "seed": args.seed,
                "kernel_model": str(args.kernel_model or "shipped"), "kernel_model_id": model_id,
                "graph_models": "shipped"})
    out.setdefault("programs", {})
    only = {s for s in args.only.split(",") if s}
    for path in sorted(args.tables.glob("*.json")):
        if only and path.stem not in only:
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        name, space_name = data["program"], data["space"]
        if name in out["programs"].get(space_name, {}):
            continue
        row = table_row(path, args.sample, args.seed, kernel_model, runs)
        out["programs"].setdefault(space_name, {})[name] = row
        print(f"  {name} {space_name}: kernels tau {row['kendall_tau']:+.3f} (sum alone "
              f"{row['kernel_sum_kendall_tau']:+.3f}), graph model {row['graph_model_kendall_tau']:+.3f}"
              f" over {row['configs']} configurations ({row['distinct_modules']} distinct modules, "
              f"{row['seconds']:.0f} s)", flush=True)
        summarise(out)
        atomic_write_json(out, args.out, indent=1)
    summarise(out)
    load1 = os.getloadavg()
    out["meta"] = {"command": "python benchmarks/models/bench_kernels_zero_shot.py " + " ".join(sys.argv[1:]),
                   "date": date.today().isoformat(), "load": f"{load0[0]:.2f} → {load1[0]:.2f}",
                   "machine": f"{os.cpu_count()}-core CPU"}
    atomic_write_json(out, args.out, indent=1)
    for space_name in sorted(out["programs"]):
        s = out[space_name]
        print(f"{space_name}: median tau kernels {s['median_kendall_tau']:+.3f}, graph model "
              f"{s['median_graph_model_kendall_tau']:+.3f} ({s['wins_vs_graph_model']}/{s['programs']} programs ahead)")
    if args.into:
        report = json.loads(args.into.read_text(encoding="utf-8"))
        report["results"].setdefault("zero_shot", {})["kernels"] = {
            **{sp: out[sp] for sp in out["programs"]}, "details": str(args.out.resolve().relative_to(ROOT))
            if args.out.resolve().is_relative_to(ROOT) else str(args.out), "meta": out["meta"]}
        atomic_write_json(report, args.into)


if __name__ == "__main__":
    main()
