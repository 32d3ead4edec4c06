"""How far can a model's zero-shot τ on the tune suite's tables go? Their labels, measured again.

    python benchmarks/tune/remeasure_suite_tables.py [--configs 32] [--processes 3] [--programs moe ...]
        [--spaces flags both] [--json benchmarks/results/suite_remeasured.json]

Each table of `benchmarks/results/tune_wide/tables/` (flags, and the joint space "both") holds one
timing per configuration, taken
in ONE process with the tuner's interleaved protocol (multi-threaded, not pinned). For each program a
seeded uniform sample of `--configs` of its configurations that ran is timed again, against the
default, in `--processes` fresh worker processes (the final check's cross-process protocol:
`graphcost.tuning.crossproc.remeasure_cross_process`; the same protocol settings as the table).
Per program, Kendall τ over the sample:

* ``table_vs_remeasured``: the table's ratios against the processes' median — the noise ceiling of
  a zero-shot τ read on the table (a model that knew the true runtimes could not agree with the
  table better than a second measurement does, in expectation);
* ``process_vs_process``: mean over pairs of processes — the ceiling of the re-measured labels;
* ``model_vs_table`` / ``model_vs_remeasured``: the shipped models' scores (or `--flags-model`,
  `--layout-model`) against each label set, on the same sample.

A uniform sample keeps Kendall τ's expectation: the sample's τ estimates the whole table's.
Timing: run it alone (nothing heavy beside it); the load average is recorded per program.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks" / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite

import bench_real as br  # noqa: E402
import bench_tune as bt  # noqa: E402
from tune_suite import SUITE  # noqa: E402

from graphcost.guards.atomic import atomic_write_json  # noqa: E402
from graphcost.measure.interleaved import TimingProtocol, cpu_model, load_average  # noqa: E402


def tau(a, b) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


def one_program(path: Path, configs: int, processes: int, seed: int, runs: dict[str, Path]) -> dict:
    """Re-measure a sample of the table at `path`; the τ figures of the module docstring."""
    from graphcost.tuning.crossproc import remeasure_cross_process
    from graphcost.tuning.scoring import GraphModelScorer

    table = bt.suite_table(path)
    name = table.data["program"]
    rng = np.random.default_rng(seed)
    default = tuple(table.space.default())
    candidates = [i for i, c in enumerate(table.configs) if tuple(c) != default]
    pick = sorted(rng.choice(len(candidates), size=min(configs, len(candidates)), replace=False).tolist())
    chosen = [table.configs[candidates[i]] for i in pick]
    table_ratio = np.array([table.ratios[candidates[i]] for i in pick], np.float64)  # (K,) runtime / default
    proto = table.data.get("protocol", {})
    protocol = TimingProtocol(rounds=proto.get("rounds", 5), calls=proto.get("calls", 10), warmup=proto.get("warmup", 2),
                        seed=seed)
    ref = f"{ROOT / 'benchmarks' / 'tune_suite.py'}:{SUITE[name].__name__}"
    load_before = load_average()
    rem = remeasure_cross_process(ref, table.data["space"], [default] + [tuple(c) for c in chosen], processes, protocol)
    per_process = 1.0 / rem.speedups  # (P, K) runtime / default, per process
    remeasured = np.median(per_process, axis=0)  # (K,)
    scorer = GraphModelScorer([runs[k] for k in table.space.kinds], table.program, table.space)
    scores = np.asarray(scorer(chosen), np.float64)  # (K,) lower = faster
    pairs = [tau(per_process[p], per_process[q]) for p, q in combinations(range(processes), 2)]
    out = {
        "configs": len(chosen), "processes": processes, "load_before": load_before, "load_after": load_average(),
        "table_vs_remeasured": tau(table_ratio, remeasured),
        "process_vs_process": float(np.mean(pairs)),
        "model_vs_table": tau(scores, table_ratio),
        "model_vs_remeasured": tau(scores, remeasured),
        "codes": [list(map(int, c)) for c in chosen],
        "table_ratio": table_ratio.round(5).tolist(),
        "remeasured_ratio": per_process.round(5).tolist(),
        "model_score": scores.round(5).tolist(),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=Path, default=ROOT / "benchmarks" / "results" / "tune_wide" / "tables")
    ap.add_argument("--programs", nargs="*", default=None, help="suite programs (default: every flag table)")
    ap.add_argument("--configs", type=int, default=32)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--spaces", nargs="+", default=["flags", "both"], choices=["flags", "both"])
    ap.add_argument("--flags-model", type=Path, default=None, help="a flag-model run (default: the shipped one)")
    ap.add_argument("--layout-model", type=Path, default=None, help="a layout-model run (default: the shipped one)")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "suite_remeasured.json")
    args = ap.parse_args()
    paths = sorted(p for sp in args.spaces for p in args.tables.glob(f"*-{sp}.json"))
    if args.programs:
        paths = [p for p in paths if p.stem.rsplit("-", 1)[0] in args.programs]
    if not paths:
        raise SystemExit(f"{args.tables}: no {'/'.join(args.spaces)} table of the programs {args.programs}")
    import graphcost.pretrained as pretrained

    models = {"tile": args.flags_model, "layout": args.layout_model}
    runs = {k: v or pretrained.shipped_model_dir(k) for k, v in models.items()}
    scored_by = {k: str(v) if v else pretrained.describe(k) for k, v in models.items()}
    out = br.read_remeasured(args.json) if args.json.exists() else {}
    out.update({"command": "python " + " ".join(sys.argv), "cpu": cpu_model(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ")})
    progs = out.setdefault("programs", {})  # keyed by the table's name: "moe-flags", "moe-both"
    for path in paths:
        name = path.stem
        if name in progs and progs[name]["configs"] >= args.configs:  # resumable: a finished table stays
            continue
        t0 = time.perf_counter()
        res = one_program(path, args.configs, args.processes, args.seed, runs)
        res["models"] = scored_by  # what model_vs_* scored with (bench_real's zero_shot re-scores the sample)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        progs[name] = res
        atomic_write_json(out, args.json, indent=1)
        print(f"{name}: table~remeasured {res['table_vs_remeasured']:+.3f}  process~process "
              f"{res['process_vs_process']:+.3f}  model~table {res['model_vs_table']:+.3f}  model~remeasured "
              f"{res['model_vs_remeasured']:+.3f}  ({res['seconds']:.0f} s, load {res['load_before'][0]})", flush=True)
    keys = ("table_vs_remeasured", "process_vs_process", "model_vs_table", "model_vs_remeasured")
    out.pop("median_over_programs", None), out.pop("mean_over_programs", None)  # the flag-only layout of 2026-11-29
    for sp in sorted({n.rsplit("-", 1)[1] for n in progs}):
        rows = [v for n, v in progs.items() if n.endswith(f"-{sp}")]
        out[sp] = {"programs": len(rows), **{f"median_{k}": round(float(np.median([v[k] for v in rows])), 4) for k in keys},
                   **{f"mean_{k}": round(float(np.mean([v[k] for v in rows])), 4) for k in keys}}
    atomic_write_json(out, args.json, indent=1)
    print(json.dumps({sp: out[sp] for sp in sorted({n.rsplit("-", 1)[1] for n in progs})}, indent=1))


if __name__ == "__main__":
    main()
