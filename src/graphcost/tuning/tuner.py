"""`graphcost tune`: make a program faster within a budget of real measurements.

The loop, for each strategy in turn, with the same budget:

1. the strategy proposes a round of `round_size` new configurations (`strategies`);
2. they are compiled, checked against the default's outputs and timed with the default
   (`trial.Evaluator`); every result, failed ones too, is stored in the study (`study`), so a
   killed run resumes without measuring anything twice;
3. repeat until the strategy has used its `budget` (failed configurations count: they cost a
   compile).

Then the best configurations over all strategies (up to `finalists`, best measured ratio
first) are re-measured against the default by the cross-process protocol (`crossproc`). The
best of them is accepted only if it is faster than the default in EVERY process by at least
`min_gain` (default 1%); otherwise the answer is the default itself, and the result says that
nothing beat the default beyond the noise.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from graphcost.bounds import MEASUREMENTS_MAX, ArgumentError, check_int
from graphcost.frontend.measure.interleaved import Protocol
from graphcost.tuning.trial import OK, Evaluator, Trial
from graphcost.tuning.space import Codes, Space, TuneProgram, make_space
from graphcost.tuning.strategies import make_strategy

log = logging.getLogger(__name__)


@dataclass
class TunedConfig:
    """A configuration as plain data: what `graphcost.compile_with` applies (best.json holds its fields).

    Attributes:
        space: the space it belongs to: flags, layout or both.
        codes: one choice index per dimension of the space (0 = the compiler's default).
        compiler_options: the XLA options passed to `Lowered.compile` (flags).
        flags: the flag columns' values (`graphcost.frontend.programs.flags.FLAG_COLUMNS`).
        layouts: the tensors moved off their default layout, each
            `{"site", "primitive", "tensor", "minor_to_major"}`.
    """

    space: str
    codes: list[int]
    compiler_options: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, int] = field(default_factory=dict)
    layouts: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, space: Space, codes: Codes) -> "TunedConfig":
        d = space.describe(codes)
        return cls(space.name, list(codes), d.get("compiler_options", {}), d.get("flags", {}), d.get("layouts", []))

    @property
    def is_default(self) -> bool:
        return not any(self.codes)

    def to_json(self) -> dict[str, Any]:
        return {"space": self.space, "codes": self.codes, "compiler_options": self.compiler_options,
                "flags": self.flags, "layouts": self.layouts}


@dataclass
class TuneResult:
    """What `tune` found: the accepted configuration, its re-measured speedup, and every trial.

    Attributes:
        best: the configuration to use (the default itself when nothing beat it beyond the noise).
        speedup: median over the final check's processes of default runtime / best runtime (1.0 for
            the default).
        speedup_range: (min, max) of that speedup over the processes.
        beats_default: whether `best` was faster than the default in every process by `min_gain`.
        default_runtime_ns: the default configuration's runtime in nanoseconds.
        trials: every measured or failed configuration, all strategies, in order.
        remeasure: the final check's raw figures (runtimes per process, protocol).
        message: one line for people: the speedup and its range, or why the default was kept.
        strategies: the strategies that searched, in order.
        model: the cost model runs that guided them (paths), ``"shipped"`` for the models that ship
            with graphcost, or None for a model-free search.
        search_vs_final: each re-measured candidate's best in-search speedup beside its final-check
            median, and their Spearman correlation (None below two candidates).
    """

    best: TunedConfig
    speedup: float
    speedup_range: tuple[float, float]
    beats_default: bool
    default_runtime_ns: float
    trials: list[Trial]
    remeasure: dict[str, Any]
    message: str
    strategies: list[str] = field(default_factory=list)
    model: str | list[str] | None = None
    search_vs_final: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"best": self.best.to_json(), "speedup": self.speedup, "speedup_range": list(self.speedup_range),
                "beats_default": self.beats_default, "default_runtime_ns": self.default_runtime_ns,
                "message": self.message, "remeasure": self.remeasure,
                "num_trials": len(self.trials), "num_failed": sum(t.status != OK for t in self.trials),
                "strategy": self.strategies[0] if len(self.strategies) == 1 else self.strategies,
                "model": self.model, "search_vs_final": self.search_vs_final}


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path.resolve()}"


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
                 on_round: Callable[[list[Trial]], None] | None = None, learner: str = "auto",
                 fingerprint: str | None = None, probes: float | None = None) -> list[Trial]:
    """Run (or resume) one strategy until its study holds `budget` finished trials; all its trials.

    fingerprint: `study.program_fingerprint` of the program and space; a stored study of another
    fingerprint is refused (ValueError) instead of resumed. probes: the effects learner's first-round
    share of single-option probes (None: `strategies.FIRST_ROUND_PROBES`)."""
    from graphcost.tuning.study import Study

    for key, value in (("budget", budget), ("round_size", round_size)):
        check_int(key, value, 1, MEASUREMENTS_MAX)
    model_options = {"pool_kwargs": pool_kwargs, "learner": learner, "probes": probes,
                     "compiled": getattr(evaluator, "compiled_stats", None)} if name.startswith("model") else {}
    strategy = make_strategy(name, space, seed, scorer, **model_options)
    study = Study(storage, f"{study_name}:{name}", space, sampler=strategy.sampler(budget), fingerprint=fingerprint)
    rnd = max((t.round for t in study.trials()), default=-1) + 1
    _say_what_was_found(study, f"{study_name}:{name}", budget)
    while True:  # the budget is the study's: counted in the storage before every round (study module docstring)
        study.fail_stale()
        left = budget - len(study.used())
        if left <= 0:
            break
        n = min(round_size, left)
        history, busy = study.trials(), study.busy()  # busy: in flight at another worker, not proposed again
        try:
            handles, batch = strategy.ask(study, history, n, busy, rnd)
            if not batch:  # the space is exhausted
                break
            keep = study.within_budget(handles, budget)  # another worker may have reserved at the same moment
            if not keep:
                continue
            handles, batch = [handles[i] for i in keep], [batch[i] for i in keep]
            with study.leased(handles):
                results = evaluator.evaluate(batch)
            for handle, t in zip(handles, results):
                t.strategy, t.round = name, rnd
                study.tell(handle, t)
        except BaseException:  # Ctrl-C, SIGTERM, an error: no reservation of this round keeps counting (issue 36)
            study.release_open()
            raise
        rnd += 1
        if on_round is not None:
            on_round(results)
    return study.trials()


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
        strategies: default `["model+online"]` with a model, `["tpe"]` without; each gets `budget`.
        out: directory for the study, trials, best configuration and plot (None: nothing written,
            an in-memory study unless `storage`).
        storage: an Optuna storage URL shared by several workers (default: `out`/study.db).
        program_ref: `file.py:make`, so the final check runs in fresh processes (otherwise in this one).
        name: the study's name (default: the function's).
        seed: seed of the strategies and the measurement protocol.
        round_size: configurations measured together in one interleaved batch.
        protocol: the timing protocol (default: 5 rounds of 10 calls after 2 warm-up calls).
        processes: processes (or passes) of the final check.
        finalists: best configurations re-measured in the final check.
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
        progress: show progress bars.
    """

    space: str = "flags"
    budget: int = 32
    model: str | Path | list | None = None
    strategies: list[str] | None = None
    out: str | Path | None = None
    storage: str | None = None
    program_ref: str | None = None
    name: str | None = None
    seed: int = 0
    round_size: int = 4
    protocol: Protocol | None = None
    processes: int = 3
    finalists: int = 3
    min_gain: float = 0.01
    rtol: float = 1e-3
    atol: float = 1e-5
    allow_fast_math: bool = False
    device: str = "cpu"
    pool_kwargs: dict | None = None
    learner: str = "auto"
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
            `graphcost.bounds.ArgumentError` (also a TypeError), naming it.
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
    from tqdm.auto import tqdm

    from graphcost.tuning.arguments import check_fn

    if config is not None and not isinstance(config, TuneConfig):
        raise ArgumentError(f"config must be a TuneConfig or None, got {type(config).__name__}")
    if not isinstance(fn, TuneProgram):
        check_fn(fn)
    cfg = _settings(config, overrides)
    protocol = cfg.protocol or Protocol(rounds=5, calls=10, warmup=2, seed=cfg.seed)
    if isinstance(fn, TuneProgram):  # already built (and lowered) by the caller, e.g. `prepare_program`
        program, name = fn, cfg.name or fn.name
    else:
        name = cfg.name or getattr(fn, "__name__", "program")
        program = TuneProgram(fn, args, name)
    sp = make_space(cfg.space, program, cfg.allow_fast_math)
    runs, model_label, strategies = resolve_models(cfg, sp)
    out = Path(cfg.out) if cfg.out is not None else None
    storage = cfg.storage
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        storage = storage or _sqlite_url(out / "study.db")
    measured = [0]  # configurations this run measured and stored (said on an interrupt)
    try:
        evaluator = Evaluator(program, sp, protocol, rtol=cfg.rtol, atol=cfg.atol)
        scorer = None
        if runs:
            from graphcost.tuning.scoring import GraphModelScorer

            scorer = GraphModelScorer(runs, program, sp, device=cfg.device)

        from graphcost.tuning.study import program_fingerprint

        fingerprint = program_fingerprint(program, sp)
        trials: list[Trial] = []
        for strat in strategies:
            bar = tqdm(total=cfg.budget, desc=f"tune {name} [{strat}]", unit="config", disable=not cfg.progress)

            best = [1.0]

            def on_round(results, bar=bar, best=best):
                bar.update(len(results))
                measured[0] += len(results)
                best[0] = max([best[0]] + [1 / t.ratio for t in results if t.status == OK])
                failed = sum(t.status != OK for t in results)
                bar.set_postfix_str(f"best so far {best[0]:.3f}x the default"
                                    + (f", {failed} failed" if failed else ""))

            try:
                trials += run_strategy(strat, sp, evaluator, cfg.budget, storage, f"{name}:{cfg.space}", scorer,
                                       cfg.seed, cfg.round_size, cfg.pool_kwargs, on_round, cfg.learner, fingerprint)
            finally:
                bar.close()  # also on an error, so its message starts on a line of its own

        result = finish(program, sp, evaluator, trials, protocol, cfg.processes, cfg.finalists, cfg.min_gain,
                        cfg.program_ref, cfg.allow_fast_math, out, cfg.progress)
        result.strategies, result.model = list(strategies), model_label
        if out is not None:
            write_outputs(out, sp, result)
    except KeyboardInterrupt:  # the measurements are in the study: --resume finishes the outputs
        raise TuneInterrupted(measured[0]) from None
    return result


def resolve_models(cfg: TuneConfig, space: Space) -> tuple[list[str], str | list[str] | None, list[str]]:
    """(model runs, what result.json records as the model, strategies) of a run.

    Without `cfg.model`, a search that wants a model (the default strategies, or any ``model*``
    one) uses the cost models that ship with graphcost for the space's kinds (`graphcost.pretrained`)
    and logs which; the default strategy is then ``model+online``. Only when no shipped model is
    installed does the default fall back to TPE (said in the log)."""
    runs = [str(cfg.model)] if isinstance(cfg.model, (str, Path)) else [str(m) for m in cfg.model or []]
    wants_model = cfg.strategies is None or any(s.startswith("model") for s in cfg.strategies)
    if runs:
        return runs, runs, list(cfg.strategies or ["model+online"])
    if not wants_model:
        return [], None, list(cfg.strategies or [])
    import graphcost.pretrained as pretrained

    try:
        runs = [str(pretrained.shipped_model_dir(kind)) for kind in space.kinds]
    except FileNotFoundError as exc:
        if cfg.strategies is not None:
            raise ValueError(f"strategy {cfg.strategies} needs a cost model and none was given: {exc}") from None
        log.warning(f"{exc}; searching with TPE, model-free")
        return [], None, ["tpe"]
    log.info("no model given: guiding the search with " + "; ".join(pretrained.describe(k) for k in space.kinds))
    return runs, pretrained.SHIPPED, list(cfg.strategies or ["model+online"])


def finish(program: TuneProgram, space: Space, evaluator: Evaluator, trials: list[Trial], protocol: Protocol,
           processes: int, finalists: int, min_gain: float, program_ref: str | None, allow_fast_math: bool,
           out: Path | None, progress: bool) -> TuneResult:
    """Re-measure the best measured configurations against the default and pick the answer.

    The `finalists` best (by in-search ratio) are re-measured first; when none of them beats the
    default in every process, the next `finalists` get their own re-measurement before the default
    is kept, so one noisy in-search figure does not throw a real win away."""
    ok = sorted((t for t in trials if t.status == OK), key=lambda t: t.ratio)
    ranked = list(dict.fromkeys(t.codes for t in ok if t.ratio < 1.0))
    default = space.default()
    if not ranked:
        return TuneResult(TunedConfig.of(space, default), 1.0, (1.0, 1.0), False,
                          float(np.median([t.default_ns for t in ok])) if ok else float("nan"), trials, {},
                          "no measured configuration was faster than the default: keep the default")
    in_search = {t.codes: 1.0 / t.ratio for t in reversed(ok) if t.ratio}  # the best (lowest) ratio of each configuration
    checked: list[tuple[Codes, float, float, float]] = []  # (codes, median, min, max) of every re-measured one
    remeasures, default_ns = [], []
    for batch in (ranked[:finalists], ranked[finalists:2 * finalists]):
        if not batch or (checked and any(lo >= 1.0 + min_gain for _, _, lo, _ in checked)):
            break
        rem = _remeasure(program, space, evaluator, [default] + batch, processes, protocol, program_ref,
                         allow_fast_math, out)
        sp = rem.speedups  # (P, len(batch))
        checked += [(c, float(np.median(sp[:, k])), float(sp[:, k].min()), float(sp[:, k].max()))
                    for k, c in enumerate(batch)]
        remeasures.append(rem.to_json())
        default_ns.append(float(np.median(rem.runtime_ns[:, 0])))
    remeasure = remeasures[0] if len(remeasures) == 1 else {  # one list entry per re-measured candidate, as for one batch
        **remeasures[0], **{k: remeasures[0][k] + remeasures[1][k] for k in ("speedup_median", "speedup_min", "speedup_max")},
        "batches": remeasures}
    agreement = search_vs_final([(in_search[c], med) for c, med, _, _ in checked])
    winners = [item for item in checked if item[2] >= 1.0 + min_gain]
    what = f"{processes} {'processes' if program_ref else 'in-process passes'}"
    if not winners:
        codes, med, lo, hi = max(checked, key=lambda item: item[1])
        return TuneResult(TunedConfig.of(space, default), 1.0, (1.0, 1.0), False, float(np.median(default_ns)), trials,
                          remeasure, f"nothing beat the default beyond the noise: the best of {len(checked)} "
                          f"re-measured candidates ran {med:.3f}x (range {lo:.3f}-{hi:.3f}x over {what}, needed "
                          f">= {1 + min_gain:.2f}x in every one): keep the default", search_vs_final=agreement)
    codes, med, lo, hi = max(winners, key=lambda item: item[1])
    return TuneResult(TunedConfig.of(space, codes), med, (lo, hi), True, float(np.median(default_ns)), trials,
                      remeasure, f"{med:.3f}x faster than the default (range {lo:.3f}-{hi:.3f}x over {what})",
                      search_vs_final=agreement)


def _remeasure(program: TuneProgram, space: Space, evaluator: Evaluator, configs: list[Codes], processes: int,
               protocol: Protocol, program_ref: str | None, allow_fast_math: bool, out: Path | None):
    """The final check of `configs` (the default first): fresh processes when the program has a file."""
    from graphcost.tuning.crossproc import remeasure_cross_process, remeasure_in_process

    log.info(f"re-measuring {len(configs) - 1} candidate(s) against the default in {processes} "
             f"{'processes' if program_ref else 'passes (in-process: the program has no file reference)'}")
    if program_ref:
        cache = (out / "jax_cache") if out is not None else None
        return remeasure_cross_process(program_ref, space.name, configs, processes, protocol, allow_fast_math, cache)
    return remeasure_in_process(evaluator, configs, processes, protocol)


def search_vs_final(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    """Agreement of in-search and final-check speedups: the pairs and their Spearman correlation
    (None with fewer than two pairs or no spread on either side)."""
    from graphcost.frontend.measure.interleaved import spearman

    rho = None
    if len(pairs) >= 2 and len({a for a, _ in pairs}) > 1 and len({b for _, b in pairs}) > 1:
        rho = round(float(spearman(np.array([a for a, _ in pairs]), np.array([b for _, b in pairs]))), 4)
    return {"spearman": rho, "candidates": [{"in_search": round(a, 4), "final": round(b, 4)} for a, b in pairs]}


TRIAL_FIELDS = ("strategy", "number", "round", "status", "ratio", "speedup", "runtime_ns", "default_ns")


def trials_csv(trials: list[Trial], space: Space) -> str:
    """One row per trial: `TRIAL_FIELDS`, then one column per space dimension named by its study
    parameter (the XLA option; a layout site's tensor) holding the value compiled, then the error."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*TRIAL_FIELDS, *(d.param_name for d in space.dims), "error"])
    for t in trials:
        values = [d.param_values[int(c)] for d, c in zip(space.dims, t.codes)]
        w.writerow([t.strategy, t.number, t.round, t.status, t.ratio, 1 / t.ratio if t.ratio else "", t.runtime_ns,
                    t.default_ns, *values, t.error])
    return buf.getvalue()


def write_outputs(out: Path, space: Space, result: TuneResult) -> None:
    """trials.csv / trials.json, best.json (plain data for `compile_with`), result.json, progress.png."""
    from graphcost.atomic import atomic_write_json, atomic_write_text
    from graphcost.tuning.plot import plot_progress

    atomic_write_text(out / "trials.csv", trials_csv(result.trials, space))
    dims = [{"name": d.name, "choices": [list(c) if isinstance(c, tuple) else c for c in d.choices]} for d in space.dims]
    atomic_write_json({"space": space.name, "dims": dims, "trials": [t.to_json() for t in result.trials]},
                      out / "trials.json", indent=1)
    atomic_write_json(result.best.to_json(), out / "best.json")
    atomic_write_json(result.to_json(), out / "result.json")
    final = None
    if result.remeasure:
        k = int(np.argmax(result.remeasure["speedup_median"]))
        final = {"median": result.remeasure["speedup_median"][k], "min": result.remeasure["speedup_min"][k],
                 "max": result.remeasure["speedup_max"][k], "kept": result.beats_default}
    plot_progress(result.trials, out / "progress.png", final)


def load_best(path: str | Path) -> TunedConfig:
    """A `TunedConfig` from a best.json written by `graphcost tune` (checked field by field)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: unreadable tuned configuration ({type(exc).__name__}: {exc})") from None
    return check_best(data, str(path))


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def check_best(data: Any, where: str = "best.json", defaults: bool = False) -> TunedConfig:
    """A `TunedConfig` from best.json's data, every field checked; ValueError naming `where` and the
    field (``layouts[0].minor_to_major``, ``compiler_options.NAME``...). defaults: missing fields take
    their defaults (a dict given to `compile_with`) instead of being refused."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
    checks = {"space": (str, "flags"), "codes": (list, []), "compiler_options": (dict, {}), "flags": (dict, {}),
              "layouts": (list, [])}
    fields = {}
    for key, (typ, default) in checks.items():
        value = data.get(key, default) if defaults else data.get(key)
        if not isinstance(value, typ):
            raise ValueError(f"{where}: field {key!r} must be a {typ.__name__}, got {type(value).__name__}")
        fields[key] = value
    for i, c in enumerate(fields["codes"]):
        if not _is_int(c) or c < 0:
            raise ValueError(f"{where}: field 'codes[{i}]' must be an integer >= 0, got {c!r}")
    for name, value in fields["compiler_options"].items():
        if not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"{where}: field 'compiler_options.{name}' must be a number, string or boolean, "
                             f"got {type(value).__name__}")
    for name, value in fields["flags"].items():
        if not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"{where}: field 'flags.{name}' must be a number, string or boolean, "
                             f"got {type(value).__name__}")
    for i, entry in enumerate(fields["layouts"]):
        at = f"{where}: field 'layouts[{i}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{at}' must be an object, got {type(entry).__name__}")
        for key, ok, what in (("site", _is_int, "an integer"), ("primitive", lambda v: isinstance(v, str), "a string"),
                              ("tensor", lambda v: isinstance(v, str), "a string")):
            if key not in entry:
                raise ValueError(f"{at}.{key}' is missing")
            if not ok(entry[key]):
                raise ValueError(f"{at}.{key}' must be {what}, got {entry[key]!r}")
        perm = entry.get("minor_to_major")
        if not isinstance(perm, list) or not all(_is_int(x) for x in perm):
            raise ValueError(f"{at}.minor_to_major' must be a list of integers, got {perm!r}")
    return TunedConfig(**fields)
