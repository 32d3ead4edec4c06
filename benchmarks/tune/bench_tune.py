"""Does the cost model earn its place in `graphcost tune`? Strategies compared at equal budgets on
the held-out programs of benchmarks/tune/tune_suite.py (14, none of them in the training zoo).

Phases:

``measure``: for every program and space (`--spaces`: flags, layout, both), the whole space when
it has at most `--pool` configurations, else a random sample of `--pool` (half `Space.sample`,
half 1-3 mutations of the default), is compiled, checked against the default's outputs and
timed interleaved with the default (`graphcost.tuning.trial.Evaluator`), in chunks of
`--chunk` configurations, each chunk its own interleaved batch with the default (the ratio of a
configuration is to the default of its chunk, so load drifts between chunks cancel) and the load
average recorded before and after each chunk. One JSON table per program and space in
OUT/tables/ (resumable: finished tables are kept). The best speedup in a table is the
best-known speedup.

``confirm``: the best `--confirm-top` configurations of every table are re-measured against the
default in `--confirm-processes` fresh processes (the tuner's final check), to show how much of
a best-known speedup, the maximum over many noisy measurements, survives a second look.

``replay``: every strategy (random, TPE, model, and model+online with each online learner of
`--learners`: ``model+online`` is the default learner, ``model+online:NAME`` the others) runs at
each budget and seed on those tables (`benchmarks/tune/tune_replay.py`): the same code path as a live
`graphcost tune`, with measurements looked up instead of taken. A table that does not hold its
whole space is replayed in a `PoolSpace` (strategies choose among its configurations). Tables
measured before the flag space was widened (7 columns) are replayed in the flag space of their
columns. Reported per space and budget: the speedup found as a
share of the best-known one, the number of measurements needed to reach 95% of the best-known
speedup (programs whose best-known speedup is below --min-speedup have nothing to find and are
left out of that median), and on how many programs each model strategy beats TPE. Also the
zero-shot Kendall tau between the cost model's scores and the measured runtimes of each table.

    python benchmarks/tune/bench_tune.py measure --out OUT --spaces flags both --pool 384
    python benchmarks/tune/bench_tune.py confirm --out OUT
    python benchmarks/tune/bench_tune.py replay --out OUT --flags-model RUN --layout-model RUN --seeds 0 1 2 3 4 \
        --json OUT/replay.json --summary OUT/summary.json

``summary``: the summary of several replay JSONs together (``--replays A.json B.json``, e.g. the
flag and joint spaces replayed in separate runs).

``--summary`` writes the issue-25 summary: per space, the number of programs, the median
measurements to 95% of the best-known speedup per strategy (at the largest budget; programs
whose best-known speedup is below --min-speedup left out), and the wins against TPE at equal
budget: ``wins_vs_tpe`` is the median over budgets of the number of programs on which the
strategy's mean found speedup over the seeds beats TPE's (ties, e.g. on programs with nothing to
find, are not wins), ``wins_vs_tpe_by_budget`` / ``losses_vs_tpe_by_budget`` the counts per
budget, and ``clear_wins_vs_tpe_by_budget`` / ``clear_losses_vs_tpe_by_budget`` (every strategy, random
too) only those where the two strategies' mean log speedups differ by more than two standard errors of
the seeds (`clear_difference`): with 5 seeds, random search "beats" TPE on 7 of 14 programs at budgets
8 and 16, and most of any strategy's wins are of that kind. ``median_measurements_to_95`` is null
where the median program did not reach 95% within the largest budget. Also the geometric-mean
speedup found per budget, and ``default_worse_than_random``: the (program, budget) pairs where
``model+online`` ended below random search by more than the table's noise (`table_noise`). With the
command, machine, date and load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tune_suite import SUITE  # noqa: E402
from dev_loop_suite import DEV_LOOP  # noqa: E402

from graphcost.guards.atomic import atomic_write_json  # noqa: E402
from graphcost.measure.interleaved import TimingProtocol, cpu_model, load_average  # noqa: E402
from graphcost.tuning.trial import OK, Evaluator, Trial  # noqa: E402
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import make_space, sample_pool  # noqa: E402
from graphcost.tuning.strategies import strategy_names, strategy_entry  # noqa: E402

SPACES = ("flags", "layout", "both")
MODEL_STRATEGIES = tuple(s for s in strategy_names() if strategy_entry(s).graph_model)  # guided by the graph model


def build(name: str) -> tuple:
    """``(fn, example_args)`` of a suite program, or of a zoo variant (`graphcost.frontend.programs.zoo`:
    the DEVELOPMENT programs on which the tuner's own choices are made, apart from the suite).
    The loop programs of benchmarks/tune/dev_loop_suite.py (`DEV_LOOP`) are DEVELOPMENT programs too."""
    if name in SUITE:
        return SUITE[name]()
    if name in DEV_LOOP:
        return DEV_LOOP[name]()
    from graphcost.frontend.programs.zoo import get_program

    return get_program(name).build()


def table_path(out: Path, program: str, space: str) -> Path:
    return out / "tables" / f"{program}-{space}.json"


def measure(args) -> None:
    for name in args.programs:
        fn, fargs = build(name)
        program = TuneProgram(fn, fargs, name)
        for space_name in args.spaces:
            path = table_path(args.out, name, space_name)
            if path.exists():
                print(f"{name} {space_name}: done before ({path})")
                continue
            try:
                space = make_space(space_name, program)
            except ValueError as exc:
                print(f"{name} {space_name}: skipped ({exc})")
                continue
            whole = space.size() <= args.pool + 1
            configs = space.enumerate()[1:] if whole else sample_pool(space, args.pool, args.seed)[0]
            load0, t0 = load_average(), time.perf_counter()
            ev = Evaluator(program, space, TimingProtocol(args.rounds, args.calls, 2, args.seed))
            trials, chunks = [], []
            for at in range(0, len(configs), args.chunk):
                before = load_average()
                trials += ev.evaluate(configs[at: at + args.chunk])
                chunks.append({"configs": len(configs[at: at + args.chunk]), "loadavg_before": before,
                               "loadavg_after": load_average()})
            took = time.perf_counter() - t0
            ok = [t for t in trials if t.status == OK]
            best = max(1.0, 1.0 / min(t.ratio for t in ok)) if ok else 1.0
            atomic_write_json({
                "program": name, "space": space_name, "dims": [d.name for d in space.dims],
                "space_size": str(space.size()), "whole_space": whole,
                "trials": [t.to_json() for t in trials], "best_known_speedup": best, "seconds": round(took, 1),
                "chunks": chunks, "loadavg_before": load0, "loadavg_after": load_average(), "cpu": cpu_model(),
                "cpus": os.cpu_count(), "protocol": {"rounds": args.rounds, "calls": args.calls, "warmup": 2,
                                                     "seed": args.seed},
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
        if data["program"] not in SUITE:
            print(f"{data['program']}: a zoo program has no file reference for fresh processes; not confirmed")
            continue
        ok = sorted((t for t in data["trials"] if t["status"] == OK), key=lambda t: t["ratio"])[: args.confirm_top]
        configs = [tuple([0] * len(data["dims"]))] + [tuple(t["codes"]) for t in ok]
        load0 = load_average()
        rem = remeasure_cross_process(f"{suite}:{SUITE[data['program']].__name__}", data["space"], configs,
                                      args.confirm_processes, TimingProtocol(args.rounds, args.calls, 2, args.seed + 1))
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


class SuiteTable(NamedTuple):
    """One measured table of a tune-suite program, ready to score: the configurations that ran."""

    data: dict  # the table's JSON (program, space, dims, confirm, ...)
    program: TuneProgram
    space: Any  # the space the table was measured in (`replay_space`)
    codes: list[tuple]  # (K,) the table's own codes of the configurations that ran (status OK)
    configs: list[tuple]  # (K,) the same configurations as codes of `space`
    ratios: list[float]  # (K,) runtime / the default's runtime (higher = slower)


def suite_table(path: Path) -> SuiteTable:
    """The table at `path` (`load_table`) with its program built from the suite and its space replayed."""
    data, raw = load_table(path)
    fn, fargs = SUITE[data["program"]]()
    program = TuneProgram(fn, fargs, data["program"])
    space, convert = replay_space(data, program)
    ok = [(codes, t.ratio) for codes, t in raw.items() if t.status == OK]
    return SuiteTable(data, program, space, [c for c, _ in ok], [convert(c) for c, _ in ok], [r for _, r in ok])


class MemoScorer:
    """A cost-model scorer that remembers every configuration it scored (replays re-ask a lot).
    Scores are standardised once over the whole table so memoised values stay comparable."""

    def __init__(self, scorer, table_codes: list[tuple]):
        raw = scorer(table_codes)
        self.memo = dict(zip(table_codes, raw))
        self.predictors, self.space, self.program = scorer.predictors, scorer.space, scorer.program  # for finetune

    def __call__(self, configs):
        return np.array([self.memo[c] for c in configs], np.float64)


class WrongPrior:
    """A memoised scorer's scores made wrong on purpose: ``negated`` (the best predicted becomes the worst)
    or ``random`` (independent normal scores, fixed by `seed`): the replay's test of a misleading prior."""

    def __init__(self, scorer: MemoScorer, kind: str, seed: int):
        rng = np.random.default_rng(seed)
        codes = list(scorer.memo)
        values = -np.array([scorer.memo[c] for c in codes]) if kind == "negated" else rng.normal(size=len(codes))
        self.memo = dict(zip(codes, values.tolist()))
        self.predictors, self.space, self.program = scorer.predictors, scorer.space, scorer.program

    def __call__(self, configs):
        return np.array([self.memo[c] for c in configs], np.float64)


KERNEL_PRIORS = ("kernels", "ranks", "effects", "effects+graph", "rerank64")


class KernelPriorMemo:
    """The shipped kernel model as the model strategies' prior, memoised over a table (``--prior-models``):

    * ``kernels``: log T̂(c), each table configuration compiled and costed through its kernels
      (`graphcost.kernels.scoring.KernelModelScorer`): what a prior could be were every candidate compiled;
    * ``ranks``: the mean of that ranking's and the graph model's ranks;
    * ``effects``: additive main effects, Σ_i [log T̂(d with option i at c_i) − log T̂(d)] from the default d and
      its single-option neighbours only (about 40 compiles per program, whatever the pool's size);
      ``effects+graph``: the mean of its rank and the graph model's;
    * ``rerank64``: the graph model's 64 best re-ordered among themselves by T̂ (what compiling the top of a
      graph-scored pool gives).

    Kernel costs are cached per program in `cache` (npy; re-made when absent)."""

    def __init__(self, graph: "MemoScorer", program, base, table_codes: list[tuple], kind: str, cache: Path):
        from scipy.stats import rankdata

        from graphcost.kernels.scoring import KernelModelScorer
        from graphcost.tuning.kernel_prior import additive_scores, main_effects

        scorer: list = []  # built once, on the first compile needed (it compiles the default first)

        def costs(configs: list[tuple], tag: str) -> np.ndarray:
            path = cache / f"{program.name}-{tag}-{len(configs)}.npy"
            if path.is_file():
                return np.load(path, allow_pickle=False)
            if not scorer:
                ev = Evaluator(program, base)
                scorer.append(KernelModelScorer(ev.executables, base.flag_vector))
            sec = np.asarray(scorer[0](configs), np.float64)
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, sec)
            return sec

        g = np.array([graph.memo[c] for c in table_codes])
        if kind.startswith("effects"):
            d = base.default()
            singles = [d[:i] + (v,) + d[i + 1:] for i, dim in enumerate(base.dims) for v in range(1, len(dim.choices))]
            sec = costs([d] + singles, "effects")
            score = additive_scores(main_effects(d, singles, sec[0], sec[1:]), d, table_codes)
        else:
            sec = costs(table_codes, "table")
            worst = np.nanmax(np.where(np.isfinite(sec), sec, np.nan))
            score = np.log(np.where(np.isfinite(sec), sec, 2 * worst))  # a failed compile: ranked last
        if kind in ("ranks", "effects+graph"):
            score = (rankdata(score) + rankdata(g)) / 2.0
        elif kind == "rerank64":
            top = np.argsort(g, kind="stable")[:64]
            out = g.copy()
            out[top[np.argsort(score[top], kind="stable")]] = np.sort(g[top])
            score = out
        self.memo = dict(zip(table_codes, score))
        self.predictors, self.space, self.program = graph.predictors, graph.space, graph.program

    def __call__(self, configs):
        return np.array([self.memo[c] for c in configs], np.float64)


def wrong_prior(scorer, kind: str, seed: int):
    if kind not in WRONG_PRIORS:
        raise ValueError(f"unknown prior {kind!r}; expected one of {', '.join(WRONG_PRIORS)}")
    return WrongPrior(scorer, kind, 10_000 + seed)


WRONG_PRIORS = ("negated", "random")


def table_noise(data: dict, floor: float = 0.02) -> float:
    """How far a speedup in this table can be from a second look: the median relative gap between
    the table's speedups of its confirmed configurations and their median in fresh processes
    (`confirm`; it includes the winner's curse of the table's best), at least `floor`; `floor`
    when the table was not confirmed."""
    confirm = data.get("confirm")
    if not confirm:
        return floor
    gaps = [abs(t / c - 1.0) for t, c in zip(confirm["table_speedups"], confirm["speedup_median"])]
    return max(floor, float(np.median(gaps)))


def replay_space(data: dict, program):
    """The space a table was measured in, and its configurations as codes of that space: a flag
    table of fewer columns than today's flag space (measured before it was widened) is replayed in
    the flag space of its columns, its codes padded with the default of the other dimensions."""
    from graphcost.frontend.programs.flags import FLAG_COLUMNS
    from graphcost.tuning.space import FlagSpace, JointSpace

    def flags_of(dims):
        return FlagSpace(columns=dims) if set(dims) <= set(FLAG_COLUMNS) and len(dims) < len(FLAG_COLUMNS) else None

    name, dims = data["space"], data["dims"]
    if name == "flags" and flags_of(dims) is not None:
        base = flags_of(dims)
    elif name == "both" and flags_of([d for d in dims if not d.startswith("site")]) is not None:
        base = JointSpace(flags_of([d for d in dims if not d.startswith("site")]), make_space("layout", program))
    else:
        base = make_space(name, program)
    where = {d.name: i for i, d in enumerate(base.dims)}
    missing = [d for d in dims if d not in where]
    if missing:
        raise ValueError(f"{data['program']} {name}: table dimension {missing[0]!r} is not in today's space")

    def convert(codes):
        out = [0] * len(base.dims)
        for d, c in zip(dims, codes):
            out[where[d]] = int(c)
        return base.check(out)

    return base, convert


def replay(args) -> None:
    from scipy.stats import kendalltau

    from tune_replay import PoolSpace, ReplayEvaluator, best_known
    from graphcost.tuning.scoring import GraphModelScorer
    from graphcost.tuning.strategies import ONLINE_LEARNERS
    from graphcost.tuning.tuner import run_strategy

    models = {"tile": args.flags_model, "layout": args.layout_model}  # by the graph kind that scores a space
    results = {"budgets": args.budgets, "seeds": args.seeds, "min_speedup": args.min_speedup, "programs": {},
               "learners": args.learners, "models": {k: str(v) for k, v in models.items()}}
    for path in sorted((args.out / "tables").glob("*.json")):
        data, raw = load_table(path)
        name, space_name = data["program"], data["space"]
        if name not in args.programs or space_name not in args.spaces:
            continue
        fn, fargs = build(name)
        program = TuneProgram(fn, fargs, name)
        base, convert = replay_space(data, program)
        table = {convert(c): Trial(convert(c), t.status, t.ratio, t.runtime_ns, t.default_ns, t.error)
                 for c, t in raw.items()}
        whole = len(table) + 1 >= base.size()
        space = base if whole else PoolSpace(base, list(table))
        codes = [base.default()] + [c for c in table if c != base.default()]
        entry = {"best_known": best_known(table), "num_configs": len(table), "whole_space": whole,
                 "num_failed": sum(t.status != OK for t in table.values()), "noise": table_noise(data), "runs": {}}
        runs = [models[k] for k in base.kinds if models.get(k) is not None]
        scorer = None
        if len(runs) == len(base.kinds):
            t0 = time.perf_counter()
            scorer = MemoScorer(GraphModelScorer(runs, program, base), codes)
            ok = [c for c in table if table[c].status == OK]
            entry["zero_shot_kendall"] = float(kendalltau([scorer.memo[c] for c in ok],
                                                          [table[c].ratio for c in ok]).statistic)
            entry["score_seconds"] = round(time.perf_counter() - t0, 2)
        priors = {"graph": scorer}  # the model strategies' prior by --prior-models name
        for kind in (k for k in args.prior_models if k != "graph" and scorer is not None):
            priors[kind] = KernelPriorMemo(scorer, program, base, codes, kind, args.out / "kernel_costs")
            entry[f"zero_shot_kendall^{kind}"] = float(kendalltau([priors[kind].memo[c] for c in ok],
                                                                  [table[c].ratio for c in ok]).statistic)
        strategies = ["random", "tpe", "hedged", "model"] + [
            "model+online" if i == 0 else f"model+online:{learner}" for i, learner in enumerate(args.learners)] + [
            f"model+online:effects@p{share:g}" for share in args.probe_shares] + [
            f"model+online@x{variant}" for variant in args.explore] + [f"hedged@w{w}" for w in args.weights]
        if args.strategies:
            strategies = [s for s in strategies if s.split("@")[0].split(":")[0] in args.strategies]
        strategies += [f"{s}~{prior}" for prior in args.priors if prior != "real"
                       for s in strategies if s.split("@")[0].split(":")[0] in MODEL_STRATEGIES]
        model_runs = [s for s in strategies if s.split("@")[0].split(":")[0].split("~")[0] in MODEL_STRATEGIES]
        strategies = [s for s in strategies if s not in model_runs or "graph" in args.prior_models] + [
            f"{s}^{kind}" for kind in args.prior_models if kind != "graph" for s in model_runs]
        for strategy in strategies:
            if strategy.split("@")[0].split(":")[0].split("~")[0].split("^")[0] in MODEL_STRATEGIES and scorer is None:
                continue
            strategy_, _, prior_model = strategy.partition("^")  # ^kernels etc.: the kernel model's prior
            strategy_, _, prior = strategy_.partition("~")  # ~negated / ~random: a wrong prior (`wrong_prior`)
            strategy_, _, weights = strategy_.partition("@w")  # @wSTART/MAX: hedged's weights of the prior
            weight_start, _, weight_max = weights.partition("/")
            weight_max, _, partner = weight_max.partition("/")
            partner, _, evidence = partner.partition("/")
            strategy_, _, explore = strategy_.partition("@x")  # @xWHEN:SHARE: random interleaving
            explore_when, _, explore_share = explore.partition(":")
            strategy_, _, probes = strategy_.partition("@p")
            learner = strategy_.split(":")[1] if ":" in strategy_ else args.learners[0]
            run_as = strategy_.split(":")[0]
            fine = learner == "finetune"
            for budget in args.finetune_budgets if fine else args.budgets:
                for seed in args.finetune_seeds if fine else args.seeds:
                    ev = ReplayEvaluator(space, table)
                    extra = ({"weight_start": float(weight_start), "weight_max": float(weight_max),
                              "partner": partner or "tpe", **({"evidence": evidence} if evidence else {})}
                             if weight_start else {})
                    trials = run_strategy(run_as, space, ev, budget, None, f"{name}:{space_name}",
                                          wrong_prior(priors[prior_model or 'graph'], prior, seed) if prior else priors[prior_model or 'graph'], seed,
                                          round_size=args.round_size, pool_kwargs=None, learner=learner,
                                          probes=float(probes) if probes else None,
                                          explore=float(explore_share) if explore_share else None,
                                          explore_when=explore_when or None, **extra)
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
    assert set(args.learners) <= set(ONLINE_LEARNERS), args.learners
    report(results, args)


def report(results: dict, args) -> None:
    """Summarise replayed runs (`summarise`), write them with their summary to --json and the
    issue-25 summary to --summary (with `describe_tables` of --out when given; its live sections,
    written by bench_tune_live.py, are kept), print the table."""
    summary = summarise(results, args)
    if args.json:
        atomic_write_json({**results, "summary": summary}, args.json, indent=1)
    if args.summary:
        out = issue_summary(results, summary, args)
        if args.out is not None:
            out["tables"] = describe_tables(args.out)
        if args.summary.is_file():  # keep the live sections (bench_tune_live.py writes them)
            before = json.loads(args.summary.read_text(encoding="utf-8"))
            out.update({k: v for k, v in before.items() if k.startswith("live")})
        atomic_write_json(out, args.summary, indent=1)
    if getattr(args, "wrong_prior_summary", None):
        write_wrong_prior(summary, args)
    print_summary(summary)


def write_wrong_prior(summary: dict, args, default: str = "hedged") -> None:
    """``replay_wrong_prior`` of summary.json: per wrong prior and budget, the geometric mean over the
    programs (each the mean over seeds) of the speedup found by the default strategy run with that prior,
    by TPE, by random search and by the default with the real prior (`--priors`); the flag space. The
    file's other sections are kept."""
    rows = summary.get("flags", {})
    out: dict[str, Any] = {"command": " ".join(sys.argv), "cpu": cpu_model(), "loadavg": load_average(),
                           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tables": str(args.out),
                           "programs": len(args.programs) if args.programs != list(SUITE) else len(SUITE),
                           "seeds": args.seeds}
    for kind in (p for p in args.priors if p != "real"):
        out[kind] = {str(b): {"default": rows[f"{default}~{kind}"][b]["geomean_found"],
                              "tpe": rows["tpe"][b]["geomean_found"], "random": rows["random"][b]["geomean_found"],
                              "default_real_prior": rows[default][b]["geomean_found"]}
                     for b in args.budgets if f"{default}~{kind}" in rows}
    path = args.wrong_prior_summary
    before = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    atomic_write_json({**before, "replay_wrong_prior": out}, path, indent=1)


def merge_replays(args) -> None:
    """``summary``: the summary of several replay JSONs (e.g. one per space, replayed separately),
    as if they were one replay; they must share budgets and --min-speedup. Their seeds may differ
    (each space's summary counts its own; the top level lists them all)."""
    results = None
    for path in args.replays:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            missing = [k for k in ("programs", "budgets", "seeds", "min_speedup", "models") if k not in data]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError) as exc:
            raise SystemExit(f"--replays {path}: cannot be read as a replay JSON ({type(exc).__name__}: {exc})")
        if missing:
            raise SystemExit(f"--replays {path}: not a replay JSON of this script (no {missing[0]!r})")
        if results is None:
            results = {k: v for k, v in data.items() if k != "summary"}
            results["programs"] = dict(data["programs"])
            continue
        for key in ("budgets", "min_speedup"):
            if data[key] != results[key]:
                raise SystemExit(f"{path}: {key} {data[key]} differs from {args.replays[0]}'s {results[key]}")
        overlap = set(results["programs"]) & set(data["programs"])
        if overlap:
            raise SystemExit(f"{path}: replays {sorted(overlap)[0]!r} again ({args.replays[0]} or another "
                             "--replays file already holds it)")
        results["seeds"] = sorted(set(results["seeds"]) | set(data["seeds"]))
        results["programs"].update(data["programs"])
        results["models"] = {**results["models"], **data["models"]}
    args.budgets, args.seeds, args.min_speedup = results["budgets"], results["seeds"], results["min_speedup"]
    report(results, args)


def describe_tables(out: Path) -> dict:
    """Where, when and under what load the replayed tables were measured."""
    tables = [json.loads(p.read_text()) for p in sorted((out / "tables").glob("*.json"))]
    loads = [c[k][0] for t in tables for c in t["chunks"] for k in ("loadavg_before", "loadavg_after")]
    return {"dir": str(out), "count": len(tables), "cpu": sorted({t["cpu"] for t in tables}),
            "cpus": sorted({t["cpus"] for t in tables}), "dates_utc": [min(t["date_utc"] for t in tables),
                                                                       max(t["date_utc"] for t in tables)],
            "loadavg_1min": [min(loads), max(loads)], "configs_per_table": sorted({len(t["trials"]) for t in tables}),
            "protocol": tables[0]["protocol"], "confirmed": sum("confirm" in t for t in tables)}


def issue_summary(results: dict, summary: dict, args) -> dict:
    """The issue-25 summary.json (module docstring), with how and where it was made."""
    out = {"command": " ".join(sys.argv), "cpu": cpu_model(), "cpus": os.cpu_count(), "loadavg": load_average(),
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "budgets": args.budgets,
           "seeds": args.seeds, "spaces": {}}
    for space, rows in summary.items():
        progs = [k for k in results["programs"] if k.endswith(f"|{space}")]
        models = {s: r for s, r in rows.items() if s.startswith("model")}
        out["spaces"][space] = {
            "programs": len(progs),
            "programs_with_gain": max((r["programs_with_gain"] for r in rows.values()), default=0),
            "median_measurements_to_95": {s: r["median_reach95"] for s, r in rows.items()},
            "wins_vs_tpe": {s: float(np.median([r[b]["beats_tpe"] for b in r if isinstance(b, int)]))
                            for s, r in models.items()},
            "seeds": max((r[b]["seeds"] for r in rows.values() for b in r if isinstance(b, int)), default=0),
            "wins_vs_tpe_by_budget": {s: {b: r[b]["beats_tpe"] for b in r if isinstance(b, int)}
                                      for s, r in models.items()},
            "losses_vs_tpe_by_budget": {s: {b: r[b]["loses_to_tpe"] for b in r if isinstance(b, int)}
                                        for s, r in models.items()},
            "clear_wins_vs_tpe_by_budget": {s: {b: r[b]["beats_tpe_clearly"] for b in r if isinstance(b, int)}
                                            for s, r in rows.items() if s != "tpe"},
            "clear_losses_vs_tpe_by_budget": {s: {b: r[b]["loses_to_tpe_clearly"] for b in r if isinstance(b, int)}
                                              for s, r in rows.items() if s != "tpe"},
            "speedup_share_by_budget": {s: {b: r[b]["median_share_of_best_gain"] for b in r if isinstance(b, int)}
                                        for s, r in rows.items()},
            "mean_speedup_by_budget": {s: {b: r[b]["geomean_found"] for b in r if isinstance(b, int)}
                                       for s, r in rows.items()},
            "default_worse_than_random": default_vs_random(results, space)}
    return out


def default_vs_random(results: dict, space: str, default: str = "model+online") -> list[dict]:
    """The (program, budget) pairs where the tuner's default strategy ended worse than random search
    at the same budget (mean over seeds of the found speedup) by more than the table's noise
    (`table_noise`)."""
    out = []
    for key, v in results["programs"].items():
        if not key.endswith(f"|{space}"):
            continue
        budgets = sorted({int(r.split("|")[1]) for r in v["runs"] if r.startswith(default + "|")})
        for b in budgets:
            found = {s: np.mean([r["found"] for k, r in v["runs"].items() if k.startswith(f"{s}|{b}|")])
                     for s in (default, "random")}
            if found[default] < found["random"] * (1.0 - v["noise"]):
                out.append({"program": key.split("|")[0], "budget": b, default: float(found[default]),
                            "random": float(found["random"]), "noise": v["noise"]})
    return out


def clear_difference(a: list[float], b: list[float], z: float = 2.0) -> int:
    """+1 / -1 when the seeds' mean log speedup of `a` is above / below `b`'s by more than `z`
    standard errors of the difference (Welch: sqrt(var_a / n_a + var_b / n_b), sample variances),
    else 0: whether a win at equal budget is more than the strategies' seed-to-seed luck. With fewer
    than two seeds of either there is no spread to judge by: 0."""
    la, lb = np.log(a), np.log(b)
    if len(la) < 2 or len(lb) < 2:
        return 0
    diff = la.mean() - lb.mean()
    se = np.sqrt(la.var(ddof=1) / len(la) + lb.var(ddof=1) / len(lb))
    return int(np.sign(diff)) if abs(diff) > max(z * se, 1e-9) else 0


def summarise(results: dict, args) -> dict:
    """Per space, strategy and budget: median share of best-known found, median measurements to
    95% (largest budget), and wins / ties against TPE at equal budget (mean over seeds), also
    counted only where they exceed the seeds' spread (`clear_difference`), and the programs on which it is
    behind random search beyond that spread (issue 64 §6: never, for the default)."""
    out = {}
    for space in SPACES:
        progs = {k: v for k, v in results["programs"].items() if k.endswith(f"|{space}")}
        if not progs:
            continue
        srow = {}
        strategies = sorted({r.split("|")[0] for v in progs.values() for r in v["runs"]},
                            key=lambda s: (not s.startswith("model+online"), s != "model+online", s))
        for strat in strategies:
            row = {}
            runs = {r for v in progs.values() for r in v["runs"] if r.startswith(strat + "|")}
            budgets = sorted({int(r.split("|")[1]) for r in runs})
            seeds = sorted({int(r.split("|")[2]) for r in runs})
            for budget in budgets:
                shares, founds, wins, losses, clear_wins, clear_losses, behind_random = [], [], 0, 0, 0, 0, 0
                for v in progs.values():
                    found_by_seed = [v["runs"][f"{strat}|{budget}|{s}"]["found"] for s in seeds]
                    tpe_by_seed = [v["runs"][f"tpe|{budget}|{s}"]["found"] for s in seeds]
                    found, tpe = np.mean(found_by_seed), np.mean(tpe_by_seed)
                    shares.append((found - 1.0) / (v["best_known"] - 1.0) if v["best_known"] > 1.0 else 1.0)
                    founds.append(found)
                    wins += bool(found > tpe + 1e-9)
                    losses += bool(found < tpe - 1e-9)
                    clear = clear_difference(found_by_seed, tpe_by_seed)
                    clear_wins += clear > 0
                    clear_losses += clear < 0
                    random_by_seed = [v["runs"][f"random|{budget}|{s}"]["found"] for s in seeds]
                    behind_random += clear_difference(found_by_seed, random_by_seed) < 0
                row[budget] = {"median_share_of_best_gain": float(np.median(shares)), "beats_tpe": wins,
                               "loses_to_tpe": losses, "beats_tpe_clearly": clear_wins,
                               "loses_to_tpe_clearly": clear_losses, "behind_random_clearly": behind_random,
                               "geomean_found": float(np.exp(np.mean(np.log(founds)))),
                               "programs": len(progs), "seeds": len(seeds)}
            big = max(budgets)
            reach = []
            for v in progs.values():
                if v["best_known"] < args.min_speedup:
                    continue
                r = [v["runs"][f"{strat}|{big}|{s}"]["reach95"] for s in seeds]
                reach.append(np.median([x if x is not None else np.inf for x in r]))
            med = float(np.median(reach)) if reach else None
            row["median_reach95"] = med if med is None or np.isfinite(med) else None  # None: not reached
            row["reach95_budget"] = big
            row["programs_with_gain"] = len(reach)
            srow[strat] = row
        out[space] = srow
    return out


def print_summary(summary: dict) -> None:
    for space, rows in summary.items():
        print(f"\n{space}: per budget, the median share of the best-known gain found, the geometric-mean speedup "
              "found and (k/n) the programs on which it beats TPE at equal budget (means over seeds), then those "
              "ahead of / behind TPE and behind random search beyond 2 standard errors; the median measurements "
              "to reach 95% of the best-known speedup")
        for strat, row in rows.items():
            cells = "  ".join(f"b{b}: {row[b]['median_share_of_best_gain']:.2f} {row[b]['geomean_found']:.3f}x "
                              f"({row[b]['beats_tpe']}/{row[b]['programs']}; +{row[b]['beats_tpe_clearly']} "
                              f"-{row[b]['loses_to_tpe_clearly']} <random {row[b]['behind_random_clearly']})"
                              for b in row if isinstance(b, int))
            print(f"{strat:<15}{cells}  to 95% (budget {row['reach95_budget']}): {row['median_reach95']} "
                  f"(of {row['programs_with_gain']} programs)")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("phase", choices=("measure", "confirm", "replay", "summary"))
    p.add_argument("--out", type=Path, help="measure / confirm / replay: the directory of the tables")
    p.add_argument("--replays", type=Path, nargs="+", help="summary: replay JSONs to summarise together")
    p.add_argument("--programs", nargs="+", default=list(SUITE),
                   help="suite programs (default: all 14), or zoo variant / dev_loop_suite names: development programs")
    p.add_argument("--spaces", nargs="+", default=list(SPACES), choices=list(SPACES))
    p.add_argument("--pool", type=int, default=384, help="measure: the whole space up to this size, else a "
                   "random sample of this many configurations")
    p.add_argument("--chunk", type=int, default=64, help="measure: configurations per interleaved batch with the default")
    p.add_argument("--learners", nargs="+", default=["auto", "effects", "tree"],
                   choices=["auto", "effects", "tree", "finetune"],
                   help="replay: online learners of model+online, the first reported as model+online")
    p.add_argument("--probe-shares", type=float, nargs="+", default=[],
                   help="replay: also model+online:effects@pX for each X, the first round's share of single-option "
                   "probes (the rest: the graph model's top picks)")
    p.add_argument("--explore", nargs="+", default=[], metavar="WHEN:SHARE",
                   help="replay: also model+online@xWHEN:SHARE for each, the random interleaving of the model strategies "
                   "(WHEN: always, weak or never; SHARE: the share of a round drawn at random)")
    p.add_argument("--summary", type=Path, help="replay: write the issue-25 summary.json here")
    p.add_argument("--strategies", nargs="+", help="replay: only these strategies (and their variants)")
    p.add_argument("--priors", nargs="+", default=["real"], choices=("real", *WRONG_PRIORS),
                   help="replay: the model strategies again with a wrong prior (name~negated, name~random)")
    p.add_argument("--weights", nargs="+", default=[], metavar="START/MAX[/PARTNER[/EVIDENCE]]",
                   help="replay: hedged with these weights of the prior, model-free partner (tpe or random) and "
                        "evidence the weight is earned on (tau, top or both) (hedged@wSTART/MAX/PARTNER/EVIDENCE)")
    p.add_argument("--wrong-prior-summary", type=Path,
                   help="replay: write replay_wrong_prior (the default and TPE, geometric means) into this summary.json")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--confirm-top", type=int, default=3, help="confirm: the best k of each table")
    p.add_argument("--confirm-processes", type=int, default=3)
    p.add_argument("--prior-models", nargs="+", default=["graph"], choices=("graph", *KERNEL_PRIORS),
                   help="replay: the model strategies once per prior: the graph model (graph), the kernel model "
                        "(name^kernels, ^ranks, ^effects, ^effects+graph, ^rerank64: KernelPriorMemo)")
    p.add_argument("--flags-model", type=Path)
    p.add_argument("--layout-model", type=Path)
    p.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 32, 64])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--round-size", type=int, default=4)
    p.add_argument("--min-speedup", type=float, default=1.05)
    p.add_argument("--finetune-budgets", type=int, nargs="+", default=[16, 32])
    p.add_argument("--finetune-seeds", type=int, nargs="+", default=[0])
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    if any(not 0.0 <= x <= 1.0 for x in args.probe_shares):
        p.error(f"--probe-shares: each share must be in [0, 1], got {args.probe_shares}")
    from graphcost.tuning.strategies import check_explore

    for variant in args.explore:
        when, _, share = variant.partition(":")
        try:
            check_explore(float(share), when)
        except ValueError as e:
            p.error(f"--explore {variant!r}: expected WHEN:SHARE; {e}")
    unknown = [n for n in args.programs if n not in SUITE]
    if unknown:  # development programs: zoo variants
        from graphcost.frontend.programs.zoo import list_programs

        zoo = {spec.name for spec in list_programs()}
        unknown = [n for n in unknown if n not in zoo]
    if unknown:
        p.error(f"--programs: {unknown[0]!r} is neither a suite program ({', '.join(SUITE)}) nor a zoo variant")
    if (args.phase != "summary" and args.out is None) or (args.phase == "summary") != bool(args.replays):
        p.error("summary takes --replays (and, optionally, --out: the tables they replayed); the other phases "
                "take --out")
    {"measure": measure, "confirm": confirm, "replay": replay, "summary": merge_replays}[args.phase](args)


if __name__ == "__main__":
    main()
