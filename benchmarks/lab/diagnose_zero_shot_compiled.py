"""Zero-shot on the tune suite, with and without what the compiler did (issue 33, issue 34).

    python benchmarks/lab/diagnose_zero_shot_compiled.py [--tables DIR] [--configs 48] [--out JSON]

`bench_real.py --protocols zero_shot` scores every measured configuration of the tune suite's tables
(`benchmarks/results/tune_wide/tables`: programs never in the training data) from the configuration
alone: the tables hold no compiled statistics, so the shipped layout model's blend falls back from
the copied bytes to the count of moved tensors. The tuner could compile a candidate before it
measures it (a compile costs a small share of a measurement). This compiles a sample of each table's
measured configurations (``--configs`` per table, seeded; compile only, nothing timed, so it may
run beside other work) and reports, per table, Kendall τ against the measured runtimes of:

* ``model``: the shipped models (`graphcost.pretrained`) as the tuner scores today (no statistics);
* ``model+compiled``: the same models given each configuration's ``config_compiled_stats``; in the
  joint space also each kind's model alone (``layout model+compiled``, ``tile model+compiled``);
* the statistics alone (nothing learned): ``copies`` (copy + transpose bytes, the layout prior),
  ``instructions``, ``fusions`` (kernels) — fewer = predicted faster (NaN where it is constant:
  no configuration of a flag table copies anything).

Resumable: the statistics of finished tables are kept in the output JSON and not compiled again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks" / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite

HEURISTICS = {"copies": lambda s: s[:, 0] + s[:, 3], "instructions": lambda s: s[:, 6], "fusions": lambda s: s[:, 5]}


def table_stats(path: Path, n: int, seed: int) -> dict:
    """Compile a seeded sample of `path`'s measured configurations; their codes, ratios and statistics."""
    import bench_tune as bt

    from graphcost.frontend.programs.jax_program import executable_stats
    from graphcost.tuning.trial import compile_config

    table = bt.suite_table(path)
    data, program, space = table.data, table.program, table.space
    ok = sorted((tuple(c), r) for c, r in zip(table.configs, table.ratios))
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(len(ok), size=min(n, len(ok)), replace=False).tolist())
    codes = [ok[i][0] for i in pick]
    stats = np.stack([executable_stats(compile_config(program, space, c)) for c in codes])  # (n, 7)
    return {"program": data["program"], "space": data["space"], "dims": data["dims"], "codes": [list(c) for c in codes],
            "ratio": [ok[i][1] for i in pick], "stats": stats.tolist()}


def score(entry: dict) -> dict:
    """Kendall τ of each scorer on one table's sample (module docstring)."""
    from scipy.stats import kendalltau

    import bench_tune as bt
    import graphcost.pretrained as pretrained
    from graphcost.tuning.scoring import GraphModelScorer

    fn, fargs = bt.SUITE[entry["program"]]()
    program = bt.TuneProgram(fn, fargs, entry["program"])
    space, _ = bt.replay_space(entry, program)
    codes = [tuple(c) for c in entry["codes"]]
    ratio, stats = np.asarray(entry["ratio"]), np.asarray(entry["stats"])
    scorer = GraphModelScorer([pretrained.shipped_model_dir(k) for k in space.kinds], program, space)

    def tau(s) -> float:
        return float(kendalltau(s, ratio).statistic)

    out = {"model": tau(scorer(codes)), "model+compiled": tau(scorer(codes, compiled=stats))}
    if len(space.kinds) > 1:  # the joint space: each kind's model alone
        for kind in space.kinds:
            alone = GraphModelScorer([pretrained.shipped_model_dir(kind)], program, space)
            out[f"{kind} model+compiled"] = tau(alone(codes, compiled=stats))
    out.update({name: tau(f(stats)) for name, f in HEURISTICS.items()})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tables", type=Path, default=ROOT / "benchmarks" / "results" / "tune_wide" / "tables")
    p.add_argument("--configs", type=int, default=48, help="configurations compiled per table")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "zero_shot_compiled.json")
    args = p.parse_args()
    from graphcost.guards.atomic import atomic_write_json

    report = json.loads(args.out.read_text()) if args.out.is_file() else {"tables": {}}
    report["meta"] = {"command": "python benchmarks/lab/diagnose_zero_shot_compiled.py " + " ".join(sys.argv[1:]),
                      "configs": args.configs, "seed": args.seed, "date": time.strftime("%Y-%m-%d")}
    for path in sorted(args.tables.glob("*.json")):
        entry = report["tables"].get(path.stem)
        if entry is None or len(entry["codes"]) < args.configs and entry.get("all") is not True:
            t0, load0 = time.time(), os.getloadavg()[0]
            entry = table_stats(path, args.configs, args.seed)
            entry.update(table=str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
                         compile_s=round(time.time() - t0, 1), load=round(load0, 2))
            entry["all"] = len(entry["codes"]) < args.configs  # the table had fewer measured configurations
        entry["tau"] = score(entry)
        report["tables"][path.stem] = entry
        atomic_write_json(report, args.out, indent=1)
        print(f"{path.stem}: " + ", ".join(f"{k} {v:+.3f}" for k, v in entry["tau"].items())
              + f"  ({len(entry['codes'])} configurations, compiled in {entry['compile_s']} s)", flush=True)
    for space in ("both", "flags"):
        rows = [e["tau"] for e in report["tables"].values() if e["space"] == space]
        if rows:
            print(f"{space}: median over {len(rows)} programs: "
                  + ", ".join(f"{k} {np.nanmedian([r[k] for r in rows]):+.3f}" for k in rows[0]))


if __name__ == "__main__":
    main()
