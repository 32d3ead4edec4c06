"""`dag train` writes metrics.csv like `graphcost train` (graphcost.runs.metrics_log), also on resume."""

import csv
import sys

import pytest
from dag_fixtures import TINY, tiny_dags

from graphcost.layerdag.train import LayerDAGTrainConfig, train_layerdag


def test_dag_train_writes_metrics_csv_and_resumes_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # CSV only (TensorBoard: tests/train/test_metrics_log.py)
    train, valid = tiny_dags(4, seed=0), tiny_dags(2, seed=1)
    run = tmp_path / "run"
    train_layerdag(train, run, LayerDAGTrainConfig(device="cpu", epochs=1, batch_size=4), valid_dags=valid, progress=False, **TINY)
    _, hist = train_layerdag(train, run, LayerDAGTrainConfig(device="cpu", epochs=2, batch_size=4), valid_dags=valid,
                             resume=True, progress=False, **TINY)  # fmt: skip
    with open(run / "metrics.csv", newline="") as f:
        got = list(csv.DictReader(f))
    assert [r["epoch"] for r in got] == ["1", "2"] and len(hist) == 2
    assert {"seconds", "train_loss", "valid_loss"} <= set(got[0])
    assert [float(r["train_loss"]) for r in got] == pytest.approx([h["train_loss"] for h in hist])
