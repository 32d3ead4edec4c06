"""The settings of a `graphcost train` run: from its options or, on --resume, read back from the
interrupted run's run.json (`RunSettings.from_run_info`), and the check that options given on a
resume agree with what run.json recorded (`contradiction`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphcost.runs.run_info import RUN_INFO
from graphcost.train import recipe


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
