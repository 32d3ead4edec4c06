"""Does the cost model earn its place in `graphcost tune`? Strategies compared at equal budgets on
eight held-out programs (benchmarks/tune_suite.py, none of them in the training zoo).

Two phases:

``measure``: for every program, the whole flag space (192 configurations without fast-math) and
a random sample of the layout space (`--layout-pool`: half `Space.sample`, half mutations of the
default) are compiled, checked against the default's outputs and timed in ONE interleaved batch
with the default (`graphcost.tuning.evaluate.Evaluator`). One JSON table per program and space
in OUT/tables/ (resumable: finished tables are kept). The best speedup in a table is the
best-known speedup.

``confirm``: the best `--confirm-top` configurations of every table are re-measured against the
default in `--confirm-processes` fresh processes (the tuner's final check), to show how much of
a best-known speedup, the maximum over many noisy measurements, survives a second look.

``replay``: every strategy (random, TPE, model, model+online) runs at each budget and seed on
those tables (`graphcost.tuning.replay`): the same code path as a live `graphcost tune`, with
measurements looked up instead of taken. Reported per space and budget: the speedup found as a
share of the best-known one, the number of measurements needed to reach 95% of the best-known
speedup (programs whose best-known speedup is below --min-speedup have nothing to find and are
left out of that median), and on how many programs each model strategy beats TPE. With
--finetune, model+online is also run with the graph model fine-tuned on the measurements
(``model+finetune``) instead of per-program trees. Also the
zero-shot Kendall tau between the cost model's scores and the measured runtimes of each table.

    python benchmarks/bench_tune.py measure --out OUT
    python benchmarks/bench_tune.py confirm --out OUT
    python benchmarks/bench_tune.py replay --out OUT --flags-model RUN --layout-model RUN --json results/tune.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tune_suite import SUITE  # noqa: E402

from graphcost.atomic import atomic_write_json  # noqa: E402
from graphcost.frontend.measure import Protocol, cpu_model, load_average  # noqa: E402
from graphcost.tuning.evaluate import OK, Evaluator, Trial  # noqa: E402
from graphcost.tuning.space import TuneProgram, make_space  # noqa: E402

SPACES = ("flags", "layout")


def table_path(out: Path, program: str, space: str) -> Path:
    return out / "tables" / f"{program}-{space}.json"


def layout_pool(space, size: int, seed: int) -> list[tuple]:
    """`size` distinct non-default configurations: half random, half 1-3 mutations of the default."""
    rng = np.random.default_rng(seed)
    seen, out = {space.default()}, []
    for i in range(100 * size):
        if len(out) == size:
            break
        c = space.sample(rng) if i % 2 == 0 else space.mutate(space.default(), rng)
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out


def measure(args) -> None:
    for name in args.programs:
        fn, fargs = SUITE[name]()
        program = TuneProgram(fn, fargs, name)
        for space_name in SPACES:
            path = table_path(args.out, name, space_name)
            if path.exists():
                print(f"{name} {space_name}: done before ({path})")
                continue
            try:
                space = make_space(space_name, program)
            except ValueError as exc:
                print(f"{name} {space_name}: skipped ({exc})")
                continue
            configs = space.enumerate()[1:] if space_name == "flags" else layout_pool(space, args.layout_pool, args.seed)
            load0, t0 = load_average(), time.perf_counter()
            ev = Evaluator(program, space, Protocol(args.rounds, args.calls, 2, args.seed))
            trials = ev.evaluate(configs)
            took = time.perf_counter() - t0
            ok = [t for t in trials if t.status == OK]
            best = max(1.0, 1.0 / min(t.ratio for t in ok)) if ok else 1.0
            atomic_write_json({
                "program": name, "space": space_name, "dims": [d.name for d in space.dims],
                "trials": [t.to_json() for t in trials], "best_known_speedup": best, "seconds": round(took, 1),
                "loadavg_before": load0, "loadavg_after": load_average(), "cpu": cpu_model(), "cpus": os.cpu_count(),
                "protocol": {"rounds": args.rounds, "calls": args.calls, "warmup": 2, "seed": args.seed},
                "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, path, indent=1)
            failed = len(trials) - len(ok)
            print(f"{name} {space_name}: {len(trials)} configs ({failed} failed) in {took:.0f} s, "
                  f"best-known speedup {best:.3f}x, load {load0} -> {load_average()}", flush=True)


def confirm(args) -> None:
    """Re-measure each table's best configurations against the default in fresh processes
    (`graphcost.tuning.crossproc`): how much of the best-known speedup survives a second look."""
    from graphcost.tuning.crossproc import remeasure_cross_process

    suite = Path(__file__).resolve().parent / "tune_suite.py"
    for path in sorted((args.out / "tables").glob("*.json")):
        data = json.loads(path.read_text())
        if data["program"] not in args.programs or "confirm" in data:
            continue
        ok = sorted((t for t in data["trials"] if t["status"] == OK), key=lambda t: t["ratio"])[: args.confirm_top]
        configs = [tuple([0] * len(data["dims"]))] + [tuple(t["codes"]) for t in ok]
        load0 = load_average()
        rem = remeasure_cross_process(f"{suite}:{SUITE[data['program']].__name__}", data["space"], configs,
                                      args.confirm_processes, Protocol(args.rounds, args.calls, 2, args.seed + 1))
        data["confirm"] = {**rem.to_json(), "table_speedups": [1.0 / t["ratio"] for t in ok],
                           "loadavg_before": load0, "loadavg_after": load_average()}
        atomic_write_json(data, path, indent=1)
        print(f"{data['program']} {data['space']}: table {[round(1 / t['ratio'], 3) for t in ok]} -> "
              f"fresh processes median {[round(x, 3) for x in data['confirm']['speedup_median']]} "
              f"(min {[round(x, 3) for x in data['confirm']['speedup_min']]})", flush=True)


def load_table(path: Path) -> tuple[dict, dict[tuple, Trial]]:
    data = json.loads(path.read_text())
    table = {}
    for t in data["trials"]:
        codes = tuple(t["codes"])
        table[codes] = Trial(codes, t["status"], t["ratio"], t["runtime_ns"], t["default_ns"], t["error"])
    return data, table


class MemoScorer:
    """A cost-model scorer that remembers every configuration it scored (replays re-ask a lot).
    Scores are standardised once over the whole table so memoised values stay comparable."""

    def __init__(self, scorer, table_codes: list[tuple]):
        raw = scorer(table_codes)
        self.memo = dict(zip(table_codes, raw))
        self.predictors, self.space, self.program = scorer.predictors, scorer.space, scorer.program  # for finetune

    def __call__(self, configs):
        return np.array([self.memo[c] for c in configs], np.float64)


def replay(args) -> None:
    from scipy.stats import kendalltau

    from graphcost.tuning.replay import PoolSpace, ReplayEvaluator, best_known
    from graphcost.tuning.scoring import GraphModelScorer
    from graphcost.tuning.strategies import STRATEGIES
    from graphcost.tuning.tuner import run_strategy

    models = {"flags": args.flags_model, "layout": args.layout_model}
    results = {"budgets": args.budgets, "seeds": args.seeds, "min_speedup": args.min_speedup, "programs": {},
               "models": {k: str(v) for k, v in models.items()}}
    for path in sorted((args.out / "tables").glob("*.json")):
        data, table = load_table(path)
        name, space_name = data["program"], data["space"]
        if name not in args.programs:
            continue
        fn, fargs = SUITE[name]()
        program = TuneProgram(fn, fargs, name)
        base = make_space(space_name, program)
        space = base if space_name == "flags" else PoolSpace(base, list(table))
        codes = [base.default()] + [c for c in table if c != base.default()]
        entry = {"best_known": best_known(table), "num_configs": len(table),
                 "num_failed": sum(t.status != OK for t in table.values()), "runs": {}}
        scorer = None
        if models[space_name] is not None:
            t0 = time.perf_counter()
            scorer = MemoScorer(GraphModelScorer([models[space_name]], program, base), codes)
            ok = [c for c in table if table[c].status == OK]
            entry["zero_shot_kendall"] = float(kendalltau([scorer.memo[c] for c in ok],
                                                          [table[c].ratio for c in ok]).statistic)
            entry["score_seconds"] = round(time.perf_counter() - t0, 2)
        for strategy in [*STRATEGIES, *(["model+finetune"] if args.finetune else [])]:
            if strategy.startswith("model") and scorer is None:
                continue
            run_as, learner = ("model+online", "finetune") if strategy == "model+finetune" else (strategy, "tree")
            fine = strategy == "model+finetune"
            for budget in args.finetune_budgets if fine else args.budgets:
                for seed in args.finetune_seeds if fine else args.seeds:
                    ev = ReplayEvaluator(space, table)
                    trials = run_strategy(run_as, space, ev, budget, None, f"{name}:{space_name}", scorer, seed,
                                          round_size=args.round_size, pool_kwargs=None, learner=learner)
                    ratios = [t.ratio for t in trials if t.status == OK]
                    found = max([1.0] + [1.0 / r for r in ratios])
                    best_so_far, reach = 1.0, None
                    for i, t in enumerate(trials):
                        if t.status == OK:
                            best_so_far = max(best_so_far, 1.0 / t.ratio)
                        if reach is None and best_so_far >= 0.95 * entry["best_known"]:
                            reach = i + 1
                    entry["runs"][f"{strategy}|{budget}|{seed}"] = {"found": found, "reach95": reach,
                                                                  "measured": ev.asked}
        results["programs"][f"{name}|{space_name}"] = entry
        print(f"{name} {space_name}: best-known {entry['best_known']:.3f}x, zero-shot tau "
              f"{entry.get('zero_shot_kendall', float('nan')):.3f}", flush=True)
    summary = summarise(results, args)
    results["summary"] = summary
    if args.json:
        atomic_write_json(results, args.json, indent=1)
    print_summary(summary)


def summarise(results: dict, args) -> dict:
    """Per space, strategy and budget: median share of best-known found, median measurements to
    95% (largest budget), and wins / ties against TPE at equal budget (mean over seeds)."""
    out = {}
    for space in SPACES:
        progs = {k: v for k, v in results["programs"].items() if k.endswith(f"|{space}")}
        if not progs:
            continue
        srow = {}
        strategies = sorted({r.split("|")[0] for v in progs.values() for r in v["runs"]},
                            key=lambda s: ("model+online", "model+finetune", "model", "tpe", "random").index(s))
        for strat in strategies:
            row = {}
            runs = {r for v in progs.values() for r in v["runs"] if r.startswith(strat + "|")}
            budgets = sorted({int(r.split("|")[1]) for r in runs})
            seeds = sorted({int(r.split("|")[2]) for r in runs})
            for budget in budgets:
                shares, wins = [], 0
                for v in progs.values():
                    found = np.mean([v["runs"][f"{strat}|{budget}|{s}"]["found"] for s in seeds])
                    tpe = np.mean([v["runs"][f"tpe|{budget}|{s}"]["found"] for s in seeds])
                    shares.append((found - 1.0) / (v["best_known"] - 1.0) if v["best_known"] > 1.0 else 1.0)
                    wins += bool(found > tpe + 1e-9)
                row[budget] = {"median_share_of_best_gain": float(np.median(shares)), "beats_tpe": wins,
                               "programs": len(progs), "seeds": len(seeds)}
            big = max(budgets)
            reach = []
            for v in progs.values():
                if v["best_known"] < args.min_speedup:
                    continue
                r = [v["runs"][f"{strat}|{big}|{s}"]["reach95"] for s in seeds]
                reach.append(np.median([x if x is not None else np.inf for x in r]))
            row["median_reach95"] = float(np.median(reach)) if reach else None
            row["reach95_budget"] = big
            row["programs_with_gain"] = len(reach)
            srow[strat] = row
        out[space] = srow
    return out


def print_summary(summary: dict) -> None:
    for space, rows in summary.items():
        print(f"\n{space}: median share of the best-known gain found (beats TPE at equal budget on k of n programs; "
              "TPE's seeds); median measurements to reach 95% of the best-known speedup")
        for strat, row in rows.items():
            cells = "  ".join(f"b{b}: {row[b]['median_share_of_best_gain']:.2f} ({row[b]['beats_tpe']}/{row[b]['programs']})"
                              for b in row if isinstance(b, int))
            print(f"{strat:<15}{cells}  to 95% (budget {row['reach95_budget']}): {row['median_reach95']} "
                  f"(of {row['programs_with_gain']} programs)")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("phase", choices=("measure", "confirm", "replay"))
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--programs", nargs="+", default=list(SUITE), choices=list(SUITE))
    p.add_argument("--layout-pool", type=int, default=160)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--confirm-top", type=int, default=3, help="confirm: the best k of each table")
    p.add_argument("--confirm-processes", type=int, default=3)
    p.add_argument("--flags-model", type=Path)
    p.add_argument("--layout-model", type=Path)
    p.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 32, 64])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--round-size", type=int, default=4)
    p.add_argument("--min-speedup", type=float, default=1.05)
    p.add_argument("--finetune", action="store_true", help="also run model+online with the graph model "
                   "fine-tuned on the measurements instead of the per-program trees (strategy model+finetune)")
    p.add_argument("--finetune-budgets", type=int, nargs="+", default=[16, 32])
    p.add_argument("--finetune-seeds", type=int, nargs="+", default=[0])
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    {"measure": measure, "confirm": confirm, "replay": replay}[args.phase](args)


if __name__ == "__main__":
    main()
