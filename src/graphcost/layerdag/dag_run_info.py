"""run.json of a LayerDAG run (`graphcost dag train`): the fields it records and their check on load.

`dag train` writes it beside the checkpoints; `dag sample` reads the training labels from it and
`dag evaluate` the dataset, seed, graph count, fold and data directory, so it evaluates on the
split the model was trained on. Every field is optional (older runs lack some); one that is there
must be right, else one error names the file and the field:

    dataset       lp | tpu-tile | nasbench201
    seed          an integer
    num_graphs    null or an integer >= 1
    fold          null or [fold, folds]: two integers, folds >= 3, 0 <= fold < folds
    train_labels  a list of finite numbers
    data_dir      null or a directory path

The checks reuse those of the cost models' run.json (`graphcost.runs.run_json`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphcost.layerdag.datasets import DATASET_NAMES
from graphcost.runs.run_json import RUN_INFO, RunInfoError, check_fields, is_int, is_number

DAG_RUN_FIELDS = {  # run.json field: (check, what it must be); 'fold' is checked in read_dag_run_info
    "dataset": (lambda v: v in DATASET_NAMES, f"one of {', '.join(DATASET_NAMES)}"),
    "seed": (is_int, "an integer"),
    "num_graphs": (lambda v: v is None or (is_int(v) and v >= 1), "null or an integer >= 1"),
    "train_labels": (lambda v: isinstance(v, list) and all(is_number(x) for x in v), "a list of finite numbers"),
    "data_dir": (lambda v: v is None or isinstance(v, str), "null or a directory path"),
}


def _good_fold(fold: Any) -> bool:
    return fold is None or (isinstance(fold, list) and len(fold) == 2 and all(type(x) is int for x in fold)
                            and 0 <= fold[0] < fold[1] and fold[1] >= 3)  # fmt: skip


def read_dag_run_info(run: str | Path) -> dict:
    """The run.json beside `run` (a run directory, or a checkpoint file in one), checked; {} when
    there is none. RunInfoError naming the file (and the field) when it cannot be used."""
    run = Path(run)
    path = run / RUN_INFO if run.is_dir() else run.parent / RUN_INFO
    if not path.is_file():
        return {}
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RunInfoError(f"{path}: not a readable run description ({exc})") from None
    except RecursionError:
        raise RunInfoError(f"{path}: not a readable run description (JSON nested too deeply)") from None
    if not isinstance(info, dict):
        raise RunInfoError(f"{path}: not a run description (expected a JSON object)")
    check_fields(info, DAG_RUN_FIELDS, path, required=False)
    if not _good_fold(info.get("fold")):
        raise RunInfoError(f"{path}: field 'fold' must be null or [fold, folds] (two integers, folds >= 3, "
                           f"0 <= fold < folds), got {info.get('fold')!r}")
    return info
