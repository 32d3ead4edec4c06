"""run.json of a cost-model run (`graphcost train`): the fields it records and their check on load.

`train` writes it once per run; `train --resume`, `evaluate` and `predict` read it back to find the
run's data and settings. A hand-edited or damaged run.json must give one error naming the file and
the field, never a traceback deep inside training:

    collection   null or a collection name (tile:xla, layout:xla:default, ...)
    data_dir     null (the shipped dataset) or a non-empty path string
    kind         "layout" | "tile"
    folds        0 (official split) or >= 2;  train_folds, keep: >= 1
    seeds        (optional; 1 when absent) >= 1: the graph models of a seed ensemble
    max_graphs   null or >= 1
    config       the TrainConfig: model, model_config, loss, epochs, batch_configs, lr, seed, eval_tta, ...

`read_run_info` finds and checks the run.json behind a run directory, a checkpoint or a fold; the
settings a run trains with (read back on --resume) are `graphcost.train.spec.RunSpec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from graphcost.runs.run_json import RunInfoError, check_fields, find_run_info_file, is_int, is_number, read_run_json


def _top_fields() -> dict[str, tuple[Callable[[Any], bool], str]]:
    from graphcost.data.io.discover import COLLECTIONS

    return {
        "collection": (lambda v: v is None or v in COLLECTIONS, f"null or one of {', '.join(COLLECTIONS)}"),
        "data_dir": (lambda v: v is None or (isinstance(v, str) and bool(v)), "null or a non-empty path string"),
        "kind": (lambda v: v in ("layout", "tile"), "'layout' or 'tile'"),
        "folds": (lambda v: is_int(v) and (v == 0 or v >= 2), "an integer, 0 or at least 2"),
        "train_folds": (lambda v: is_int(v) and v >= 1, "an integer >= 1"),
        "keep": (lambda v: is_int(v) and v >= 1, "an integer >= 1"),
        "max_graphs": (lambda v: v is None or (is_int(v) and v >= 1), "null or an integer >= 1"),
        "config": (lambda v: isinstance(v, dict), "a JSON object (the training settings)"),
    }


def _config_fields() -> dict[str, tuple[Callable[[Any], bool], str]]:
    from graphcost.models.registry import model_names
    from graphcost.models.losses import LOSS_NAMES

    return {
        "model": (lambda v: v in model_names(), f"one of {', '.join(model_names())}"),
        "model_config": (lambda v: isinstance(v, dict), "a JSON object"),
        "loss": (lambda v: v in LOSS_NAMES, f"one of {', '.join(LOSS_NAMES)}"),
        "epochs": (lambda v: is_int(v) and v >= 1, "an integer >= 1"),
        "batch_configs": (lambda v: is_int(v) and v >= 2, "an integer >= 2"),
        "lr": (lambda v: is_number(v) and v > 0, "a finite number > 0"),
        "seed": (is_int, "an integer"),
        "eval_tta": (lambda v: is_int(v) and v >= 0, "an integer >= 0"),
    }


def check_run_info(data: Any, path: str | Path) -> dict:
    """`data` (run.json parsed) when it describes a run; RunInfoError naming `path` and the field otherwise."""
    from graphcost.models.registry import coerce_config

    path = Path(path)
    if not isinstance(data, dict):
        raise RunInfoError(f"{path}: expected a JSON object, got {type(data).__name__}")
    if "dataset" in data and "collection" not in data and "config" not in data:  # was "'collection' is missing"
        raise RunInfoError(f"{path}: this is a LayerDAG run (graphcost dag train, dataset {data['dataset']!r}), "
                           "not a cost-model run; use graphcost dag evaluate / dag sample on it")
    check_fields(data, _top_fields(), path)
    check_fields(data, {"seeds": (lambda v: is_int(v) and v >= 1, "an integer >= 1")}, path, required=False)
    config = data["config"]
    check_fields(config, _config_fields(), path, "config.")
    try:
        coerce_config(config["model"], config["model_config"])
    except ValueError as exc:
        raise RunInfoError(f"{path}: field 'config.model_config': {exc}") from None
    return data


def read_run_info(path: str | Path) -> dict:
    """The checked run.json behind `path` (`find_run_info_file`; {} when there is none); RunInfoError
    naming the file for one that cannot be read, is not JSON, or does not describe a run."""
    info = find_run_info_file(path)
    if info is None:
        return {}
    return check_run_info(read_run_json(info), info)
