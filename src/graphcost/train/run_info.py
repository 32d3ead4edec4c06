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

`read_run_info` finds and checks the run.json behind a run directory, a checkpoint or a fold;
`RunSettings` are the settings a run trains with, from the options or, on --resume, from run.json.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from graphcost.errors import GraphcostError
from graphcost.train import recipe

RUN_INFO = "run.json"


class RunInfoError(GraphcostError, ValueError):
    """A run.json that cannot describe a run; the message names the file and the field."""


def is_int(v: Any) -> bool:
    """An integer, not a bool (JSON's true/false load as bools)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    """A finite int or float, not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


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
    from graphcost.models.registry import MODEL_NAMES
    from graphcost.train.losses import LOSS_NAMES

    return {
        "model": (lambda v: v in MODEL_NAMES, f"one of {', '.join(MODEL_NAMES)}"),
        "model_config": (lambda v: isinstance(v, dict), "a JSON object"),
        "loss": (lambda v: v in LOSS_NAMES, f"one of {', '.join(LOSS_NAMES)}"),
        "epochs": (lambda v: is_int(v) and v >= 1, "an integer >= 1"),
        "batch_configs": (lambda v: is_int(v) and v >= 2, "an integer >= 2"),
        "lr": (lambda v: is_number(v) and v > 0, "a finite number > 0"),
        "seed": (is_int, "an integer"),
        "eval_tta": (lambda v: is_int(v) and v >= 0, "an integer >= 0"),
    }


def check_fields(data: dict, fields: dict, path: Path, prefix: str = "", required: bool = True) -> None:
    """RunInfoError naming `path` and the first field of `fields` ({name: (check, what it must be)})
    that `data` lacks (when `required`) or holds a wrong value in."""
    for key, (ok, expected) in fields.items():
        if key not in data:
            if not required:
                continue
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
    if "dataset" in data and "collection" not in data and "config" not in data:  # issue 36: was "'collection' is missing"
        raise RunInfoError(f"{path}: this is a LayerDAG run (graphcost dag train, dataset {data['dataset']!r}), "
                           "not a cost-model run; use graphcost dag evaluate / dag sample on it")
    check_fields(data, _top_fields(), path)
    config = data["config"]
    check_fields(config, _config_fields(), path, "config.")
    try:
        coerce_config(config["model"], config["model_config"])
    except ValueError as exc:
        raise RunInfoError(f"{path}: field 'config.model_config': {exc}") from None
    return data


def find_run_info_file(path: str | Path) -> Path | None:
    """The run.json of a run directory, of the run owning a checkpoint file, or of a fold's parent
    run (up to three levels up); None when there is none."""
    path = Path(path)
    candidates = [path] if path.is_dir() else []
    candidates += list(path.parents)[:3]
    for directory in candidates:
        info = directory / RUN_INFO
        if info.is_file():
            return info
    return None


def read_run_info(path: str | Path) -> dict:
    """The checked run.json behind `path` (`find_run_info_file`; {} when there is none); RunInfoError
    naming the file for one that cannot be read, is not JSON, or does not describe a run."""
    info = find_run_info_file(path)
    if info is None:
        return {}
    try:
        data = json.loads(info.read_text())
    except json.JSONDecodeError as exc:
        raise RunInfoError(f"{info}: invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunInfoError(f"{info}: cannot read ({exc})") from None
    except RecursionError:
        raise RunInfoError(f"{info}: invalid JSON (nested too deeply to be a run description)") from None
    return check_run_info(data, info)


@dataclass
class RunSettings:
    """The data and training settings of a `graphcost train` run: its options, or on --resume the
    interrupted run's, read back from its run.json (`from_run_info`)."""

    data_dir: Path | None
    collection: str | None
    max_graphs: int | None
    folds: int
    train_folds: int
    keep: int
    model: str
    model_opt: list[str]  # --model-opt KEY=VALUE
    loss: str
    epochs: int
    batch_configs: int | None  # None: the collection's default
    lr: float
    seed: int
    eval_tta: int
    patience: int
    trees: bool
    max_steps_per_graph: int
    model_config: dict | None = None  # recorded in run.json (resume); None: built from model_opt
    recorded_in: Path | None = None  # the run.json that data_dir comes from, for the messages about it

    @classmethod
    def from_run_info(cls, info: dict, run_dir: str | Path) -> RunSettings:
        """The settings recorded in `info` (the checked run.json of `run_dir`)."""
        config = info["config"]
        data_dir = Path(info["data_dir"]) if info.get("data_dir") else None
        return cls(
            data_dir=data_dir, collection=info.get("collection"), max_graphs=info.get("max_graphs"),
            folds=info["folds"], train_folds=info["train_folds"], keep=info["keep"],
            model=config["model"], model_opt=[], loss=config["loss"], epochs=config["epochs"],
            batch_configs=config["batch_configs"], lr=config["lr"], seed=config["seed"], eval_tta=config["eval_tta"],
            patience=config.get("patience", 0), trees=info.get("trees", False),
            max_steps_per_graph=config.get("max_steps_per_graph", recipe.MAX_STEPS_PER_GRAPH),
            model_config=config["model_config"], recorded_in=Path(run_dir) / RUN_INFO if data_dir is not None else None,
        )  # fmt: skip


# the options of `graphcost train` that run.json records: on --resume each must agree with it (issue 36)
RECORDED_OPTIONS = {
    "data_dir": "--data-dir", "collection": "--collection", "max_graphs": "--max-graphs", "folds": "--folds",
    "train_folds": "--train-folds", "keep": "--keep", "model": "--model", "loss": "--loss", "epochs": "--epochs",
    "batch_configs": "--batch-configs", "lr": "--lr", "seed": "--seed", "eval_tta": "--eval-tta",
    "patience": "--patience", "trees": "--trees", "max_steps_per_graph": "--max-steps-per-graph",
}


def _same(key: str, recorded: Any, given: Any) -> bool:
    if key == "data_dir" and recorded is not None and given is not None:
        return Path(recorded).expanduser().resolve() == Path(given).expanduser().resolve()
    return recorded == given


def contradiction(recorded: RunSettings, given: RunSettings, options: set[str], where: str | Path,
                  model_opts: dict | None = None) -> str | None:
    """The first option given on the command line (`options`: RunSettings field names) whose value
    contradicts the interrupted run's recorded setting, as one line naming the option, both values and
    the run.json (`where`); None when they agree. model_opts: the --model-opt KEY=VALUE given, checked
    against the recorded ``config.model_config``."""
    for key, option in RECORDED_OPTIONS.items():
        if key not in options:
            continue
        old, new = getattr(recorded, key), getattr(given, key)
        if key == "trees" and recorded.folds:  # a cross-validation run records no trees either way
            continue
        if not _same(key, old, new):
            shown = ("--trees" if new else "--no-trees") if key == "trees" else f"{option} {new}"
            return (f"--resume: {shown} contradicts the interrupted run's {key} {old} ({where}); drop {option} "
                    "to resume with the recorded settings, or train a new run into another --out")
    for key, new in (model_opts or {}).items():
        old = (recorded.model_config or {}).get(key, "(not set)")
        if old != new:
            return (f"--resume: --model-opt {key}={new} contradicts the interrupted run's model_config.{key} {old} "
                    f"({where}); drop it to resume with the recorded settings, or train a new run into another --out")
    return None
