"""`graphcost tune` live, on whole spaces: every strategy with its real proposals, judged by what the
final check keeps. The pool replay (`bench_tune.py replay`) is the wide sweep;
this is the check that its verdicts hold when the tuner measures for real.

``run``: for each seed, program, budget and strategy (in that order, so a partial run covers
every program and strategy of the first seeds), one ``graphcost.tune(...)`` exactly as a user
calls it: the whole flag space (no pool; TPE's proposals unsnapped), the default protocol, and
the final check in ``--processes`` fresh processes (``program_ref`` = this suite's file). The
default strategy is run with no model argument, i.e. the shipped model and the strategy
``graphcost tune`` picks by itself (result.json's ``strategy`` and ``model`` are recorded). One
JSON per run in OUT/runs/ (resumable: finished runs are kept), with the final-check speedup (1.0
when the default was kept; the figure that chose the kept configuration, comparable with runs made before
the confirmation batch), the confirmation's (``confirmed_speedup``: what `tune` reports), the best in-search speedup, the final check's in-search vs final
pairs, the load average before and after, and the wall time.

Racing (`graphcost.tuning.tuner`: the best configurations so far timed again every round) is on as
graphcost's default (``--race``); each row records it. benchmarks/results/tune_live holds the runs
from before racing existed (race 0), benchmarks/results/tune_live_race those with it.

``summary``: per budget and strategy, over the programs: the geometric mean of the final-check
speedup per seed, its mean and spread (min, max, std) over seeds; the geometric mean of the best
in-search speedup; the programs on which the strategy's mean (over seeds) final speedup beats
TPE's and random's, and those where it is ahead or behind beyond two standard errors of the seeds
(``clearly_ahead_of_tpe`` / ``clearly_behind_tpe``, `bench_tune.clear_difference`); the median wall time of
a run and its median ratio to TPE's and random's on the same (program, seed), compiling, profiling and the
ablation included (``wall_over_tpe``); and the agreement of in-search and final speedups: the Spearman correlation
over every re-measured candidate of every run (pooled after dividing each run's speedups by
their run's mean, so a program's overall gain does not make the correlation), the same without
that division (``spearman_raw``: across programs, where the size of a gain does count), the median
of the per-run correlations, and the median factor by which in search overstates the final check.
Written to OUT/summary.json and, as its ``"live"`` section (``--section``: another key, e.g.
``live_race`` for the runs with racing), into
``--summary`` (benchmarks/results/tune/summary.json; its other sections are kept).

    python benchmarks/tune/bench_tune_live.py run --out benchmarks/results/tune_live --seeds 0 1 2
    python benchmarks/tune/bench_tune_live.py summary --out benchmarks/results/tune_live \\
        --summary benchmarks/results/tune/summary.json

Timing runs: run nothing heavy beside it (ARCHITECTURE / BENCHMARKS.md); the load average is
recorded with every run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tune import clear_difference  # noqa: E402
from dev_loop_suite import DEV_LOOP  # noqa: E402
from holdout_suite import HOLDOUT  # noqa: E402
from tune_suite import SUITE  # noqa: E402

from graphcost.guards.atomic import atomic_write_json  # noqa: E402
from graphcost.measure.interleaved import cpu_model, load_average, spearman  # noqa: E402
from graphcost.tuning.trial import COPY, OK  # noqa: E402

DEFAULT = "default"  # the strategy graphcost tune picks with no options (hedged, with the shipped model)
STRATEGIES = (DEFAULT, "tpe", "random", "kernels")  # kernels: compiled candidates costed kernel by kernel (issue 64)
# Eight of the suite's programs whose flag tables (benchmarks/results/tune_wide/tables) hold a
# best-known gain of >= 1.10x, so that there is something to find at small budgets; among them
# the four on which model+online trailed TPE or random in the live check of issue 34 (mixer,
# recsys, unet and, in the replay, ssm).
LIVE_PROGRAMS = ("gnn", "mixer", "moe", "neural_ode", "odd_attention", "recsys", "ssm", "unet")


def run_path(out: Path, program: str, space: str, strategy: str, budget: int, seed: int) -> Path:
    return out / "runs" / f"{program}-{space}-{strategy.replace('+', '_')}-b{budget}-s{seed}.json"


def run_one(program: str, space: str, strategy: str, budget: int, seed: int, processes: int,
            race: int | None = None) -> dict:
    """One live `graphcost.tune` run (module docstring) and what it kept; `race`: None = graphcost's default."""
    import graphcost
    from graphcost.tuning.tuner import TuneConfig

    race = TuneConfig.race if race is None else race

    suite, file = next((s, f) for s, f in ((SUITE, "tune_suite.py"), (HOLDOUT, "holdout_suite.py"),
                                           (DEV_LOOP, "dev_loop_suite.py")) if program in s)
    fn, fargs = suite[program]()
    ref = f"{Path(__file__).resolve().parent / file}:{suite[program].__name__}"
    load0, t0 = load_average(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="graphcost-live-") as work:  # an --out, as the command line always has:
        # its JAX cache fingerprints the executables (copies, options that change nothing)
        result = graphcost.tune(fn, *fargs, space=space, budget=budget, seed=seed, program_ref=ref,
                                processes=processes, strategies=None if strategy == DEFAULT else [strategy],
                                name=program, progress=False, race=race, out=Path(work) / "tuned")
    took = time.perf_counter() - t0
    ok = [t for t in result.trials if t.status == OK and t.ratio]
    return {"program": program, "space": space, "strategy": strategy, "budget": budget, "seed": seed,
            "race": race,
            "strategy_used": result.strategies, "model": result.model,
            # the final check's figure (what chose the kept configuration; comparable with the runs made before
            # the confirmation batch existed) and the confirmation's (the one `tune` reports since)
            "final_speedup": float(result.selected_speedup or result.speedup) if result.beats_default else 1.0,
            "final_range": list(result.selected_range or result.speedup_range), "beats_default": result.beats_default,
            "confirmed_speedup": float(result.speedup) if result.beats_default else 1.0,
            "confirmed_range": list(result.speedup_range),
            "best": result.best.to_json(), "in_search_best": max([1.0] + [1.0 / t.ratio for t in ok]),
            "measured": sum(t.status != COPY for t in result.trials),
            "failed": sum(t.status not in (OK, COPY) for t in result.trials),
            "same_executable": sum("same_executable_as" in t.extra for t in result.trials),
            "copies_not_compiled": sum("inert_options" in t.extra for t in result.trials),
            "ok_copies": sum(t.status == OK and "same_executable_as" in t.extra for t in result.trials),
            "prior_weights": [t.extra.get("prior_weight") for t in result.trials if t.status != COPY],
            "search_vs_final": result.search_vs_final, "message": result.message, "seconds": round(took, 1),
            "loadavg_before": load0, "loadavg_after": load_average(), "cpu": cpu_model(), "cpus": os.cpu_count(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def run(args) -> None:
    args.programs = args.programs or list(LIVE_PROGRAMS)
    todo = [(s, p, b, st) for s in args.seeds for p in args.programs for b in args.budgets for st in args.strategies]
    done = sum(run_path(args.out, p, args.space, st, b, s).exists() for s, p, b, st in todo)
    print(f"{len(todo)} runs, {done} done before", flush=True)
    for k, (seed, program, budget, strategy) in enumerate(todo):
        path = run_path(args.out, program, args.space, strategy, budget, seed)
        if path.exists():
            continue
        row = run_one(program, args.space, strategy, budget, seed, args.processes, args.race)
        atomic_write_json(row, path, indent=1)
        print(f"[{k + 1}/{len(todo)}] {program} {strategy} b{budget} s{seed}: final {row['final_speedup']:.3f}x, "
              f"in search {row['in_search_best']:.3f}x, {row['seconds']:.0f} s, load {row['loadavg_before']} -> "
              f"{row['loadavg_after']}", flush=True)


def _geomean(xs) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(xs, np.float64)))))


def agreement(rows: list[dict]) -> dict:
    """In-search vs final speedups of the re-measured candidates (module docstring)."""
    xs, ys, raw_x, raw_y, per_run = [], [], [], [], []
    for r in rows:
        pairs = [(c["in_search"], c["final"]) for c in (r["search_vs_final"] or {}).get("candidates", [])]
        if not pairs:
            continue
        a, b = np.array(pairs, np.float64).T
        raw_x += list(a)
        raw_y += list(b)
        xs += list(a / a.mean())
        ys += list(b / b.mean())
        if r["search_vs_final"].get("spearman") is not None:
            per_run.append(r["search_vs_final"]["spearman"])
    pooled = float(spearman(np.array(xs), np.array(ys))) if len(xs) >= 3 else None
    raw = float(spearman(np.array(raw_x), np.array(raw_y))) if len(raw_x) >= 3 else None
    overstated = float(np.median(np.array(raw_x) / np.array(raw_y))) if raw_x else None
    return {"spearman_pooled": None if pooled is None else round(pooled, 4), "candidates": len(xs),
            "spearman_raw": None if raw is None else round(raw, 4),
            "median_in_search_over_final": None if overstated is None else round(overstated, 4),
            "spearman_median_per_run": round(float(np.median(per_run)), 4) if per_run else None,
            "runs_with_a_correlation": len(per_run)}


def summarise(rows: list[dict]) -> dict:
    """The ``"live"`` section (module docstring)."""
    programs = sorted({r["program"] for r in rows})
    cells = {(r["strategy"], r["budget"], r["seed"], r["program"]): r for r in rows}
    strategies = [s for s in STRATEGIES if any(r["strategy"] == s for r in rows)]
    budgets = sorted({r["budget"] for r in rows})
    out: dict = {"programs": programs, "space": sorted({r["space"] for r in rows}), "budgets": budgets,
                 "strategies": {}, "agreement": agreement(rows)}
    for strat in strategies:
        used = sorted({" ".join(r["strategy_used"]) for r in rows if r["strategy"] == strat})
        models = sorted({str(r["model"]) for r in rows if r["strategy"] == strat})
        row: dict = {"strategy_used": used, "model": models, "by_budget": {}}
        for b in budgets:
            seeds = sorted({s for (st, bb, s, _) in cells if st == strat and bb == b})
            complete = [s for s in seeds if all((strat, b, s, p) in cells for p in programs)]
            if not complete:
                continue
            per_seed = [_geomean([cells[strat, b, s, p]["final_speedup"] for p in programs]) for s in complete]
            search = [_geomean([cells[strat, b, s, p]["in_search_best"] for p in programs]) for s in complete]
            mine = {p: np.mean([cells[strat, b, s, p]["final_speedup"] for s in complete]) for p in programs}
            cell = {"seeds": complete, "final_by_program": {p: round(float(v), 4) for p, v in mine.items()},
                    "geomean_final": round(float(np.mean(per_seed)), 4),
                    "geomean_final_per_seed": [round(x, 4) for x in per_seed],
                    "geomean_final_std": round(float(np.std(per_seed)), 4),
                    "geomean_in_search": round(float(np.mean(search)), 4),
                    "agreement": agreement([cells[strat, b, s, p] for s in complete for p in programs])}
            seconds = [cells[strat, b, s, p]["seconds"] for s in complete for p in programs]
            cell["median_seconds"] = round(float(np.median(seconds)), 1)
            if all("confirmed_speedup" in cells[strat, b, s, p] for s in complete for p in programs):
                cell["geomean_confirmed"] = round(float(np.mean(  # the figure `tune` reports: timed after the choice
                    [_geomean([cells[strat, b, s, p]["confirmed_speedup"] for p in programs]) for s in complete])), 4)
            runs = [cells[strat, b, s, p] for s in complete for p in programs]
            if all("ok_copies" in r for r in runs):  # proposals that ran an executable timed before: no budget
                cell["copies"] = {k: int(sum(r[k] for r in runs)) for k in ("same_executable", "copies_not_compiled",
                                                                           "ok_copies")}
            for other in ("tpe", "random"):
                if other == strat or not all((other, b, s, p) in cells for s in complete for p in programs):
                    continue
                theirs = {p: np.mean([cells[other, b, s, p]["final_speedup"] for s in complete]) for p in programs}
                cell[f"beats_{other}"] = int(sum(mine[p] > theirs[p] + 1e-9 for p in programs))
                cell[f"loses_to_{other}"] = int(sum(mine[p] < theirs[p] - 1e-9 for p in programs))
                clear = {p: clear_difference([cells[strat, b, s, p]["final_speedup"] for s in complete],
                                             [cells[other, b, s, p]["final_speedup"] for s in complete])
                         for p in programs}
                cell[f"clearly_ahead_of_{other}"] = sorted(p for p, v in clear.items() if v > 0)
                cell[f"clearly_behind_{other}"] = sorted(p for p, v in clear.items() if v < 0)
                # wall time per (program, seed) over the other strategy's, median: compiling, profiling and
                # the ablation included
                cell[f"wall_over_{other}"] = round(float(np.median(
                    [cells[strat, b, s, p]["seconds"] / cells[other, b, s, p]["seconds"]
                     for s in complete for p in programs])), 3)
            row["by_budget"][str(b)] = cell
        out["strategies"][strat] = row
    loads = [r[k][0] for r in rows for k in ("loadavg_before", "loadavg_after") if r[k]]
    out["measured"] = {"runs": len(rows), "cpu": sorted({r["cpu"] for r in rows}),
                       "cpus": sorted({r["cpus"] for r in rows}),
                       "dates_utc": [min(r["date_utc"] for r in rows), max(r["date_utc"] for r in rows)],
                       "loadavg_1min": [min(loads), float(np.median(loads)), max(loads)] if loads else None,
                       "seconds": round(sum(r["seconds"] for r in rows), 1)}
    return out


def summary(args) -> None:
    rows = [json.loads(p.read_text()) for p in sorted((args.out / "runs").glob("*.json"))]
    if args.programs is not None:  # a subset (e.g. the programs whose largest budget finished)
        rows = [r for r in rows if r["program"] in args.programs]
    rows = [r for r in rows if r["budget"] in args.budgets and r["seed"] in args.seeds]  # e.g. one machine's seeds
    if not rows:
        raise SystemExit(f"{args.out}/runs: no finished runs to summarise")
    live = {"command": " ".join(sys.argv), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **summarise(rows)}
    atomic_write_json(live, args.out / "summary.json")
    if args.summary is not None:
        whole = json.loads(args.summary.read_text()) if args.summary.exists() else {}
        whole[args.section] = live
        atomic_write_json(whole, args.summary, indent=1)
    print(f"live, {live['space']}, {len(live['programs'])} programs; geometric-mean final-check speedup over the "
          "programs (mean over seeds [min-max]); in-search; wins vs TPE / random")
    for strat, row in live["strategies"].items():
        for b, c in row["by_budget"].items():
            per = c["geomean_final_per_seed"]
            vs = "  ".join(f"vs {o} {c.get('beats_' + o, '-')}/{c.get('loses_to_' + o, '-')} "
                           f"(clearly {len(c.get('clearly_ahead_of_' + o, []))}/{len(c.get('clearly_behind_' + o, []))}"
                           f", wall x{c.get('wall_over_' + o, '-')})" for o in ("tpe", "random") if o != strat)
            print(f"  {strat:<8} b{b:<3} {c['geomean_final']:.3f}x [{min(per):.3f}-{max(per):.3f}] "
                  f"in search {c['geomean_in_search']:.3f}x  {vs}  agreement {c['agreement']['spearman_pooled']}")
    print(f"in-search vs final, all runs: {live['agreement']}")
    print(markdown_table(live))


def markdown_table(live: dict) -> str:
    """Final-check speedup per program and budget (mean over the seeds), the strategies side by side
    (`STRATEGIES` order), then the geometric mean over the programs and its per-seed values."""
    strategies = list(live["strategies"])
    budgets = [str(b) for b in live["budgets"]]

    def cell(b: str, key: str, fmt) -> str:
        return " / ".join(fmt(live["strategies"][s]["by_budget"][b][key]) if b in live["strategies"][s]["by_budget"]
                          else "-" for s in strategies)

    lines = [f"| program ({' / '.join(strategies)}) | " + " | ".join(f"budget {b}" for b in budgets) + " |",
             "| --- |" + " --- |" * len(budgets)]
    for p in live["programs"]:
        lines.append(f"| {p} | " + " | ".join(cell(b, "final_by_program", lambda v, p=p: f"{v[p]:.2f}")
                                             for b in budgets) + " |")
    lines.append("| **geometric mean over the programs, mean over seeds** | "
                 + " | ".join(cell(b, "geomean_final", lambda v: f"{v:.3f}") for b in budgets) + " |")
    lines.append("| the same, per seed | " + " | ".join(
        cell(b, "geomean_final_per_seed", lambda v: ", ".join(f"{x:.3f}" for x in v)) for b in budgets) + " |")
    lines.append("| standard deviation over seeds | "
                 + " | ".join(cell(b, "geomean_final_std", lambda v: f"{v:.3f}") for b in budgets) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("phase", choices=("run", "summary"))
    p.add_argument("--out", type=Path, required=True, help="the directory of the runs (OUT/runs/)")
    p.add_argument("--programs", nargs="+", default=None, choices=[*SUITE, *HOLDOUT, *DEV_LOOP],
                   help="programs of the suite (tune_suite.py; run: default the 8 of LIVE_PROGRAMS), the held-out set "
                        "(holdout_suite.py: for the final figures only) or the development loop programs "
                        "(dev_loop_suite.py); summary: only these (default: every program of OUT/runs)")
    p.add_argument("--space", default="flags", choices=("flags", "layout", "both"))
    p.add_argument("--strategies", nargs="+", default=list(STRATEGIES[:3]), choices=list(STRATEGIES))
    p.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 32], help="run: these; summary: only these")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="run: these; summary: only these")
    p.add_argument("--processes", type=int, default=3, help="processes of the final check")
    p.add_argument("--race", type=int, default=None, help="configurations raced per round (default: graphcost "
                   "tune's; the runs before racing existed had none: benchmarks/results/tune_live)")
    p.add_argument("--section", default="live", help="summary: the key of --summary to write (default: live)")
    p.add_argument("--summary", type=Path, help="summary: also write the live section into this summary.json")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    {"run": run, "summary": summary}[args.phase](args)


if __name__ == "__main__":
    main()
