"""The output guard (issue 36, `graphcost.guards.outputs`): no command writes into its own input, over a
device, on /proc or /sys, or over a run another live process holds."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from bad_runs import dag_cli
from cli_asserts import invoke, one_line_error

from graphcost.guards.atomic import atomic_write_text, lock_dir
from graphcost.guards.outputs import NotARegularFileError, OutputPathError, check_outside_inputs, check_writable_place

TRAIN_SMALL = ["--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "layout_dim=2",
               "--model-opt", "num_blocks=1", "--epochs", "1", "--batch-configs", "8", "--no-progress",
               "--device", "cpu"]  # fmt: skip


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _train(data_root, *extra):
    return invoke("train", "-c", "layout:xla:random", "--data-dir", data_root, *TRAIN_SMALL, *extra)


def test_train_overwrite_never_removes_a_run_another_process_holds(data_root, cost_copy):
    """Issue 36 item 1: a second `train --overwrite` into a live run was a silent delete."""
    before = _tree(cost_copy)
    with lock_dir(cost_copy):  # what a running `graphcost train --out RUN` holds now
        line = one_line_error(_train(data_root, "--out", cost_copy, "--overwrite"), "--out", cost_copy, "in use by")
        assert f"pid {os.getpid()}" in line
        one_line_error(_train(data_root, "--out", cost_copy, "--resume"), "--out", "in use by")
    after = _tree(cost_copy)
    after.pop(".graphcost.lock", None)
    before.pop(".graphcost.lock", None)
    assert after == before  # the live run is whole
    result = _train(data_root, "--out", cost_copy, "--overwrite")  # released: replaced as before
    assert result.exit_code == 0, result.output


def test_dag_train_overwrite_never_removes_a_run_another_process_holds(dag_run, tmp_path):
    run = Path(shutil.copytree(dag_run, tmp_path / "run"))
    before = (run / "checkpoint.pt").read_bytes()
    with lock_dir(run):
        one_line_error(dag_cli("train", "--dataset", "lp", "--num-graphs", "12", "--threads", "1", "--epochs", "1",
                               "--out", run, "--overwrite"), "--out", "in use by")  # fmt: skip
    assert (run / "checkpoint.pt").read_bytes() == before


def test_outputs_inside_the_training_data_are_refused(data_root, tmp_path):
    """Issue 36 item 1: `train --cache-dir DATA/.../train` wrote cache npz files into the split."""
    data = Path(shutil.copytree(data_root, tmp_path / "data"))
    before = _tree(data)
    split = next(data.rglob("train"))
    one_line_error(_train(data, "--cache-dir", split, "--out", tmp_path / "run"), "--cache-dir", "inside", "--data-dir")
    one_line_error(_train(data, "--out", data / "runs" / "x"), "--out", "inside the input --data-dir")
    assert _tree(data) == before and not (tmp_path / "run").exists()


def test_evaluate_and_predict_outputs_inside_inputs_are_refused(cost_copy, data_root, tmp_path):
    data = Path(shutil.copytree(data_root, tmp_path / "data"))
    run_before, data_before = _tree(cost_copy), _tree(data)
    one_line_error(invoke("evaluate", cost_copy, "--json", cost_copy / "run.json", "--overwrite", "--tta", "0",
                          "--device", "cpu"), "--json", "file of the input RUN")  # fmt: skip
    one_line_error(invoke("evaluate", cost_copy, "--data-dir", data, "--cache-dir", data / "cache", "--tta", "0",
                          "--device", "cpu"), "--cache-dir", "inside the input --data-dir")  # fmt: skip
    one_line_error(invoke("predict", cost_copy, "--out", cost_copy / "checkpoint.pt", "--overwrite", "--tta", "0",
                          "--device", "cpu"), "--out", "file of the input MODEL")  # fmt: skip
    assert _tree(cost_copy) == run_before and _tree(data) == data_before


def test_evaluate_json_to_a_device_leaves_the_device(cost_run):
    """Issue 36 item 1: `evaluate RUN --json /dev/full --overwrite` replaced the device with a file."""
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    one_line_error(invoke("evaluate", cost_run, "--json", "/dev/full", "--overwrite", "--tta", "0", "--device", "cpu"),
                   "--json", "/dev/full", "character device")  # fmt: skip
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_atomic_write_refuses_to_replace_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFileError, match="FIFO"):
        atomic_write_text(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and [p.name for p in tmp_path.iterdir()] == ["pipe"]


@pytest.mark.parametrize("option, args", [
    ("--out", ["train", "--out", "/proc/graphcost-x", "--epochs", "1"]),
    ("--data-dir", ["data", "download", "-c", "tile:xla", "--data-dir", "/proc/graphcost-x"]),
    ("--out", ["data", "synth", "-c", "tile:xla", "--out", "/sys/graphcost-x"]),
    ("--json", ["data", "stats", ".", "--json", "/proc/graphcost-x.json"]),
    ("--out", ["tune", "x.py:make", "--out", "/proc/graphcost-x"]),
    ("--out", ["collect", "--out", "/proc/graphcost-x"]),
    ("--out", ["dag", "train", "--dataset", "lp", "--out", "/proc/graphcost-x"]),
])  # fmt: skip
def test_outputs_on_virtual_file_systems_are_one_line(option, args):
    """Issue 36: `--out /proc/x` was a traceback (tune, collect, data download) or named no option (train)."""
    one_line_error(invoke(*args), option, "virtual file system")


def test_guard_functions(tmp_path):
    data = tmp_path / "data"
    (data / "train").mkdir(parents=True)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "best.pt").write_bytes(b"x")
    with pytest.raises(OutputPathError, match="inside the input --data-dir"):
        check_outside_inputs(data / "train" / "cache", "--cache-dir", data=[("--data-dir", data)])
    with pytest.raises(OutputPathError, match="inside the input"):  # through a symbolic link too
        (tmp_path / "alias").symlink_to(data)
        check_outside_inputs(tmp_path / "alias" / "c", "--cache-dir", data=[("--data-dir", data)])
    with pytest.raises(OutputPathError, match="file of the input RUN"):
        check_outside_inputs(tmp_path / "run" / "best.pt", "--json", files=[("RUN", tmp_path / "run")])
    check_outside_inputs(tmp_path / "run" / "report.json", "--json", files=[("RUN", tmp_path / "run")])  # a new file
    check_outside_inputs(tmp_path / "elsewhere", "--out", data=[("--data-dir", data), ("--x", None)])
    check_writable_place(tmp_path / "a" / "b", "--out")
    with pytest.raises(OutputPathError, match="--out /sys/x: lies on a virtual file system"):
        check_writable_place("/sys/x", "--out")
