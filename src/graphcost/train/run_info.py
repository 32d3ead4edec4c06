"""run.json of a cost-model run (`graphcost train`): the fields it records and their check on load.

`train` writes it once per run; `train --resume`, `evaluate` and `predict` read it back to find the
run's data and settings. A hand-edited or damaged run.json must give one error naming the file and
the field, never a traceback deep inside training:

    collection   null or a collection name (tile:xla, layout:xla:default, ...)
    data_dir     null (the shipped dataset) or a non-empty path string
    kind         "layout" | "tile"
    folds        0 (official split) or >= 2;  train_folds, keep: >= 1
    max_graphs   null or >= 1
    config       the TrainConfig: model, model_config, loss, epochs, batch_configs, lr, seed, eval_tta, ...
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

RUN_INFO = "run.json"


class RunInfoError(ValueError):
    """A run.json that cannot describe a run; the message names the file and the field."""


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _top_fields() -> dict[str, tuple[Callable[[Any], bool], str]]:
    from graphcost.data.io.discover import COLLECTIONS

    return {
        "collection": (lambda v: v is None or v in COLLECTIONS, f"null or one of {', '.join(COLLECTIONS)}"),
        "data_dir": (lambda v: v is None or (isinstance(v, str) and bool(v)), "null or a non-empty path string"),
        "kind": (lambda v: v in ("layout", "tile"), "'layout' or 'tile'"),
        "folds": (lambda v: _int(v) and (v == 0 or v >= 2), "an integer, 0 or at least 2"),
        "train_folds": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
        "keep": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
        "max_graphs": (lambda v: v is None or (_int(v) and v >= 1), "null or an integer >= 1"),
        "config": (lambda v: isinstance(v, dict), "a JSON object (the training settings)"),
    }


def _config_fields() -> dict[str, tuple[Callable[[Any], bool], str]]:
    from graphcost.models.registry import MODEL_NAMES
    from graphcost.train.losses import LOSS_NAMES

    return {
        "model": (lambda v: v in MODEL_NAMES, f"one of {', '.join(MODEL_NAMES)}"),
        "model_config": (lambda v: isinstance(v, dict), "a JSON object"),
        "loss": (lambda v: v in LOSS_NAMES, f"one of {', '.join(LOSS_NAMES)}"),
        "epochs": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
        "batch_configs": (lambda v: _int(v) and v >= 2, "an integer >= 2"),
        "lr": (lambda v: _number(v) and v > 0, "a finite number > 0"),
        "seed": (_int, "an integer"),
        "eval_tta": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
    }


def _check_fields(data: dict, fields: dict, path: Path, prefix: str = "") -> None:
    for key, (ok, expected) in fields.items():
        if key not in data:
            raise RunInfoError(f"{path}: field '{prefix}{key}' is missing")
        if not ok(data[key]):
            got = repr(data[key])
            got = got if len(got) <= 60 else got[:57] + "..."
            raise RunInfoError(f"{path}: field '{prefix}{key}' must be {expected}, got {got}")


def check_run_info(data: Any, path: str | Path) -> dict:
    """`data` (run.json parsed) when it describes a run; RunInfoError naming `path` and the field otherwise."""
    from graphcost.models.registry import coerce_config

    path = Path(path)
    if not isinstance(data, dict):
        raise RunInfoError(f"{path}: expected a JSON object, got {type(data).__name__}")
    _check_fields(data, _top_fields(), path)
    config = data["config"]
    _check_fields(config, _config_fields(), path, "config.")
    try:
        coerce_config(config["model"], config["model_config"])
    except ValueError as exc:
        raise RunInfoError(f"{path}: field 'config.model_config': {exc}") from None
    return data
