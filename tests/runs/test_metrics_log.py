"""metrics.csv and TensorBoard scalars (the `tensorboard` extra) for `train` and `dag train`,
through one module, `graphcost.runs.metrics_log` (issue 20 part 1)."""

import csv
import sys
import types

import pytest

from graphcost.runs import metrics_log
from graphcost.runs.metrics_log import MetricsLog, tensorboard_available


class FakeWriter:
    """Stands in for torch.utils.tensorboard.SummaryWriter: records what it is given."""

    made: list = []

    def __init__(self, log_dir, purge_step=None):
        self.log_dir, self.purge_step, self.scalars, self.closed = log_dir, purge_step, [], False
        FakeWriter.made.append(self)

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))

    def flush(self):
        pass

    def close(self):
        self.closed = True


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_metrics_csv_and_tensorboard_scalars(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", types.SimpleNamespace(SummaryWriter=FakeWriter))
    FakeWriter.made = []
    log = MetricsLog(tmp_path, start_epoch=2)  # resuming after 2 epochs
    history = [{"epoch": 3, "train_loss": 0.5}]
    log.log(history)
    history.append({"epoch": 4, "train_loss": 0.25, "valid_kendall_tau": 0.7, "note": "text"})
    log.log(history)
    log.close()
    (writer,) = FakeWriter.made
    assert writer.log_dir == str(tmp_path / "tensorboard") and writer.purge_step == 3 and writer.closed
    assert writer.scalars == [("train_loss", 0.5, 3), ("train_loss", 0.25, 4), ("valid_kendall_tau", 0.7, 4)]
    assert rows(tmp_path / "metrics.csv") == [
        {"epoch": "3", "train_loss": "0.5", "valid_kendall_tau": "", "note": ""},
        {"epoch": "4", "train_loss": "0.25", "valid_kendall_tau": "0.7", "note": "text"},
    ]


def test_without_the_tensorboard_extra_only_the_csv_is_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # `import` raises ImportError
    assert not tensorboard_available()
    log = MetricsLog(tmp_path)
    log.log([{"epoch": 1, "train_loss": 1.0}])
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.csv"]
    with pytest.raises(ImportError):
        MetricsLog(tmp_path, tensorboard=True)  # asked for explicitly: not silently dropped


def test_real_tensorboard_writes_event_files(tmp_path):
    pytest.importorskip("tensorboard", reason="the tensorboard extra: pip install 'graphcost[tensorboard]'")
    assert tensorboard_available()
    log = MetricsLog(tmp_path)
    log.log([{"epoch": 1, "train_loss": 1.0}])
    log.close()
    assert list((tmp_path / metrics_log.TENSORBOARD_DIR).glob("events.out.tfevents.*"))
