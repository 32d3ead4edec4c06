"""Generators of damaged run directories, checkpoints and outputs (issue 19), and the CLI helpers
the tests share. Each generator takes a good path and breaks one thing in place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import torch
from cli_asserts import invoke


def dag_cli(*args):
    return invoke("dag", *args)


def run_cli(*args, code: int = 0):
    result = invoke(*args)
    assert result.exit_code == code, (result.output, repr(result.exception))
    return result


# --- run.json -------------------------------------------------------------------------------------
def edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    """Rewrite the JSON file at `path` with `change(data)` (which may mutate and return None)."""
    data = json.loads(path.read_text())
    out = change(data)
    path.write_text(json.dumps(data if out is None else out))


def _set(keys: str, value):
    """A change setting run.json field `keys` ('config.epochs') to `value`."""

    def change(data):
        *parents, last = keys.split(".")
        for key in parents:
            data = data[key]
        data[last] = value

    return change


def _drop(key: str):
    def change(data):
        del data[key]

    return change


# (case id, change, field named in the error)
RUN_JSON_CASES = [
    ("missing-config", _drop("config"), "'config' is missing"),
    ("string-config", _set("config", "tgraph"), "'config' must be a JSON object"),
    ("string-folds", _set("folds", "2"), "'folds'"),
    ("folds-one", _set("folds", 1), "'folds'"),
    ("seeds-zero", _set("seeds", 0), "'seeds'"),
    ("string-epochs", _set("config.epochs", "3"), "'config.epochs'"),
    ("bool-seed", _set("config.seed", True), "'config.seed'"),
    ("numeric-data-dir", _set("data_dir", 5), "'data_dir'"),
    ("unknown-collection", _set("collection", "tile:tpu"), "'collection'"),
    ("unknown-model", _set("config.model", "nope"), "'config.model'"),
    ("bad-model-config", _set("config.model_config", {"hidden": "abc"}), "'config.model_config'"),
    ("nan-lr", _set("config.lr", float("nan")), "'config.lr'"),
    ("missing-train-folds", _drop("train_folds"), "'train_folds' is missing"),
    ("not-an-object", lambda data: [data], "expected a JSON object"),
]

# dag run.json: (case id, change, field named in the error)
DAG_RUN_JSON_CASES = [
    ("string-train-labels", _set("train_labels", "1,2"), "'train_labels'"),
    ("nan-train-label", _set("train_labels", [1.0, float("nan")]), "'train_labels'"),
    ("string-seed", _set("seed", "0"), "'seed'"),
    ("negative-num-graphs", _set("num_graphs", -3), "'num_graphs'"),
    ("unknown-dataset", _set("dataset", "imagenet"), "'dataset'"),
    ("numeric-data-dir", _set("data_dir", 5), "'data_dir'"),
]


# --- checkpoints ----------------------------------------------------------------------------------
def edit_checkpoint(path: Path, change: Callable[[dict], None]) -> None:
    """Load a checkpoint (weights only), apply `change` to its dict and save it back."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    change(state)
    torch.save(state, path)


def _spec_name(state):
    state["model_spec"]["name"] = "nope"


def _spec_config(state):
    state["model_spec"]["config"] = {"no_such_field": 1}


def _spec_string(state):
    state["model_spec"] = "tgraph"


def _no_scaler(state):
    del state["scaler"]


def _bad_scaler(state):
    state["scaler"] = {"version": 1}


def _wrong_shape(state):
    key = next(k for k, v in state["model"].items() if v.ndim == 2)
    state["model"][key] = torch.zeros(3, 3)


def _model_not_dict(state):
    state["model"] = [1, 2, 3]


# (case id, change, words in the error beside the file name)
CHECKPOINT_CASES = [
    ("unknown-model", _spec_name, "key 'model_spec'"),
    ("unknown-config-field", _spec_config, "key 'model_spec'"),
    ("spec-not-dict", _spec_string, "key 'model_spec'"),
    ("missing-scaler", _no_scaler, "key 'scaler'"),
    ("bad-scaler", _bad_scaler, "key 'scaler'"),
    ("wrong-weight-shape", _wrong_shape, "weights do not match"),
    ("weights-not-dict", _model_not_dict, "weights do not match"),
]


def _dag_config_field(state):
    state["model_config"]["no_such_field"] = 1


def _dag_config_type(state):
    state["model_config"]["dim"] = "wide"


def _dag_heads(state):
    state["model_config"]["heads"] = 5  # does not divide dim 96


def _dag_config_not_dict(state):
    state["model_config"] = "small"


def _dag_wrong_shape(state):
    key = next(k for k, v in state["model"].items() if v.ndim == 2)
    state["model"][key] = torch.zeros(2, 2)


def _dag_missing_weight(state):
    state["model"].pop(next(iter(state["model"])))


DAG_CHECKPOINT_CASES = [
    ("unknown-config-field", _dag_config_field, "key 'model_config'"),
    ("config-wrong-type", _dag_config_type, "key 'model_config'"),
    ("config-not-dict", _dag_config_not_dict, "key 'model_config'"),
    ("heads-not-dividing-dim", _dag_heads, "key 'model_config'"),
    ("wrong-weight-shape", _dag_wrong_shape, "key 'model'"),
    ("missing-weight", _dag_missing_weight, "key 'model'"),
]


def killed_write_leftover(directory: Path, name: str = "checkpoint.pt") -> Path:
    """The 0-byte temp file that `atomic_write` leaves when its process is killed mid-write."""
    leftover = directory / f".{name}.k9x2ab_Q.tmp"
    leftover.write_bytes(b"")
    return leftover
