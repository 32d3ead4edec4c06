"""`graphcost tune`: make a program faster within a budget of real measurements.

First (with `kernels`, the default) the default configuration is profiled in the final check's
processes, and its top kernels and their share of the call are shown (`crossproc.profile_default`). Then the
loop, for each strategy in turn, with the same budget:

1. the strategy proposes a round of `round_size` new configurations (`strategies`);
2. they are compiled, checked against the default's outputs and timed with the default
   (`trial.Evaluator`); every result, failed ones too, is stored in the study (`study`), so a
   killed run resumes without measuring anything twice;
3. repeat until the strategy has used its `budget` (failed configurations count: they cost a
   compile; a configuration whose executable was timed before does not: it is recorded as a copy of
   that measurement, and the strategy proposes another, `inert`).

Racing (`race`): every round's interleaved batch also times the strategy's `race` best configurations
so far again (no compile while their executables are held, `trial.Evaluator`), and once more after its
last round, so that the configurations the final check will see have several timings each and the
best is not simply the luckiest single timing; a configuration's in-search ratio is the geometric mean
of its timings (`study.Study.trials`). Re-timings use no budget.

Then the best configurations over all strategies (up to `finalists`, best measured ratio
first) are re-measured against the default by the cross-process protocol (`final_check`). The
best of them is accepted only if it is faster than the default in EVERY process by at least
`min_gain` (default 1%); otherwise the answer is the default itself, and the result says that
nothing beat the default beyond the noise. A kept configuration is then timed again against the default
in a confirmation batch (`explain`): the final check chose it as the best of noisy candidates, so its
figure there is biased up, and the speedup the run reports is the confirmation's, on timings that did not
choose it. The same batch re-measures it without each of its changes (`ablation`) and profiles it beside
the default, so the result says which changes carry the speedup and which kernels got faster. What the
run returns and writes is `result`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from graphcost.guards.bounds import MEASUREMENTS_MAX, ArgumentError, check_int
from graphcost.measure.interleaved import TimingProtocol
from graphcost.tuning import defaults as D
from graphcost.tuning.final_check import finish
from graphcost.tuning.inert import InertOptions
from graphcost.frontend.programs.user_program import absolute_reference, program_sha256
from graphcost.tuning.result import TuneResult, write_outputs
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import Codes, FlagSpace, Space, make_space
from graphcost.tuning.kernel_prior import LABEL as KERNEL_PRIOR, KernelEffectsPrior
from graphcost.tuning.learners.effects import single_option_configs
from graphcost.tuning.strategies import make_strategy, strategy_entry
from graphcost.tuning import kernel_search  # noqa: F401  (registers the strategy ``kernels``)
from graphcost.tuning.trial import COPY, MEASURED, OK, RETIMED, Evaluator, Trial, same_executable

log = logging.getLogger(__name__)


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path.resolve()}"


DEFAULT_STRATEGY = "hedged"  # with a cost model: the model's share of each round earned, the rest TPE's
AGREEMENT_LOW = 0.5  # in-search vs final-check Spearman below which the summary warns


class TuneInterrupted(KeyboardInterrupt):
    """Ctrl-C during `tune`; `measured`: how many configurations this run measured and stored (its
    study keeps them for ``--resume``)."""

    def __init__(self, measured: int):
        super().__init__(measured)
        self.measured = measured


def _settings(config: TuneConfig | None, overrides: dict[str, Any]) -> TuneConfig:
    """`config` (default `TuneConfig()`) with `overrides` replacing its fields; TypeError naming an unknown one."""
    known = {f.name for f in dataclasses.fields(TuneConfig)}
    for key in overrides:
        if key not in known:
            raise TypeError(f"tune() got an unexpected keyword argument {key!r}")
    return dataclasses.replace(config or TuneConfig(), **overrides)


def run_strategy(name: str, space: Space, evaluator: Evaluator, budget: int, storage: str | None, study_name: str,
                 scorer=None, seed: int = 0, round_size: int = 4, pool_kwargs: dict | None = None,
                 on_round: Callable[[list[Trial], list[Trial]], None] | None = None, learner: str = "auto",
                 fingerprint: str | None = None, probes: float | None = None, race: int = 0,
                 explore: float | None = None, explore_when: str | None = None,
                 inert: InertOptions | None = None, **strategy_options: Any) -> list[Trial]:
    """Run (or resume) one strategy until its study holds `budget` finished trials; all its trials.

    Copies of an executable timed before (status COPY) do not count; after `COPIES_MAX` x `budget` of them
    the strategy stops. inert: what is known of the options that change nothing (`InertOptions`): a
    configuration it shows to be a copy is not compiled, and it learns from every round's compiles.
    strategy_options: further keywords of the model strategies (``hedged``: weight_start, weight_max, partner).

    fingerprint: `study.program_fingerprint` of the program and space; a stored study of another
    fingerprint is refused (ValueError) instead of resumed. probes: the effects learner's first-round
    share of single-option probes (None: `strategies.FIRST_ROUND_PROBES`). race: how many of the best
    configurations so far each round times again (module docstring; 0: none). explore, explore_when: the
    model strategies' random interleaving (None: `strategies.EXPLORE_SHARE`, `strategies.EXPLORE_WHEN`)."""
    from graphcost.tuning.study import Study

    for key, value in (("budget", budget), ("round_size", round_size)):
        check_int(key, value, 1, MEASUREMENTS_MAX)
    check_int("race", race, 0, MEASUREMENTS_MAX)
    model_options: dict[str, Any] = {"pool_kwargs": pool_kwargs, "learner": learner, "probes": probes,
                                     "compiled": getattr(evaluator, "compiled_stats", None),
                                     "explore": explore, "explore_when": explore_when,
                                     **strategy_options} if strategy_entry(name).graph_model else {}
    strategy = make_strategy(name, space, seed, scorer, evaluator=evaluator, **model_options)
    fingerprints = getattr(evaluator, "fingerprints", None)  # (a replay's evaluator has none)
    study = Study(storage, f"{study_name}:{name}", space, sampler=strategy.sampler(budget), fingerprint=fingerprint)
    rnd = max((t.round for t in study.trials()), default=-1) + 1
    _say_what_was_found(study, f"{study_name}:{name}", budget)
    while True:  # the budget is the study's: counted in the storage before every round (study module docstring)
        study.fail_stale()
        left = budget - len(study.used())
        if left <= 0:
            break
        history, busy = study.trials(), study.busy()  # busy: in flight at another worker, not proposed again
        if sum(t.status == COPY for t in history) >= COPIES_MAX * budget:
            log.warning(f"{name}: {COPIES_MAX * budget} proposals compiled to executables timed before; the "
                        "configurations left run the same few executables, so the search stops here")
            break
        n = min(round_size, left)
        try:
            handles, batch = strategy.ask(study, history, n, busy, rnd)
            if not batch:  # the space is exhausted
                break
            keep = study.within_budget(handles, budget)  # another worker may have reserved at the same moment
            if not keep:
                continue
            handles, batch = [handles[i] for i in keep], [batch[i] for i in keep]
            again = contenders(history, race, exclude=batch)
            with study.leased(handles):
                results = _evaluate(evaluator, batch, again, history, inert)
            origins, weight = getattr(strategy, "origins", {}), getattr(strategy, "weight", None)
            for handle, t in zip(handles, results):
                t.strategy, t.round = name, rnd
                if t.codes in origins and weight is not None:  # (hedged: who proposed it, the model's share of the round)
                    t.extra.update(proposed_by=origins[t.codes], prior_weight=round(float(weight), 4))
                study.tell(handle, t)
            record_retimes(study, results[len(batch):], name, rnd)
            if inert is not None and fingerprints:
                inert.learn(fingerprints)
        except BaseException:  # Ctrl-C, SIGTERM, an error: no reservation of this round keeps counting
            study.release_open()
            raise
        rnd += 1
        if on_round is not None:  # this round's trials, then every trial so far (racing's timings pooled)
            on_round(results[:len(batch)], study.trials())
    trials = study.trials()
    last = contenders(trials, race, exclude=[], once=True)
    if last:  # the last round's configurations have one timing: the contenders are timed once more together
        record_retimes(study, evaluator.evaluate([], last), name, rnd)
        trials = study.trials()
    return trials


COPIES_MAX = 4  # copies of timed executables a strategy may meet, per configuration of its budget, before it stops


def _evaluate(evaluator: Evaluator, batch: list[Codes], again: list[Codes], history: list[Trial],
              inert: InertOptions | None) -> list[Trial]:
    """`evaluator.evaluate(batch, again)`, but a configuration that `inert` knows to run an executable timed
    before (`InertOptions.twins`) is not compiled: its trial copies that one's (status COPY)."""
    twins = inert.twins(batch, [t for t in history if t.status in MEASURED]) if inert is not None else []
    if not any(twins):
        return evaluator.evaluate(batch, again)
    todo = [c for c, twin in zip(batch, twins) if twin is None]
    measured = iter(evaluator.evaluate(todo, again) if todo or again else [])
    default_ns = getattr(evaluator, "default_probe_ns", None) or 0.0
    out = []
    for codes, twin in zip(batch, twins):
        if twin is None:
            out.append(next(measured))
            continue
        known = twin if isinstance(twin, Trial) else None  # None: the default's executable
        base = known.codes if known is not None else evaluator.space.default()
        copied = same_executable(codes, known, default_ns)
        copied.extra["inert_options"] = [d.name for d, a, b in zip(evaluator.space.dims, codes, base) if a != b]
        out.append(copied)
    return out + list(measured)  # then the re-timings


def in_search_best(trials: list[Trial]) -> float:
    """The best in-search estimate of a speedup over the default (1 / the pooled ratio, `study.Study.trials`),
    1.0 before any win: the figure the bar, progress.png and result.json call the in-search estimate."""
    return max([1.0] + [1.0 / t.ratio for t in trials if t.status == OK and t.ratio])


def contenders(trials: list[Trial], race: int, exclude, once: bool = False) -> list[Codes]:
    """The `race` best measured configurations that beat the default (by their in-search ratio), not in
    `exclude` (nor copies of another trial's executable: that one races); with `once`, none when each of
    them was already timed more than once."""
    skip = set(exclude)
    beat = sorted((t.ratio, i) for i, t in enumerate(trials)
                  if t.status == OK and t.ratio is not None and t.ratio < 1.0 and t.codes not in skip
                  and "same_executable_as" not in t.extra)
    best = [trials[i] for _, i in beat[:race]]
    if once and all(len(t.extra.get("ratios", ())) > 1 for t in best):
        return []
    return [t.codes for t in best]


def record_retimes(study, retimed: list[Trial], strategy: str, rnd: int) -> None:
    """Store the re-timings of a round (status RETIMED; a configuration that failed this time is only logged)."""
    for t in retimed:
        if t.status == RETIMED:
            t.strategy, t.round = strategy, rnd
            study.add(t)
        else:
            log.warning(f"a configuration measured before failed when timed again ({t.status}: {t.error}); "
                        "its earlier timings stand")


def _say_what_was_found(study, label: str, budget: int) -> None:
    """One line when the study already holds trials (a resumed run, or a worker joining others): what
    it found and how many configurations this run will measure."""
    found = study.found()
    if not (found["measured"] or found["released"] or found["in_flight"]):
        return
    left = max(0, budget - len(study.used()))
    parts = [f"{found['measured']} configuration(s) measured" + (f" ({found['failed']} failed)" if found["failed"] else "")]
    if found["released"]:
        parts.append(f"{found['released']} reservation(s) of interrupted runs released, not counted")
    if found["in_flight"]:
        parts.append(f"{found['in_flight']} being measured by other workers")
    log.info(f"study {label}: found {', '.join(parts)}; measuring {left} more for the budget of {budget}")


@dataclass(frozen=True)
class TuneConfig:
    """The settings of a `tune` run; `tune(fn, *args, config=..., **overrides)` replaces fields by keyword.

    Attributes:
        space: flags (XLA CPU compiler options), layout (per-node layouts) or both.
        budget: configurations each strategy measures (failed ones count: they cost a compile).
        model: trained graphcost run(s): a tile model for flags, a layout model for layouts.
        strategies: default `["hedged"]` with a model (its share of each round earned by how its
            proposals fare in the measurements, the rest TPE's), `["tpe"]` without; each gets `budget`.
        out: directory for the study, trials, best configuration and plot (None: nothing written,
            an in-memory study unless `storage`).
        storage: an Optuna storage URL shared by several workers (default: `out`/study.db).
        program_ref: `file.py:make`, so the final check runs in fresh processes (otherwise in this one).
        name: the study's name (default: the function's).
        seed: seed of the strategies and the measurement protocol.
        round_size: configurations measured together in one interleaved batch.
        protocol: the timing protocol (default: 5 rounds of 10 calls after 2 warm-up calls).
        processes: processes (or passes) of the final check.
        confirm_processes: the confirmation's processes (passes) at most: it starts with `processes` and adds 2 at a
            time while they disagree (`graphcost.tuning.ablation`).
        finalists: best configurations re-measured in the final check.
        race: the best configurations so far timed again with every round and after the last
            (racing, module docstring; 0: off).
        min_gain: the speedup over the default needed in every process to keep a configuration.
        rtol: relative tolerance of the output check against the default's outputs.
        atol: absolute tolerance (times the largest output value) of that check.
        allow_fast_math: also search the fast-math family (`xla_cpu_enable_fast_math`, its
            ``honor_*`` options and ``enable_fast_min_max``; they may change results).
        device: where the cost model runs.
        pool_kwargs: options of the model strategies' candidate pool.
        learner: the online model of `model+online`: auto (effects for flags, tree for layout
            and both: the replay benchmark's winners), effects (Bayesian option effects and
            interactions with the graph model's score as a prior, single-option probes first,
            Thompson sampling; `graphcost.tuning.learners.effects`), tree (LightGBM with the graph model's
            score as a feature) or finetune (the graph model fine-tuned on the measurements).
        kernels: profile the default's kernels before the search (shown, and in result.json), every
            measured trial's kernels (kernels.csv) and the kept configuration's (`graphcost.kernels.report`).
        ablation: re-measure the kept configuration without each of its changes in the final
            check's processes: which changes carry the speedup (`ablation`).
        progress: show progress bars.
    """

    space: str = D.SPACE
    budget: int = D.BUDGET
    model: str | Path | list | None = None
    strategies: list[str] | None = None
    out: str | Path | None = None
    storage: str | None = None
    program_ref: str | None = None
    name: str | None = None
    seed: int = D.SEED
    round_size: int = D.ROUND_SIZE
    protocol: TimingProtocol | None = None
    processes: int = D.PROCESSES
    confirm_processes: int = D.CONFIRM_PROCESSES
    finalists: int = D.FINALISTS
    race: int = D.RACE
    min_gain: float = D.MIN_GAIN
    rtol: float = D.RTOL
    atol: float = D.ATOL
    allow_fast_math: bool = False
    device: str = "cpu"
    pool_kwargs: dict | None = None
    learner: str = D.LEARNER
    kernels: bool = True
    ablation: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        """Every field checked (`graphcost.tuning.arguments`): ArgumentError (a ValueError and a
        TypeError) naming the first field that cannot be used, e.g. ``rtol='x'`` or ``learner='bogus'``."""
        from graphcost.tuning.arguments import check_tune_config

        check_tune_config(self)


def tune(fn: Callable, *args: Any, config: TuneConfig | None = None, **overrides: Any) -> TuneResult:
    """Make `fn(*args)` faster within a budget of real measurements (the loop: module docstring).

    Args:
        fn: the JAX function, or a `TuneProgram` already built and lowered
            (`program.prepare_program`), then without `args`.
        *args: example arguments of `fn`, the ones it is compiled, checked and timed with.
        config: the settings (`TuneConfig`; default: its defaults).
        **overrides: `TuneConfig` fields by keyword (``space="flags", budget=32, ...``); they
            replace those of `config`. An unknown keyword is a TypeError naming it.

    Returns:
        The accepted configuration, its re-measured speedup and range, and every trial.

    Raises:
        ValueError: an unusable argument (a count below 1, an unknown space or strategy, a model
            of the wrong kind, a study of another program); a bad argument's type or value is
            `graphcost.guards.bounds.ArgumentError` (also a TypeError), naming it.
        TypeError: a keyword that is not a `TuneConfig` field.
        TuneInterrupted: Ctrl-C; it says how many configurations this run measured (they are saved
            in the study when `out` or `storage` is given).

    Example:
        ```python
        import graphcost

        result = graphcost.tune(fn, x, w, space="flags", budget=32, out="runs/tuned")
        print(result.message)
        fast = graphcost.compile_with(fn, result.best)
        ```
    """
    from graphcost.tuning.arguments import check_fn

    if config is not None and not isinstance(config, TuneConfig):
        raise ArgumentError(f"config must be a TuneConfig or None, got {type(config).__name__}")
    if not isinstance(fn, TuneProgram):
        check_fn(fn)
    cfg = _settings(config, overrides)
    if isinstance(fn, TuneProgram):  # already built (and lowered) by the caller, e.g. `prepare_program`
        program = fn
    else:
        program = TuneProgram(fn, args, cfg.name or str(getattr(fn, "__name__", "program")))
    return search(program, cfg, plan_search(program, cfg))


@dataclass
class SearchPlan:
    """What a run searches with, built once before anything is measured: the space, the model runs and what
    result.json records as the model (`resolve_models`), the strategies, and (`plan_search` with
    ``scorer=True``) the graph model's scorer, None when it is built in the search (`tune`) or not needed."""

    space: Space
    runs: list[str]
    model_label: str | list[str] | None
    strategies: list[str]
    scorer: Any = None
    kernel_model: Any = None  # the kernel model of the default flag prior (`kernel_prior`), when it guides


def plan_search(program: TuneProgram, cfg: TuneConfig, scorer: bool = False) -> SearchPlan:
    """The `SearchPlan` of a run of `program`; said in one line (`models_line`). With `scorer`, the model runs
    are loaded and fitted to the space now (an unusable run is refused before anything is measured)."""
    sp = make_space(cfg.space, program, cfg.allow_fast_math)
    runs, model_label, strategies = resolve_models(cfg, sp)
    plan = SearchPlan(sp, runs, model_label, strategies)
    if model_label == KERNEL_PRIOR:
        from graphcost.kernels.model import KernelCostModel, KernelModelError

        try:
            plan.kernel_model = KernelCostModel.load()
        except KernelModelError as exc:  # damaged: the graph models guide instead (`resolve_models` without it)
            log.warning(f"{exc}; the shipped flag model guides the search instead")
            runs, model_label, strategies = resolve_models(cfg, sp, kernel_prior=False)
            plan = SearchPlan(sp, runs, model_label, strategies)
    if scorer and runs:
        from graphcost.tuning.scoring import GraphModelScorer

        plan.scorer = GraphModelScorer(runs, program, sp, device=cfg.device)
    log.info(models_line(runs, model_label, strategies, sp))  # said once, before anything is measured
    return plan


def search(program: TuneProgram, cfg: TuneConfig, plan: SearchPlan,
           run_dir: contextlib.AbstractContextManager | None = None) -> TuneResult:
    """`tune`'s search of `program` by `plan`, in `cfg.out` (if any): in `run_dir` when the caller checked and
    holds it (`graphcost.tuning.tuning_run_dir`), else a tuning run there is continued and another process's
    run refused (its lock)."""
    protocol = cfg.protocol or TimingProtocol(rounds=D.ROUNDS, calls=D.CALLS, warmup=D.WARMUP, seed=cfg.seed)
    out = Path(cfg.out) if cfg.out is not None else None
    storage = cfg.storage
    if out is not None:
        storage = storage or _sqlite_url(out / "study.db")
        if run_dir is None:
            from graphcost.guards.atomic import TUNE_MARKERS
            from graphcost.runs.lifecycle import RunDirectory

            run_dir = RunDirectory(out, "out", resume=True, markers=TUNE_MARKERS, holds="a tuning run")
    with run_dir or contextlib.nullcontext():
        return _search(program, cfg.name or program.name, plan.space, cfg, protocol, plan.runs, plan.model_label,
                       plan.strategies, out, storage, plan.scorer, plan.kernel_model)


def _search(program: TuneProgram, name: str, sp: Space, cfg: TuneConfig, protocol: TimingProtocol, runs: list,
            model_label: str | list[str] | None, strategies: list[str], out: Path | None,
            storage: str | None, scorer: Any = None, kernel_model: Any = None) -> TuneResult:
    """`tune`'s loop, in its run directory (if any): profile the default, search with every strategy, re-measure
    the finalists, explain and write the outputs (`scorer`: the graph model's, built here when None; with
    `kernel_model`, the default flag prior `KernelEffectsPrior`, which compiles, built here)."""
    from tqdm.auto import tqdm

    measured = [0]  # configurations this run measured and stored (said on an interrupt)
    try:
        evaluator = Evaluator(program, sp, protocol, rtol=cfg.rtol, atol=cfg.atol, profile_kernels=cfg.kernels,
                              cache_dir=(out / "jax_cache") if out is not None else None)  # identical executables once
        before = None
        if cfg.kernels:  # where the default's time goes, shown before the search (crossproc.profile_default)
            from graphcost.tuning.crossproc import profile_default

            before = profile_default(program, evaluator, sp, cfg.processes, cfg.program_ref, cfg.allow_fast_math,
                                     (out / "jax_cache") if out is not None else None)
        if runs and scorer is None:
            from graphcost.tuning.scoring import GraphModelScorer

            scorer = GraphModelScorer(runs, program, sp, device=cfg.device)
        elif kernel_model is not None and scorer is None:
            scorer = KernelEffectsPrior(sp, evaluator, kernel_model)

        from graphcost.tuning.study import program_fingerprint

        fingerprint = program_fingerprint(program, sp)
        inert = InertOptions(sp)
        if getattr(evaluator, "fingerprints", None):  # (with a cache to fingerprint executables in: `out` given)
            inert.probe(evaluator.compile_many, evaluator.fingerprints)
            probed = sum(c in evaluator.fingerprints for c in single_option_configs(sp))
            dropped = inert.inert()
            log.info(f"compiled {probed} single-option configurations: {len(dropped)} of {len(sp.dims)} options "
                     f"change nothing in this program's executable and are left out of the search"
                     + (f" ({', '.join(dropped)})" if dropped else ""))
        trials: list[Trial] = []
        shown = Path(cfg.program_ref).name if cfg.program_ref else name  # `FILE.py:make_X`, not only the file's stem
        for strat in strategies:
            bar = tqdm(total=cfg.budget, desc=f"tune {shown} [{strat}]", unit="config", disable=not cfg.progress)

            failed = [0]

            def on_round(results, so_far, bar=bar, failed=failed):
                bar.update(sum(t.status != COPY for t in results))  # copies use no budget
                measured[0] += len(results)
                failed[0] += sum(t.status not in MEASURED for t in results)
                bar.set_postfix_str(f"in-search estimate: best {in_search_best(so_far):.3f}x"
                                    + (f", {failed[0]} failed" if failed[0] else ""))

            try:
                mine = run_strategy(strat, sp, evaluator, cfg.budget, storage, f"{name}:{cfg.space}", scorer,
                                    cfg.seed, cfg.round_size, cfg.pool_kwargs, on_round, cfg.learner, fingerprint,
                                    race=cfg.race, inert=inert)
                trials += mine  # the last contenders' re-timings came after the last round: the bar says them too
                bar.set_postfix_str(f"in-search estimate: best {in_search_best(mine):.3f}x"
                                    + (f", {failed[0]} failed" if failed[0] else ""))
            finally:
                bar.close()  # also on an error, so its message starts on a line of its own

        result = finish(program, sp, evaluator, trials, protocol, cfg.processes, cfg.finalists, cfg.min_gain,
                        cfg.program_ref, cfg.allow_fast_math, out, cfg.progress)
        result.strategies, result.model, result.program = (list(strategies), model_label,
                                                        absolute_reference(cfg.program_ref) if cfg.program_ref else None)
        result.program_sha256 = program_sha256(cfg.program_ref) if cfg.program_ref else None
        explain(result, program, sp, evaluator, protocol, cfg, before, out)
        announce(result, trials)
        if out is not None:
            write_outputs(out, sp, result)
    except KeyboardInterrupt:  # the measurements are in the study: --resume finishes the outputs
        raise TuneInterrupted(measured[0]) from None
    return result


def explain(result: TuneResult, program: TuneProgram, space: Space, evaluator: Evaluator, protocol: TimingProtocol,
            cfg: TuneConfig, before, out: Path | None) -> None:
    """Say what was found: the kept configuration's speedup on the confirmation batch (the run's figure,
    `TuneResult.confirm`), its ablation (`ablation`) and its kernels beside the default's
    (`graphcost.kernels.report`), into `result` (`summary_lines` words them)."""
    from graphcost.kernels.report import kernels_summary
    from graphcost.kernels.times import ProgramProfile

    final = None
    if result.beats_default:  # the one figure reported: timed after the choice (`ablation.confirmation`)
        from graphcost.tuning.ablation import ablate_kept

        kept = tuple(result.best.codes)
        confirmed, result.ablation, final = ablate_kept(program, space, evaluator, kept, cfg.processes, protocol,
                                                        cfg.program_ref, cfg.allow_fast_math, out, cfg.ablation,
                                                        cfg.kernels, cfg.confirm_processes)
        result.confirm(confirmed)
    result.kernels = kernels_summary(before, final)
    result.kernel_profile = final or (ProgramProfile(program.name, cfg.processes, "cross-process" if cfg.program_ref
                                                     else "in-process", [before]) if before is not None else None)


def summary_lines(result: TuneResult) -> list[str]:
    """What the run found beyond its speedup, in words: which changes carry it, which kernels got faster."""
    from graphcost.tuning.ablation import summary_line
    from graphcost.kernels.report import faster_kernels_line

    lines = [summary_line(result.ablation)] if result.ablation is not None else []
    if result.beats_default and result.selected_speedup is not None and result.speedup_range[0] < 1.0:
        lines.append(f"warning: timed again after it was chosen, the kept configuration was slower than the default "
                     f"in at least one process (range {result.speedup_range[0]:.3f}-{result.speedup_range[1]:.3f}x): "
                     "the win may be smaller than it looks here (`graphcost verify` times it as you would)")
    lines += [x for x in [faster_kernels_line(result.kernels)] if x]
    copies = [t for t in result.trials if t.status == COPY]
    if copies:
        skipped = sum("inert_options" in t.extra for t in copies)
        lines.append(f"{len(copies)} proposed configurations ran an executable timed before (the default's or another "
                     f"trial's): copied, not timed again, and not counted in the budget"
                     + (f"; {skipped} of them known without compiling (they differ only in options that change "
                        "nothing here)" if skipped else ""))
    agreement = result.search_vs_final or {}
    rho = agreement.get("spearman")
    if rho is not None and rho < AGREEMENT_LOW:
        n = len(agreement["candidates"])
        lines.append(f"warning: the in-search estimates and the final check agree poorly (Spearman {rho:.2f} over "
                     f"{n} candidates): the search's timings were noisy here; more --rounds / --calls, or a quieter "
                     "machine, make them agree")
    return lines


def announce(result: TuneResult, budget_trials: list[Trial]) -> None:
    """Log the decision and `summary_lines` (the CLI shows them; from Python, configure logging to see the
    INFO lines). Keeping the default although the search's estimate was a win is a WARNING, shown by
    Python's default handler, so it is never silent."""
    best = in_search_best(budget_trials)
    if not result.beats_default and best > 1.0:
        log.warning(f"kept the default: {result.message} (the in-search estimate was {best:.3f}x; the final check "
                    "decides)")
    else:
        log.info(f"decision: {result.message}")
    for line in summary_lines(result):
        (log.warning if line.startswith("warning:") else log.info)(line)


def models_line(runs: list[str], label: str | list[str] | None, strategies: list[str], space: Space) -> str:
    """The one line that says which strategy searches and which cost model guides it."""
    import graphcost.pretrained as pretrained

    if label == KERNEL_PRIOR:
        shown = (f"the shipped kernel model's single-option effects ({pretrained.shipped_kernel_model_dir()}; "
                 "graphcost.tuning.kernel_prior)")
    else:
        shown = ("; ".join(pretrained.describe(kind) for kind in space.kinds) if label == pretrained.SHIPPED
                 else ", ".join(runs) or "none")
    return f"strategy: {', '.join(strategies)}; model: {shown}"


def resolve_models(cfg: TuneConfig, space: Space, kernel_prior: bool = True
                   ) -> tuple[list[str], str | list[str] | None, list[str]]:
    """(model runs, what result.json records as the model, strategies) of a run.

    Without `cfg.model`, a search that wants a model (the default strategies, or any ``model*``
    one) uses the cost models that ship with graphcost: in the flag space (with `kernel_prior`) the kernel
    model's single-option effects (`kernel_prior`, recorded as ``"kernels:effects"``), elsewhere the graph
    models of the space's kinds (`graphcost.pretrained`); the default strategy is then ``hedged`` (`models_line`
    says which, once). Only when no shipped model is installed does the default fall back to TPE (said in the
    log). A strategy with a model of its own records
    its `StrategyEntry.model_label` (``kernels``: ``"kernels:shipped"``, the shipped kernel model)."""
    runs = [str(cfg.model)] if isinstance(cfg.model, (str, Path)) else [str(m) for m in cfg.model or []]
    wants_model = cfg.strategies is None or any(strategy_entry(s).graph_model for s in cfg.strategies)
    if runs:
        return runs, runs, list(cfg.strategies or [DEFAULT_STRATEGY])
    import graphcost.pretrained as pretrained

    if not wants_model:  # model-free, or a strategy with a model of its own (``kernels``: `StrategyEntry.model_label`)
        labels = [strategy_entry(s).model_label for s in cfg.strategies or []]
        return [], next((label for label in labels if label), None), list(cfg.strategies or [])

    if kernel_prior and isinstance(space, FlagSpace) and cfg.learner != "finetune":  # (fine-tuning: a graph model)
        try:
            pretrained.shipped_kernel_model_dir()
            return [], KERNEL_PRIOR, list(cfg.strategies or [DEFAULT_STRATEGY])
        except FileNotFoundError as exc:
            log.warning(f"{exc}; the shipped flag model guides the search instead")
    try:
        runs = [str(pretrained.shipped_model_dir(kind)) for kind in space.kinds]
    except FileNotFoundError as exc:
        if cfg.strategies is not None:
            raise ValueError(f"strategy {cfg.strategies} needs a cost model and none was given: {exc}") from None
        log.warning(f"{exc}; searching with TPE, model-free")
        return [], None, ["tpe"]
    return runs, pretrained.SHIPPED, list(cfg.strategies or [DEFAULT_STRATEGY])


