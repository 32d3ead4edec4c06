"""The training settings check themselves when they are built: `TrainConfig` and `RunSpec`
refuse a value of the wrong type, NaN, or outside the bounds `graphcost train`'s options have
(`graphcost.guards.bounds`), with an `ArgumentError` (a `GraphcostError`, ValueError and TypeError) that
names the field. So ``graphcost.fit`` and ``recipe_config(...)`` are as safe as the command line, whose
options map onto these fields: within `naming(names)` a message names the option instead of the field
(`graphcost.train.train_run` passes `graphcost train`'s ``{"lr": "--lr", ...}``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Integral, Real
from typing import Any

from graphcost.guards.bounds import (
    GRAPHS_MAX,
    INT_MAX,
    TTA_MAX,
    ArgumentError,
    check_int,
    check_real,
    check_seed,
    check_workers,
)


_NAMES: ContextVar[Mapping[str, str]] = ContextVar("graphcost_train_names", default={})


@contextmanager
def naming(names: Mapping[str, str] | None) -> Iterator[None]:
    """Within it, the checks' messages name a field as `names` gives it (``{"lr": "--lr"}``), else by itself."""
    token = _NAMES.set(names or {})
    try:
        yield
    finally:
        _NAMES.reset(token)


def field_name(field: str) -> str:
    """The name the messages give `field` (`naming`)."""
    return _NAMES.get().get(field, field)


def check_positive(name: str, value: Any) -> None:
    """A finite number > 0 (a learning rate, a memory bound); ArgumentError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ArgumentError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise ArgumentError(f"{name} must be a finite number > 0, got {value}")


def _type(name: str, value: Any, types: tuple, what: str, optional: bool = False) -> None:
    if (value is None and optional) or (isinstance(value, types) and not isinstance(value, bool)):
        return
    raise ArgumentError(f"{name} must be {what}, got {value!r} ({type(value).__name__})")


def check_train_config(cfg: Any) -> None:
    """Every field of a `trainer.TrainConfig`; ArgumentError naming the first one that cannot be used."""
    n = field_name
    _type(n("model"), cfg.model, (str,), "a model name")
    _type(n("loss"), cfg.loss, (str,), "a loss name")
    _type(n("device"), cfg.device, (str,), "auto, cpu, cuda or cuda:N")
    import re

    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", cfg.device.strip()):  # (whether CUDA is there: when training starts)
        raise ArgumentError(f"{n('device')} must be auto, cpu, cuda or cuda:N, got {cfg.device!r}")
    if not isinstance(cfg.model_config, dict):
        raise ArgumentError(f"{n('model_config')} must be a dict of model options, got "
                            f"{type(cfg.model_config).__name__}")
    check_int(n("epochs"), cfg.epochs, 1, INT_MAX)
    if cfg.batch_configs is not None:
        check_int(n("batch_configs"), cfg.batch_configs, 1, INT_MAX)
    check_int(n("max_steps_per_graph"), cfg.max_steps_per_graph, 0, INT_MAX)
    check_int(n("min_epoch_steps"), cfg.min_epoch_steps, 1, INT_MAX)
    check_int(n("patience"), cfg.patience, 0, INT_MAX)
    check_positive(n("lr"), cfg.lr)
    check_real(n("weight_decay"), cfg.weight_decay, 0.0)
    check_real(n("warmup_frac"), cfg.warmup_frac, 0.0, 1.0)
    check_real(n("clip_norm"), cfg.clip_norm, 0.0)
    check_seed(n("seed"), cfg.seed)
    check_int(n("eval_batch"), cfg.eval_batch, 1, INT_MAX)
    check_int(n("eval_tta"), cfg.eval_tta, 0, TTA_MAX)
    check_int(n("checkpoint_every"), cfg.checkpoint_every, 0, INT_MAX)
    check_workers(n("loader_workers"), cfg.loader_workers)
    for name in ("progress", "plots"):
        if not isinstance(getattr(cfg, name), bool):
            raise ArgumentError(f"{n(name)} must be True or False, got {getattr(cfg, name)!r}")


def check_run_spec(spec: Any, config_type: type) -> None:
    """Every field of a `spec.RunSpec` (its `config`, a `config_type` = TrainConfig, checked when it was
    built); ArgumentError naming the first one that cannot be used."""
    n = field_name
    if not isinstance(spec.config, config_type):
        raise ArgumentError(f"config must be a TrainConfig (graphcost.recipe_config(...)), got "
                            f"{type(spec.config).__name__}")
    _type(n("data_dir"), spec.data_dir, (str, os.PathLike), "a directory path or None", optional=True)
    _type(n("collection"), spec.collection, (str,), "a collection name (e.g. layout:xla:random) or None", optional=True)
    if spec.max_graphs is not None:
        check_int(n("max_graphs"), spec.max_graphs, 1, GRAPHS_MAX)
    _type(n("folds"), spec.folds, (Integral,), "an integer")
    if spec.folds < 0 or spec.folds == 1:
        raise ArgumentError(f"{n('folds')} must be 0 (official train/valid split) or at least 2 for cross-validation, "
                            f"got {spec.folds}")
    check_int(n("folds"), spec.folds, 0, GRAPHS_MAX)
    check_int(n("train_folds"), spec.train_folds, 1, GRAPHS_MAX)
    check_int(n("keep"), spec.keep, 1, GRAPHS_MAX)
    check_int(n("seeds"), spec.seeds, 1, GRAPHS_MAX)
    if spec.seeds > 1 and spec.folds:
        raise ArgumentError(f"{n('seeds')} {spec.seeds} cannot be combined with {n('folds')} {spec.folds}: "
                            "cross-validation already trains an ensemble (its folds); use one or the other")
    if not isinstance(spec.trees, bool):
        raise ArgumentError(f"{n('trees')} must be True or False, got {spec.trees!r}")


_SIZE_OPTIONS = ("hidden", "num_opcodes", "se_reduction")  # besides every *_dim and *_heads: must be >= 1


def check_model_sizes(model_config: dict, name: str = "model_config") -> None:
    """Model sizes: widths, embedding sizes and head counts must be >= 1, other counts >= 0."""
    for key, v in model_config.items():
        if isinstance(v, bool) or not isinstance(v, int):
            continue
        least = 1 if key in _SIZE_OPTIONS or key.endswith(("_dim", "_heads")) else 0
        if v < least:
            raise ArgumentError(f"{name} {key}={v}: must be >= {least}")


def check_model_memory(model: str, kind: str, model_config: dict, max_memory_gb: float,
                       name: str = "model_config", limit: str = "max_memory_gb") -> None:
    """ArgumentError when the model cannot be built with `model_config`, or its weights, gradients and AdamW
    state (16 bytes a parameter) exceed `max_memory_gb`: it is built on PyTorch's meta device, so nothing is
    allocated (``model_config={"hidden": 10**9}`` tried to allocate 1 TB from the Python API)."""
    from graphcost.models.registry import build_model
    from graphcost.runs.lr_schedule import adamw_training_bytes

    try:
        params, need = adamw_training_bytes(lambda: build_model(model, kind, **model_config))
    except (ValueError, TypeError, RuntimeError) as exc:
        raise ArgumentError(f"{name}: model {model!r} cannot be built with {model_config}: {exc}") from None
    need_gb = need / 1e9
    if need_gb > max_memory_gb:
        raise ArgumentError(f"{name}: model {model!r} has {params:.3g} parameters, {need_gb:.3g} GB with gradients "
                            f"and AdamW state, above {limit} {max_memory_gb:g}")
