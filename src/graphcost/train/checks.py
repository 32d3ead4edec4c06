"""The training settings check themselves when they are built: `TrainConfig` and `RunSpec`
refuse a value of the wrong type, NaN, or outside the bounds `graphcost train`'s options have
(`graphcost.guards.bounds`), with an `ArgumentError` (a `GraphcostError`, ValueError and TypeError) that
names the field. So ``graphcost.fit`` and ``recipe_config(...)`` are as safe as the command line, whose
options map onto these fields (`graphcost.commands.train_spec` puts the option's name on the message).
"""

from __future__ import annotations

import os
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


def _type(name: str, value: Any, types: tuple, what: str, optional: bool = False) -> None:
    if (value is None and optional) or (isinstance(value, types) and not isinstance(value, bool)):
        return
    raise ArgumentError(f"{name} must be {what}, got {value!r} ({type(value).__name__})")


def check_train_config(cfg: Any) -> None:
    """Every field of a `trainer.TrainConfig`; ArgumentError naming the first one that cannot be used."""
    _type("model", cfg.model, (str,), "a model name")
    _type("loss", cfg.loss, (str,), "a loss name")
    _type("device", cfg.device, (str,), "auto, cpu, cuda or cuda:N")
    import re

    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", cfg.device.strip()):  # (whether CUDA is there: when training starts)
        raise ArgumentError(f"device must be auto, cpu, cuda or cuda:N, got {cfg.device!r}")
    if not isinstance(cfg.model_config, dict):
        raise ArgumentError(f"model_config must be a dict of model options, got {type(cfg.model_config).__name__}")
    check_int("epochs", cfg.epochs, 1, INT_MAX)
    if cfg.batch_configs is not None:
        check_int("batch_configs", cfg.batch_configs, 1, INT_MAX)
    check_int("max_steps_per_graph", cfg.max_steps_per_graph, 0, INT_MAX)
    check_int("min_epoch_steps", cfg.min_epoch_steps, 1, INT_MAX)
    check_int("patience", cfg.patience, 0, INT_MAX)
    check_real("lr", cfg.lr, 0.0, lo_open=True)
    check_real("weight_decay", cfg.weight_decay, 0.0)
    check_real("warmup_frac", cfg.warmup_frac, 0.0, 1.0)
    check_real("clip_norm", cfg.clip_norm, 0.0)
    check_seed("seed", cfg.seed)
    check_int("eval_batch", cfg.eval_batch, 1, INT_MAX)
    check_int("eval_tta", cfg.eval_tta, 0, TTA_MAX)
    check_int("checkpoint_every", cfg.checkpoint_every, 0, INT_MAX)
    check_workers("loader_workers", cfg.loader_workers)
    for name in ("progress", "plots"):
        if not isinstance(getattr(cfg, name), bool):
            raise ArgumentError(f"{name} must be True or False, got {getattr(cfg, name)!r}")


def check_run_spec(spec: Any, config_type: type) -> None:
    """Every field of a `spec.RunSpec` (its `config`, a `config_type` = TrainConfig, checked when it was
    built); ArgumentError naming the first one that cannot be used."""
    if not isinstance(spec.config, config_type):
        raise ArgumentError(f"config must be a TrainConfig (graphcost.recipe_config(...)), got "
                            f"{type(spec.config).__name__}")
    _type("data_dir", spec.data_dir, (str, os.PathLike), "a directory path or None", optional=True)
    _type("collection", spec.collection, (str,), "a collection name (e.g. layout:xla:random) or None", optional=True)
    if spec.max_graphs is not None:
        check_int("max_graphs", spec.max_graphs, 1, GRAPHS_MAX)
    check_int("folds", spec.folds, 0, GRAPHS_MAX)
    if spec.folds == 1:
        raise ArgumentError("folds must be 0 (official train/valid split) or at least 2 for cross-validation, got 1")
    check_int("train_folds", spec.train_folds, 1, GRAPHS_MAX)
    check_int("keep", spec.keep, 1, GRAPHS_MAX)
    check_int("seeds", spec.seeds, 1, GRAPHS_MAX)
    if spec.seeds > 1 and spec.folds:
        raise ArgumentError(f"seeds {spec.seeds} cannot be combined with folds {spec.folds}: cross-validation already "
                            "trains an ensemble (its folds); use one or the other")
    if not isinstance(spec.trees, bool):
        raise ArgumentError(f"trees must be True or False, got {spec.trees!r}")


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
                       name: str = "model_config") -> None:
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
                            f"and AdamW state, above max_memory_gb {max_memory_gb:g}")
