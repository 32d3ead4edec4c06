"""Does the flag model learn the regime `graphcost tune` measures in? Labels of the same programs and
configurations measured two ways, and models trained on each (issues 33 and 34).

    python benchmarks/lab/compare_regimes.py --multi collections/cpu_zoo_flags_mt \\
        [--single cpu_zoo_flags] [--seeds 3] [--work runs/regimes] [--json benchmarks/results/regimes.json]

The shipped flag collection (``--single``, `cpu_zoo_flags`) measures each process pinned to one core
with XLA's CPU kernels single-threaded: far less noise on a shared machine. `graphcost tune` measures
the user's program as it runs: multi-threaded, not pinned. ``--multi`` is a collection of the same
programs and the same 32 configurations each in that regime (``REGIME=multi
benchmarks/collections/run_zoo_collection.sh``). For the graphs both hold:

1. **Label agreement**: Spearman between the two labels of each graph (per family and overall), next
   to each collection's own agreement between two of its processes (the noise of one process).
2. **Models**: `graphcost train --data-dir` with no options on each regime's labels of the SAME
   graphs, each graph in the split the shipped collection gives it (whole families per side); only
   the labels differ.
3. **What each model ranks**: Kendall τ on the validation families (which would choose) and the test
   families against either regime's labels, and zero-shot on the tune suite's flag tables
   (`benchmarks/results/tune_wide/tables`, measured by the tuner: multi-threaded; programs never in the
   training data), median and mean over the 14 programs; per seed, over seeds, and of the seeds' ensemble.

Runs that exist in ``--work`` are reused (delete them to train again).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks" / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite


def shared_graphs(multi: Path, single: Path) -> dict[str, tuple[str, str, Path, Path]]:
    """name -> (family, the single collection's split, multi file, single file) for the graphs both hold."""
    import bench_real as br

    m, s = br.read_manifest(multi)["graphs"], br.read_manifest(single)["graphs"]
    return {name: (s[name]["family"], s[name]["split"], multi / m[name]["file"], single / s[name]["file"])
            for name in sorted(set(m) & set(s))}


def label_agreement(graphs: dict) -> dict:
    """Spearman between the two regimes' labels of each graph, per family and over all graphs."""
    from scipy.stats import spearmanr

    per_graph, within = {}, {}
    for name, (family, _, fm, fs) in graphs.items():
        with np.load(fm, allow_pickle=False) as a, np.load(fs, allow_pickle=False) as b:
            if not np.array_equal(a["config_feat"], b["config_feat"]):
                sys.exit(f"{fm}: its configurations differ from {fs}'s; the two collections must use the same seed")
            per_graph[name] = float(spearmanr(a["config_runtime"], b["config_runtime"]).statistic)
            for regime, z in (("multi", a), ("single", b)):
                samples = np.asarray(z["config_runtime_samples"], np.float64)  # (K, P): one column per process
                within.setdefault(regime, {})[name] = float(np.mean([
                    spearmanr(samples[:, i], samples[:, j]).statistic
                    for i in range(samples.shape[1]) for j in range(i + 1, samples.shape[1])]))
    families = sorted({graphs[n][0] for n in per_graph})
    by_family = {f: {"graphs": sum(graphs[n][0] == f for n in per_graph),
                     "median_spearman": float(np.median([v for n, v in per_graph.items() if graphs[n][0] == f]))}
                 for f in families}
    return {"graphs": len(per_graph), "median_spearman": float(np.median(list(per_graph.values()))),
            "mean_spearman": float(np.mean(list(per_graph.values()))),
            **{f"{regime}_between_processes_mean": float(np.mean(list(v.values()))) for regime, v in within.items()},
            "by_family": by_family, "per_graph": per_graph}


def paired_data(graphs: dict, sources: dict[str, Path], work: Path) -> dict[str, Path]:
    """Two data directories of the same graphs in the same splits, one per regime (copies), each with
    its source's manifest cut to those graphs (what the collection varied: `trained_flag_columns`)."""
    import bench_real as br
    from graphcost.collect.merge import lay_out

    dirs = {}
    for regime, col in (("multi", 2), ("single", 3)):
        manifest = br.read_manifest(sources[regime])
        dirs[regime] = lay_out(work / f"data_{regime}", manifest,
                               {name: (entry[1], entry[col], manifest["graphs"][name]) for name, entry in graphs.items()})
    return dirs


def train(data: Path, out: Path, seed: int, threads: int) -> float:
    """`graphcost train --data-dir DATA --seed SEED`, defaults otherwise; the seconds it took (0 when OUT exists)."""
    if (out / "run.json").is_file() and (out / "best.pt").is_file():
        print(f"  {out}: exists, reused", flush=True)
        return 0.0
    start = time.time()
    cmd = [sys.executable, "-m", "graphcost", "train", "--data-dir", str(data), "--out", str(out), "--overwrite",
           "--seed", str(seed), "--threads", str(threads)]
    print("  " + " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.time() - start


def split_tau(run: Path, data: Path, split: str) -> float:
    """Mean Kendall τ of RUN on one split of DATA (`graphcost evaluate`, no TTA)."""
    cmd = [sys.executable, "-m", "graphcost", "evaluate", str(run), "--data-dir", str(data), "--split", split,
           "--tta", "0", "--format", "json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out)["aggregate"]["kendall_tau"])


def zero_shot(runs: list[Path], tables: Path) -> dict:
    """Zero-shot Kendall τ on the tune suite's flag tables (bench_real's ``zero_shot`` protocol) of one
    run or of several runs' ensemble: the mean of each run's scores standardised over the table
    (`graphcost.models.trees.standardise`)."""
    from scipy.stats import kendalltau

    import bench_tune as bt
    from graphcost.models.trees import standardise
    from graphcost.tuning.scoring import GraphModelScorer

    taus = {}
    for path in sorted(tables.glob("*-flags.json")):
        t = bt.suite_table(path)
        score = np.mean([standardise(GraphModelScorer([run], t.program, t.space)(t.configs)) for run in runs], axis=0)
        taus[t.data["program"]] = float(kendalltau(score, t.ratios).statistic)
    return {"programs": taus, "median_kendall_tau": float(np.median(list(taus.values()))),
            "mean_kendall_tau": float(np.mean(list(taus.values())))}


def main() -> None:
    from graphcost.collect.merge import resolve

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--multi", type=Path, required=True, help="collection measured as graphcost tune measures")
    p.add_argument("--single", type=Path, default=Path("cpu_zoo_flags"), help="default: the shipped flag zoo")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "regimes")
    p.add_argument("--tables", type=Path, default=ROOT / "benchmarks" / "results" / "tune_wide" / "tables")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seeds", type=int, default=3, help="training seeds per regime (0, 1, ...)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    single = resolve(args.single)
    graphs = shared_graphs(args.multi, single)
    if not graphs:
        sys.exit(f"{args.multi}: no graph in common with {single}")
    load_start = [round(x, 2) for x in os.getloadavg()]
    agreement = label_agreement(graphs)
    print(f"{agreement['graphs']} graphs in both: label Spearman median {agreement['median_spearman']:.3f} "
          f"(between two processes: multi {agreement['multi_between_processes_mean']:.3f}, "
          f"single {agreement['single_between_processes_mean']:.3f})", flush=True)
    data = paired_data(graphs, {"multi": args.multi, "single": single}, args.work)
    splits = {s: sum(g[1] == s for g in graphs.values()) for s in ("train", "valid", "test")}
    models: dict[str, dict] = {}
    for regime, d in data.items():
        per_seed = []
        for seed in range(args.seeds):
            run = args.work / f"run_{regime}_s{seed}"
            took = round(train(d, run, seed, args.threads), 1)
            taus = {f"{split} families, {lab} labels": split_tau(run, data[lab], split)
                    for split in ("valid", "test") for lab in data}
            per_seed.append({"seed": seed, "kendall_tau": taus, "zero_shot": zero_shot([run], args.tables),
                             "train_seconds": took})
            zs = per_seed[-1]["zero_shot"]
            print(f"  trained on {regime}, seed {seed}: τ " + ", ".join(f"{k} {v:.3f}" for k, v in taus.items())
                  + f"; zero-shot on the tune suite median {zs['median_kendall_tau']:.3f}, "
                  f"mean {zs['mean_kendall_tau']:.3f}", flush=True)
        rows = {k: [s["kendall_tau"][k] for s in per_seed] for k in per_seed[0]["kendall_tau"]}
        rows.update({f"zero-shot {m}": [s["zero_shot"][f"{m}_kendall_tau"] for s in per_seed] for m in ("median", "mean")})
        models[regime] = {"mean": {k: float(np.mean(v)) for k, v in rows.items()},
                          "std": {k: float(np.std(v)) for k, v in rows.items()}, "seeds": per_seed}
        if args.seeds > 1:
            ens = zero_shot([args.work / f"run_{regime}_s{seed}" for seed in range(args.seeds)], args.tables)
            models[regime]["seed_ensemble_zero_shot"] = ens
            print(f"  trained on {regime}, the {args.seeds} seeds' ensemble: zero-shot on the tune suite median "
                  f"{ens['median_kendall_tau']:.3f}, mean {ens['mean_kendall_tau']:.3f}", flush=True)
        print(f"  trained on {regime}, mean ± std over {args.seeds} seeds: "
              + ", ".join(f"{k} {np.mean(v):.3f} ± {np.std(v):.3f}" for k, v in rows.items()), flush=True)
    if args.json:
        from graphcost.guards.atomic import atomic_write_json

        shown = args.multi.resolve()
        report = {"command": "python benchmarks/lab/compare_regimes.py " + " ".join(sys.argv[1:]),
                  "multi": str(shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown),
                  "single": single.name, "splits": splits, "date": date.today().isoformat(),
                  "load": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
                  "agreement": agreement, "models": models}
        atomic_write_json(report, args.json)


if __name__ == "__main__":
    main()
