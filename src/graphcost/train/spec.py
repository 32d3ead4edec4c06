"""What a cost-model run is trained from (`RunSpec`): its data, its `TrainConfig`, folds and trees.
run.json is its JSON form (`to_json` / `from_json`); `graphcost train` builds one from its options, or
on --resume reads the interrupted run's back, and `contradiction` checks that options given on a
resume agree with what run.json recorded.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from graphcost.runs.run_json import RUN_INFO
from graphcost.train import recipe
from graphcost.train.trainer import TrainConfig


def recipe_config(**changes: Any) -> TrainConfig:
    """`graphcost train`'s defaults as a TrainConfig (`graphcost.train.recipe`: TGraph with the recipe's
    model options), with `changes`; batch_configs None: the collection's default (64, or 128 for :random)."""
    return dataclasses.replace(TrainConfig(model=recipe.MODEL, model_config=dict(recipe.MODEL_CONFIG),
                                           batch_configs=None), **changes)


@dataclass
class RunSpec:
    """A cost-model run: the data it trains on and the settings it trains with.

    data_dir None: the dataset shipped with graphcost; collection None: the one data_dir holds.
    folds 0: the official train/valid split, one model (+ trees and their blend when `trees`);
    folds >= 2: K-fold cross-validation by graph on train+valid, the first `train_folds` trained and the
    best `keep` ensembled (no trees). seeds n >= 2 (folds 0): n graph models from seeds seed ... seed + n - 1,
    averaged, the trees blended with their average (`graphcost.train.seeds`).
    """

    config: TrainConfig = field(default_factory=recipe_config)
    data_dir: Path | None = None
    collection: str | None = None
    max_graphs: int | None = None
    folds: int = 0
    train_folds: int = 5
    keep: int = 4
    seeds: int = 1
    trees: bool = recipe.TREES
    recorded_in: Path | None = None  # the run.json data_dir was read from, named in the messages about it

    def __post_init__(self) -> None:
        """Every field checked (`graphcost.train.checks.check_run_spec`): ArgumentError naming the first
        unusable one (``folds=2, train_folds=0`` returned best_score nan)."""
        from graphcost.train.checks import check_run_spec

        check_run_spec(self, TrainConfig)
        if self.data_dir is not None:  # a str from Python callers; a shipped dataset's bare name stays as given
            self.data_dir = Path(self.data_dir)

    def to_json(self, kind: str, data_dir: str | None, flag_columns: Sequence[str] | None = None) -> dict:
        """run.json of this run: `kind` of its graphs, `data_dir` as recorded (None: the shipped data;
        `graphcost.data.io.locate.recorded_data_dir`), the tile data's varied flags (what a tuner scores)."""
        info: dict[str, Any] = {
            "collection": self.collection, "data_dir": data_dir, "kind": kind, "folds": self.folds,
            "train_folds": self.train_folds, "keep": self.keep, "seeds": self.seeds, "max_graphs": self.max_graphs,
            "config": dataclasses.asdict(self.config), "trees": bool(self.trees and not self.folds),
        }  # fmt: skip
        if flag_columns is not None:
            info["flag_columns"] = list(flag_columns)
        return info

    @classmethod
    def from_json(cls, info: dict, run_dir: str | Path, **config_changes: Any) -> RunSpec:
        """The run recorded in `info` (the checked run.json of `run_dir`; `graphcost.inference.run_info`),
        with `config_changes` (what may differ on a resume: device, progress, checkpoint_every, ...)."""
        config = info["config"]
        data_dir = Path(info["data_dir"]) if info.get("data_dir") else None
        train = TrainConfig(
            model=config["model"], model_config=config["model_config"], loss=config["loss"], epochs=config["epochs"],
            batch_configs=config["batch_configs"], lr=config["lr"], seed=config["seed"], eval_tta=config["eval_tta"],
            patience=config.get("patience", 0),
            max_steps_per_graph=config.get("max_steps_per_graph", recipe.MAX_STEPS_PER_GRAPH),
        )  # fmt: skip
        return cls(
            config=dataclasses.replace(train, **config_changes), data_dir=data_dir, collection=info.get("collection"),
            max_graphs=info.get("max_graphs"), folds=info["folds"], train_folds=info["train_folds"], keep=info["keep"],
            seeds=info.get("seeds", 1),  # runs written before seed ensembles: one model
            trees=info.get("trees", False), recorded_in=Path(run_dir) / RUN_INFO if data_dir is not None else None,
        )  # fmt: skip

    def setting(self, key: str) -> Any:
        """A recorded setting by name: a field of the spec, else of its config."""
        return getattr(self, key) if key in self.__dataclass_fields__ else getattr(self.config, key)

# the options of `graphcost train` that run.json records: on --resume each must agree with it
RECORDED_OPTIONS = {
    "data_dir": "--data-dir", "collection": "--collection", "max_graphs": "--max-graphs", "folds": "--folds",
    "train_folds": "--train-folds", "keep": "--keep", "seeds": "--seeds", "model": "--model", "loss": "--loss",
    "epochs": "--epochs", "batch_configs": "--batch-configs", "lr": "--lr", "seed": "--seed", "eval_tta": "--eval-tta",
    "patience": "--patience", "trees": "--trees", "max_steps_per_graph": "--max-steps-per-graph",
}


def _same(key: str, recorded: Any, given: Any) -> bool:
    if key == "data_dir" and recorded is not None and given is not None:
        return Path(recorded).expanduser().resolve() == Path(given).expanduser().resolve()
    return recorded == given


def contradiction(recorded: RunSpec, given: RunSpec, options: set[str], where: str | Path,
                  model_opts: dict | None = None) -> str | None:
    """The first option given on the command line (`options`: RECORDED_OPTIONS keys) whose value
    contradicts the interrupted run's recorded setting, as one line naming the option, both values and
    the run.json (`where`); None when they agree. model_opts: the --model-opt KEY=VALUE given, checked
    against the recorded ``config.model_config``."""
    for key, option in RECORDED_OPTIONS.items():
        if key not in options:
            continue
        old, new = recorded.setting(key), given.setting(key)
        if key == "trees" and recorded.folds:  # a cross-validation run records no trees either way
            continue
        if not _same(key, old, new):
            shown = ("--trees" if new else "--no-trees") if key == "trees" else f"{option} {new}"
            return (f"--resume: {shown} contradicts the interrupted run's {key} {old} ({where}); drop {option} "
                    "to resume with the recorded settings, or train a new run into another --out")
    for key, new in (model_opts or {}).items():
        old = recorded.config.model_config.get(key, "(not set)")
        if old != new:
            return (f"--resume: --model-opt {key}={new} contradicts the interrupted run's model_config.{key} {old} "
                    f"({where}); drop it to resume with the recorded settings, or train a new run into another --out")
    return None
