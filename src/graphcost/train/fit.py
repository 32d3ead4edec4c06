"""`graphcost.fit`: train a cost model as `graphcost train` does, from Python.

    run = graphcost.fit()                                      # the shipped data, the default recipe
    run = graphcost.fit(RunSpec(collection="tile:xla"), out="runs/tile")
    graphcost.fit(RunSpec(config=recipe_config(epochs=5), folds=5), out="runs/cv")

One run (folds 0): the graph model on the train split, chosen on the valid split, then the trees on
the configuration table and their blend with it (`graphcost.inference.blend`), the blend weight chosen
on the valid split; with seeds n >= 2, n such graph models from n seeds, averaged
(`graphcost.train.seeds`), the trees blended with their average. Cross-validation (folds >= 2): K folds
by graph on train+valid and the ensemble of the best (TGraph §2.4.3). Either way the run directory holds
run.json (`RunSpec.to_json`) and what `graphcost evaluate` / `rank` / `tune` load
(`graphcost.inference.ensemble.EnsemblePredictor`).

The checks run once, before any graph is read (`check_fit_arguments`: the arguments; `plan_fit`: the
model's sizes and loss, the data, the outputs, the model's graph kind and memory on PyTorch's meta device); `run_fit`
reads the graphs and trains. Nothing in --out is replaced until every graph is read and checked, and then
only under the directory's lock (the one `tune` and `collect` take). Data-parallel: pass the `DistContext` of
`graphcost.runs.distributed.init_from_env`; every rank calls `fit` and the main one writes.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from graphcost.runs.distributed import DistContext
from graphcost.train.spec import RunSpec
from graphcost.train.trainer import TrainConfig

if TYPE_CHECKING:
    from graphcost.data.io.locate import DataSplits
    from graphcost.data.transforms.prepared import PreparedGraph
    from graphcost.inference.blend import Blend

log = logging.getLogger(__name__)


@dataclass
class FitResult:
    """What `fit` trained: the run directory, its graph kind, and the best validation score of its
    graph model (one run), the mean of its seed members' (seed ensemble) or of the kept folds
    (cross-validation), by `metric`."""

    run_dir: Path
    kind: str
    metric: str  # kendall_tau (layout) | tile_score (tile)
    best_score: float
    blend: object | None = None  # graphcost.inference.blend.Blend when trees were fitted, else None


def fit(
    spec: RunSpec | None = None,
    out: str | Path | None = None,
    *,
    resume: bool = False,
    overwrite: bool = False,
    cache_dir: str | Path | None = None,
    max_memory_gb: float = 8.0,
    dist_ctx: DistContext | None = None,
    report: Callable[[str], None] | None = None,
    splits: DataSplits | None = None,
    names: Mapping[str, str] | None = None,
) -> FitResult:
    """Train the run `spec` describes (default: `graphcost train` with no options) into `out`.

    out: the run directory (None: a fresh runs/<model>-<time>-<random>, linked as runs/latest; with
    `resume`, the run runs/latest points to). resume: continue the run in `out` from its last
    checkpoint; pass the spec it was started with (`RunSpec.from_json` of its run.json). overwrite:
    replace a run already in `out`. cache_dir: where prepared graphs are cached; above `max_memory_gb`
    GB of them they are read back per step.
    report: where the progress lines go (default: this module's logger, INFO). splits: the data
    already found by `graphcost.data.io.locate.resolve_splits` (default: found from `spec`). names: how the
    messages name the arguments, the spec's fields and the data the outputs must lie outside (``data``)
    (default: by themselves; `graphcost.train.train_run` passes ``--out``, ``--model-opt``...).
    Every check runs once, before any graph is read (`check_fit_arguments`, `plan_fit`), then `run_fit` trains.
    Raises DatasetError for data that cannot be read, RunDirError / OutputExistsError for an `out`
    that cannot be used, ValueError for settings the data or model refuse.
    """
    from graphcost.train.checks import naming

    spec = spec if spec is not None else RunSpec()
    with naming(names):
        _check_spec(spec)
        check_fit_arguments(out, resume, overwrite, cache_dir, max_memory_gb, dist_ctx, report)
    plan = plan_fit(spec, out, resume=resume, overwrite=overwrite, cache_dir=cache_dir, max_memory_gb=max_memory_gb,
                    splits=splits, names=names)
    return run_fit(plan, dist_ctx, report)


@dataclass
class FitPlan:
    """A run `plan_fit` checked, before anything was read or written: its spec (the collection's batch size
    filled in), the data found, the run directory and cache, and the graph kind the model was checked for
    (None: the files do not say it; `run_fit` checks the model once the graphs are read)."""

    spec: RunSpec
    splits: DataSplits
    out: Path | None
    cache: Path | None
    kind: str | None
    resume: bool
    overwrite: bool
    max_memory_gb: float
    names: Mapping[str, str] | None = None


def plan_fit(spec: RunSpec, out: str | Path | None = None, *, resume: bool = False, overwrite: bool = False,
             cache_dir: str | Path | None = None, max_memory_gb: float = 8.0, splits: DataSplits | None = None,
             names: Mapping[str, str] | None = None) -> FitPlan:
    """The checks of a run whose arguments `check_fit_arguments` took, each once and before any graph is read:
    the model sizes and loss, the data (`resolve_splits`, unless `splits` were found already), the run
    directory and cache, the model against the data's graph kind and against `max_memory_gb` (built on
    PyTorch's meta device). `names`: what the messages call ``model_config``, ``max_memory_gb``, ``out``,
    ``cache_dir``, ``data_dir``, ``overwrite`` and the data (``data``)."""
    from graphcost.data.io.locate import resolve_splits
    from graphcost.models.losses import get_loss
    from graphcost.train.checks import check_model_sizes
    from graphcost.train.trainer import default_batch_configs

    def name(key: str) -> str:
        return (names or {}).get(key, key)

    config = spec.config
    check_model_sizes(config.model_config, name("model_config"))
    get_loss(config.loss)
    if splits is None:
        splits = resolve_splits(spec.data_dir, spec.collection, seed=config.seed, max_graphs=spec.max_graphs,
                                recorded_in=spec.recorded_in)  # fmt: skip
    out = Path(out) if out is not None else None
    cache = Path(cache_dir) if cache_dir is not None else None
    _check_outputs(out, cache, splits.root, spec.data_dir, overwrite, resume, names)
    if overwrite and out is not None and spec.data_dir is not None and \
            Path(spec.data_dir).resolve().is_relative_to(out.resolve()):
        raise ValueError(f"{name('data_dir')} {spec.data_dir} lies inside {name('out')} {out}, "
                         f"which {name('overwrite')} would empty; move the data out first")
    kind = splits.collection.split(":")[0] if splits.collection else _files_kind(splits.files["train"])
    if kind is not None:
        check_model(config, splits.collection, kind, splits.root, max_memory_gb, names)
    if config.batch_configs is None:
        spec = _with(spec, config=_with(config, batch_configs=default_batch_configs(splits.collection)))
    return FitPlan(spec, splits, out, cache, kind, resume, overwrite, max_memory_gb, names)


def check_model(config: TrainConfig, collection: str | None, kind: str, data: str | Path, max_memory_gb: float,
                names: Mapping[str, str] | None = None) -> None:
    """The model of `config` against the graphs it will train on (`check_model_kind`) and against
    `max_memory_gb` (`checks.check_model_memory`, on the meta device: nothing allocated)."""
    from graphcost.train.checks import check_model_memory

    check_model_kind(config.model, collection, kind, data)
    check_model_memory(config.model, kind, config.model_config, max_memory_gb,
                       (names or {}).get("model_config", "model_config"),
                       (names or {}).get("max_memory_gb", "max_memory_gb"))


def _with(checked: Any, **changes: Any) -> Any:
    """A copy of the checked dataclass `checked` with `changes` the library made (usable by construction): its
    fields are not checked again, as `dataclasses.replace` would."""
    new = copy.copy(checked)
    for key, value in changes.items():
        setattr(new, key, value)
    return new


def _files_kind(files: Sequence[Path]) -> str | None:
    """The graph kind the first of `files` whose keys tell it says (`locate.file_kind`), else None."""
    from graphcost.data.io.locate import file_kind

    return next((k for k in map(file_kind, files) if k is not None), None)


def run_fit(plan: FitPlan, dist_ctx: DistContext | None = None,
            report: Callable[[str], None] | None = None) -> FitResult:
    """Train the run `plan_fit` checked: read and prepare its graphs, then (under the run directory's lock)
    record run.json and train the graph model, the trees and their blend, or the folds or seeds."""
    from graphcost.data.io.locate import recorded_data_dir
    from graphcost.data.transforms.pool import graph_kinds, load_prepared
    from graphcost.frontend.programs.flags import trained_flag_columns
    from graphcost.guards.atomic import lock_dir, write_json
    from graphcost.runs.run_dir import choose_run_dir
    from graphcost.runs.run_json import RUN_INFO

    spec, splits, out, cache, resume = plan.spec, plan.splits, plan.out, plan.cache, plan.resume
    config, max_memory_gb = spec.config, plan.max_memory_gb
    say = report or log.info
    ctx = dist_ctx or DistContext()
    if ctx.is_main:
        say(f"data: {splits.describe()}")
    show = config.progress and ctx.is_main
    if spec.folds:  # cross-validation pools train + valid (all de-duplicated for training)
        pool = load_prepared(splits.files["train"] + splits.files["valid"], cache, show, "prepare",
                             max_memory_gb=max_memory_gb)  # fmt: skip
        valid_graphs = []
    else:  # validation keeps every configuration of each file
        pool = load_prepared(splits.files["train"], cache, show, "prepare train", max_memory_gb=max_memory_gb)
        valid_graphs = load_prepared(splits.files["valid"], cache, show, "prepare valid", dedup=False,
                                     max_memory_gb=max_memory_gb)  # fmt: skip
        valid_graphs = _rankable(valid_graphs, say if ctx.is_main else None)
    kind = graph_kinds(pool)[0]
    if kind != plan.kind:  # data whose files did not say their kind: the model is checked on the graphs read
        check_model(config, None, kind, splits.root, max_memory_gb, plan.names)
    if config.model_config.get("compiled_stats") and not any(getattr(g, "compiled", None) is not None for g in pool):
        # a term never trained would score any statistics it is given later (a tuner's compiled
        # candidates, an annotated graph) with its random initial weights
        config = _with(config, model_config={**config.model_config, "compiled_stats": False})
        if ctx.is_main:
            say("compiled statistics: no training graph carries config_compiled_stats, so the model has no term "
                "for them")
        spec = _with(spec, config=config)
    # only now, with every graph read and validated, is an old run in `out` replaced (overwrite), and
    # only under its lock: a run another live process holds is never removed
    lock = lock_dir(out) if out is not None and ctx.is_main else None
    try:
        out = choose_run_dir(out, config.model, resume, ctx, plan.overwrite, keep=(cache,) if cache is not None else ())
        if lock is None and ctx.is_main:
            lock = lock_dir(out)
        if ctx.is_main:
            say(f"run: {out}")
        flag_columns = trained_flag_columns(splits.root) if kind == "tile" else None
        if ctx.is_main:  # which flags the labels vary: a tuner scores only these (graphcost.tuning.scoring)
            out.mkdir(parents=True, exist_ok=True)
            info = spec.to_json(kind, recorded_data_dir(spec.data_dir), flag_columns)
            write_json(info, out / RUN_INFO)
        if spec.folds:
            return _crossval(spec, pool, out, resume, ctx, say, kind)
        if spec.seeds > 1:
            return _seed_ensemble(spec, pool, valid_graphs, out, resume, ctx, say, kind)
        return _one_run(spec, pool, valid_graphs, out, resume, ctx, say, kind)
    finally:
        if lock is not None:
            lock.release()


def check_model_kind(model: str, collection: str | None, kind: str | None = None, data: str | Path = "") -> None:
    """ValueError when the model cannot score the graphs of `collection` (a tile-only model on layout
    data), or the `kind` of graphs read from `data` when the data names no collection."""
    from graphcost.models.registry import model_kinds

    kinds = model_kinds(model)
    if collection and collection.split(":")[0] not in kinds:
        raise ValueError(f"model {model!r} supports {', '.join(kinds)} graphs, not the {collection} collection")
    if kind is not None and kind not in kinds:
        raise ValueError(f"model {model!r} supports {', '.join(kinds)} graphs, not the {kind} graphs of {data}")


def _crossval(spec: RunSpec, pool: Sequence[PreparedGraph], out: Path, resume: bool, ctx: DistContext,
              say: Callable[[str], None], kind: str) -> FitResult:
    from graphcost.train.crossval import run_crossval

    cv = run_crossval(spec.config, pool, out, folds=spec.folds, train_folds=spec.train_folds, keep=spec.keep,
                      resume=resume, trainer_kwargs={"dist_ctx": ctx})  # fmt: skip
    if ctx.is_main:
        say(f"folds {', '.join(f'{score:.4f}' for score in cv.fold_scores)}; kept {cv.kept}; "
            f"mean {cv.metric} {cv.mean_score:.4f}")
        say(f"ensemble: {out / 'ensemble.json'}")
    return FitResult(out, kind, cv.metric, cv.mean_score)


def _seed_ensemble(spec: RunSpec, train_graphs: Sequence[PreparedGraph], valid_graphs: Sequence[PreparedGraph],
                   out: Path, resume: bool, ctx: DistContext, say: Callable[[str], None], kind: str) -> FitResult:
    from graphcost.train.seeds import run_seed_ensemble

    result = run_seed_ensemble(spec.config, train_graphs, valid_graphs, out, seeds=spec.seeds, resume=resume,
                               trainer_kwargs={"dist_ctx": ctx})  # fmt: skip
    blend = None
    if ctx.is_main:
        say(f"seeds {spec.config.seed}..{spec.config.seed + spec.seeds - 1}: best valid {result.metric} "
            f"{', '.join(f'{score:.4f}' for score in result.member_scores)}; ensemble: {out / 'ensemble.json'}")
        blend = fit_trees(out, spec.trees, train_graphs, valid_graphs, spec.config.seed,
                          spec.config.device, say)
    return FitResult(out, kind, result.metric, result.mean_score, blend)


def _one_run(spec: RunSpec, train_graphs: Sequence[PreparedGraph], valid_graphs: Sequence[PreparedGraph], out: Path,
             resume: bool, ctx: DistContext, say: Callable[[str], None], kind: str) -> FitResult:
    from graphcost.train.trainer import Trainer

    trainer = Trainer(spec.config, train_graphs, valid_graphs, out, dist_ctx=ctx)
    result = trainer.fit(resume=resume)
    blend = None
    if ctx.is_main:
        last = result.history[-1]
        best = (f"best valid {trainer.metric} {result.best_score:.4f}" if len(valid_graphs) else
                f"lowest train loss {-result.best_score:.4f} (no validation graph)")
        say(f"epoch {last['epoch']}: train loss {last['train_loss']:.4f}, {best}, "
            f"{last['configs_per_s']:.0f} configs/s")
        say(f"model: {result.best_path or result.last_path}")
        blend = fit_trees(out, spec.trees, train_graphs, valid_graphs, spec.config.seed,
                          spec.config.device, say)
    return FitResult(out, kind, trainer.metric, result.best_score, blend)


def _check_spec(spec: Any) -> None:
    """`fit`'s spec: a RunSpec whose fields are usable (``fit("layout")`` was a traceback)."""
    from graphcost.guards.bounds import ArgumentError
    from graphcost.train.checks import check_run_spec

    if not isinstance(spec, RunSpec):
        raise ArgumentError(f"spec must be a RunSpec (graphcost.RunSpec(...)) or None, got {spec!r} "
                            f"({type(spec).__name__})")
    check_run_spec(spec, TrainConfig)  # again: a spec's fields may have been changed since it was built


def check_fit_arguments(out: Any, resume: Any, overwrite: Any, cache_dir: Any, max_memory_gb: Any, dist_ctx: Any,
                        report: Any) -> None:
    """`fit`'s other arguments, before anything is read or written: ArgumentError naming the first unusable one
    (``out=5``, ``report=5``, ``max_memory_gb=nan`` were tracebacks or accepted); within `checks.naming` the
    messages name them as it says."""
    import os

    from graphcost.guards.bounds import ArgumentError
    from graphcost.train.checks import check_positive, field_name

    for name, value in (("out", out), ("cache_dir", cache_dir)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ArgumentError(f"{field_name(name)} must be a directory path or None, got {value!r} "
                                f"({type(value).__name__})")
        if isinstance(value, str) and not value.strip():
            raise ArgumentError(f"{field_name(name)} must be a directory path, got an empty string")
    for name, value in (("resume", resume), ("overwrite", overwrite)):
        if not isinstance(value, bool):
            raise ArgumentError(f"{field_name(name)} must be True or False, got {value!r}")
    check_positive(field_name("max_memory_gb"), max_memory_gb)
    if dist_ctx is not None and not isinstance(dist_ctx, DistContext):
        raise ArgumentError(f"dist_ctx must be a DistContext or None, got {type(dist_ctx).__name__}")
    if report is not None and not callable(report):
        raise ArgumentError(f"report must be a function taking one line (e.g. print) or None, got {report!r}")


def _rankable(valid_graphs: Any, say: Callable[[str], None] | None) -> Any:
    """The validation graphs that can be ranked (`inference.ranking.has_usable_labels`), the others left out with
    a line naming them (a split whose only validation graph had one configuration trained to "best
    valid kendall_tau -inf" under a UserWarning per epoch); a lazy split stays lazy (`LazyPrepared.subset`)."""
    from graphcost.inference.ranking import has_usable_labels

    keep = [i for i in range(len(valid_graphs)) if has_usable_labels(valid_graphs[i].runtime)]
    if len(keep) == len(valid_graphs):
        return valid_graphs
    kept = set(keep)
    left = [str(getattr(valid_graphs[i], "source", None) or valid_graphs[i].name)
            for i in range(len(valid_graphs)) if i not in kept]
    if say is not None:
        say(f"valid: {len(left)} graph(s) left out, nothing to rank in them (fewer than 2 configurations, non-finite "
            f"or equal runtimes): {', '.join(left[:3])}{' ...' if len(left) > 3 else ''}"
            + ("" if keep else "; no validation graph is left: the lowest training loss picks the checkpoint and "
               "the trees are skipped"))
    return valid_graphs.subset(keep) if hasattr(valid_graphs, "subset") else [valid_graphs[i] for i in keep]


def _check_outputs(out: Path | None, cache: Path | None, data_root: Path | None, data_dir: Any, overwrite: bool,
                   resume: bool, names: Mapping[str, str] | None = None) -> None:
    """The run directory and the cache: directories (not a file, not below one), not a device, not on a virtual
    or read-only file system, not inside the data (``fit(cache_dir=DATA/.../train)`` wrote cache files
    into the training split, and every later command on that data failed); the run directory not an earlier run
    unless `overwrite` or `resume`. OutputPathError / OutputExistsError naming the argument, before anything is
    read (`choose_run_dir` checks `out` again under its lock). `names`: the names messages give ``out``,
    ``cache_dir`` and the data (``data``); the data the user gave is named before the data found in it."""
    from graphcost.guards.atomic import check_dir_option
    from graphcost.guards.outputs import check_outside_inputs
    from graphcost.runs.run_dir import check_out

    def name(key: str) -> str:
        return (names or {}).get(key, key)

    inputs = [(name("data"), d) for d in dict.fromkeys(x for x in (data_dir, data_root) if x is not None)]
    if out is not None:
        check_out(out, overwrite, resume, option=name("out"))
    if cache is not None:
        check_dir_option(cache, name("cache_dir"))
    for key, path in (("out", out), ("cache_dir", cache)):
        if path is not None:
            check_outside_inputs(path, name(key), data=inputs)


def fit_trees(run_dir: Path, trees: bool, train_graphs: Sequence[PreparedGraph], valid_graphs: Sequence[PreparedGraph],
              seed: int, device: str, say: Callable[[str], None]) -> Blend | None:
    """After the graph model: the trees and their blend (`graphcost.inference.blend`) written into
    `run_dir`, or no stale blend.json when `trees` is off or there is no validation graph to choose
    the blend on. The Blend, or None."""
    from graphcost.inference.blend import BLEND_FILE
    from graphcost.models.trees import TREES_FILE

    if not trees or not len(valid_graphs):
        for name in (BLEND_FILE, TREES_FILE):
            (run_dir / name).unlink(missing_ok=True)
        if trees:
            say("trees: skipped (no validation graphs to choose the blend on)")
        return None
    import torch

    from graphcost.inference.blend import describe, fit_blend, write_blend
    from graphcost.inference.ensemble import EnsemblePredictor

    graph_model = EnsemblePredictor.load([run_dir], device=device, tta=0, trees=False)
    blend, tree_model = fit_blend(graph_model.score, train_graphs, valid_graphs, seed=seed,
                                  threads=torch.get_num_threads())  # LightGBM: the same threads as torch
    write_blend(run_dir, blend, tree_model)
    say(describe(blend))
    return blend
