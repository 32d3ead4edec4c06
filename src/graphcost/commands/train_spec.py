"""The options of `graphcost train` turned into the run's checked `RunSpec` and its data: each error
names its flag and comes before any data is prepared or anything is written. On --resume the spec is
the interrupted run's, read back from its run.json (`RunSpec.from_json`), and an option given on the
command line that contradicts it is refused (`graphcost.train.spec.contradiction`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from graphcost.guards.bounds import SEED_MAX, ArgumentError
from graphcost.commands.choices import value
from graphcost.commands.common import (
    check_collection,
    check_device_option,
    fail,
    option_message,
    run_info_of,
)
from graphcost.train import recipe

if TYPE_CHECKING:
    from graphcost.data.io.locate import DataSplits
    from graphcost.train.spec import RunSpec


def _parse_opts(items: list[str]) -> dict:
    """--model-opt KEY=VALUE (VALUE parsed as JSON when possible: 32, 0.1, true, "x")."""
    out = {}
    for item in items:
        if "=" not in item:
            fail(f"--model-opt expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out




def _check_train_numbers(lr: float, seed: int, max_memory_gb: float) -> None:
    """One-line errors naming the option for a learning rate, seed or memory bound that training
    cannot use (an infinite or non-positive --lr, a --seed past 2**32 - 1, a NaN --max-memory-gb)."""
    import math

    if not (math.isfinite(lr) and lr > 0):
        fail(f"--lr must be a finite number > 0, got {lr}")
    if not 0 <= seed <= SEED_MAX:
        fail(f"--seed must be an integer from 0 to {SEED_MAX}, got {seed}")
    if not (math.isfinite(max_memory_gb) and max_memory_gb > 0):
        fail(f"--max-memory-gb must be a finite number > 0, got {max_memory_gb}")


def _check_model_sizes(model_config: dict) -> None:
    """--model-opt sizes (`graphcost.train.checks.check_model_sizes`)."""
    from graphcost.train.checks import check_model_sizes

    try:
        check_model_sizes(model_config, "--model-opt")
    except ValueError as exc:
        fail(str(exc))


def _check_model_memory(model: str, kind: str, model_config: dict, max_memory_gb: float) -> None:
    """--model-opt against --max-memory-gb (`graphcost.train.checks.check_model_memory`)."""
    from graphcost.train.checks import check_model_memory

    try:
        check_model_memory(model, kind, model_config, max_memory_gb, "--model-opt")
    except ValueError as exc:
        fail(str(exc).replace("above max_memory_gb", "above --max-memory-gb"))


def _options_given(ctx: typer.Context) -> set[str]:
    """The parameters of the command given on the command line or by environment variable (not left at
    their defaults): what --resume must find in agreement with run.json."""
    given = set()
    for name in ctx.params:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            given.add(name)
    return given


def spec_from_options(cli: typer.Context, *, model: Any, loss: Any, collection: Any, data_dir: Optional[Path],
                      model_opt: list[str], epochs: int, patience: int, max_steps_per_graph: int, trees: bool,
                      folds: int, train_folds: int, keep: int, seeds: int, batch_configs: Optional[int], lr: float,
                      seed: int, out: Optional[Path], resume: bool, overwrite: bool, max_graphs: Optional[int],
                      device: str, checkpoint_every: int, eval_tta: int,
                      max_memory_gb: float, progress: bool, loader_workers: int) -> tuple[RunSpec, DataSplits, str]:
    """(the run's spec, its data, the checked --device) from the options of `graphcost train`."""
    from graphcost.data.io.locate import DatasetError, resolve_splits
    from graphcost.models.losses import get_loss
    from graphcost.models.registry import MODEL_NAMES, coerce_config, model_kinds
    from graphcost.runs.run_dir import LATEST, RunDirError, check_resumable
    from graphcost.runs.run_json import RUN_INFO
    from graphcost.train.fit import check_model_kind
    from graphcost.train.spec import RunSpec, contradiction
    from graphcost.train.trainer import TrainConfig

    model, loss, collection = value(model), value(loss), value(collection)  # plain str for run.json / checkpoints (older typer makes the enum after the callback)
    check_collection(collection)
    device = check_device_option(device)
    if folds < 0 or folds == 1:
        fail(f"--folds must be 0 (official train/valid split) or at least 2 for cross-validation, got {folds}")
    if seeds > 1 and folds:
        fail(f"--seeds {seeds} cannot be combined with --folds {folds}: cross-validation already trains an "
             "ensemble (its folds); use one or the other")
    _check_train_numbers(lr, seed, max_memory_gb)
    try:  # the spec checks itself (graphcost.train.checks); its message gets the option's name
        s = RunSpec(
            config=TrainConfig(model=model, loss=loss, epochs=epochs, batch_configs=batch_configs, lr=lr, seed=seed,
                               eval_tta=eval_tta, patience=patience, max_steps_per_graph=max_steps_per_graph,
                               device=device, checkpoint_every=checkpoint_every, progress=progress,
                               loader_workers=loader_workers),
            data_dir=data_dir, collection=collection, max_graphs=max_graphs, folds=folds, train_folds=train_folds,
            keep=keep, seeds=seeds, trees=trees,
        )  # fmt: skip
    except ArgumentError as exc:
        fail(option_message(exc))
    model_config = None  # recorded in run.json on --resume; else the recipe's with --model-opt
    if resume:  # a resumed run reuses the interrupted run's data and settings
        run_dir = out if out is not None else (LATEST.resolve() if LATEST.exists() else None)
        try:
            check_resumable(run_dir)
        except RunDirError as exc:
            fail(str(exc))
        previous = run_info_of(run_dir) if run_dir is not None and (run_dir / RUN_INFO).is_file() else {}
        if previous and run_dir is not None:
            # what may change on a resume (trainer.RESUME_FREE) comes from the options
            recorded = RunSpec.from_json(previous, run_dir, device=device, checkpoint_every=checkpoint_every,
                                         progress=progress, loader_workers=loader_workers)
            why = contradiction(recorded, s, _options_given(cli), run_dir / RUN_INFO,
                                _parse_opts(model_opt) if model_opt else None)
            if why is not None:  # a contradicting --collection / --epochs was silently ignored
                fail(why)
            s, model_config = recorded, recorded.config.model_config
            typer.echo(f"resuming {run_dir} with its recorded data and settings ({RUN_INFO})")
    name = s.config.model  # the model to train: the option's, or on --resume the recorded one
    if name not in MODEL_NAMES:  # fail before any data is prepared
        fail(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
    try:
        if model_config is None:
            model_config = coerce_config(name, {**(recipe.MODEL_CONFIG if name == recipe.MODEL else {}),
                                                 **_parse_opts(model_opt)})
    except ValueError as exc:
        fail(f"--model-opt: {exc}")
    s.config.model_config = model_config
    _check_model_sizes(model_config)
    try:
        get_loss(s.config.loss)
    except ValueError as exc:
        fail(str(exc))
    try:
        splits = resolve_splits(s.data_dir, s.collection, seed=s.config.seed, max_graphs=s.max_graphs,
                                recorded_in=s.recorded_in)  # fmt: skip
        check_model_kind(name, splits.collection)
    except (DatasetError, ValueError) as exc:
        fail(str(exc))
    found = splits.collection
    _check_model_memory(name, found.split(":")[0] if found else model_kinds(name)[0], model_config,
                        max_memory_gb)
    return s, splits, device  # --out and --cache-dir are checked by `graphcost.fit` (FIT_NAMES) before any work


# the names of `graphcost.fit`'s arguments in the messages of `graphcost train`
FIT_NAMES = {"out": "--out", "cache_dir": "--cache-dir", "data": "--data-dir", "data_dir": "--data-dir",
             "overwrite": "--overwrite"}


def fail_collective(exc: RuntimeError, rank, timeout_s: float) -> None:
    """`train` under torchrun: a torch.distributed failure as a one-line error naming the rank; anything else
    re-raised."""
    from graphcost.runs.distributed import collective_failure

    why = collective_failure(exc)
    if why is None:
        raise exc
    fail(f"rank {rank}: data-parallel training stopped: {why} (another process died or never started, or a "
         f"collective waited longer than --dist-timeout {timeout_s:g} s)")
