"""train / dag train --resume: refused without a checkpoint to continue; a killed write's 0-byte
temp file is removed on resume (issue 19)."""

import pytest
from bad_runs import dag_cli, killed_write_leftover
from cli_asserts import invoke, one_line_error

RESUME = ["--resume", "--device", "cpu", "--no-progress"]


def test_train_resume_needs_a_checkpoint(cost_copy, tmp_path):
    (cost_copy / "checkpoint.pt").unlink()
    one_line_error(invoke("train", "--out", cost_copy, *RESUME), "--resume", cost_copy, "no checkpoint.pt")
    one_line_error(invoke("train", "--out", tmp_path / "never", *RESUME), "--resume", "does not exist")


def test_train_resume_and_overwrite_exclude_each_other(cost_copy):
    one_line_error(invoke("train", "--out", cost_copy, "--overwrite", *RESUME), "--resume", "--overwrite")


def test_train_resume_removes_a_killed_writes_temp_file(cost_copy):
    leftover = killed_write_leftover(cost_copy)
    unrelated = cost_copy / ".notes.tmp"  # not an atomic_write temp name: kept
    unrelated.write_text("mine")
    result = invoke("train", "--out", cost_copy, *RESUME)  # the run is finished: nothing left to train
    assert result.exit_code == 0, result.output
    assert not leftover.exists() and unrelated.exists()
    assert (cost_copy / "checkpoint.pt").stat().st_size > 0


def test_dag_train_resume_needs_a_checkpoint(dag_copy, tmp_path):
    (dag_copy / "checkpoint.pt").unlink()
    args = ["--dataset", "lp", "--num-graphs", "12", "--threads", "1", "--epochs", "1", "--resume"]
    one_line_error(dag_cli("train", *args, "--out", dag_copy), "--resume", "checkpoint.pt", "nothing to resume")
    one_line_error(dag_cli("train", *args, "--out", tmp_path / "never"), "--resume", "nothing to resume")


def test_dag_train_resume_removes_a_killed_writes_temp_file(dag_copy):
    leftover = killed_write_leftover(dag_copy)
    args = ["--dataset", "lp", "--num-graphs", "12", "--threads", "1", "--epochs", "1", "--resume"]
    result = dag_cli("train", *args, "--out", dag_copy)
    assert result.exit_code == 0, result.output
    assert not leftover.exists()


def test_train_resume_refuses_a_checkpoint_missing_an_entry(cost_copy):
    from bad_runs import edit_checkpoint

    edit_checkpoint(cost_copy / "checkpoint.pt", lambda state: state.pop("optimizer"))
    one_line_error(invoke("train", "--out", cost_copy, *RESUME), cost_copy / "checkpoint.pt", "'optimizer'")


def test_crossval_resume_refuses_a_damaged_done_json(cost_copy):
    import json

    from bad_runs import edit_json

    edit_json(cost_copy / "run.json", lambda info: info.update(folds=2, train_folds=1))
    (cost_copy / "checkpoint.pt").unlink()
    (cost_copy / "fold_00").mkdir()
    done = cost_copy / "fold_00" / "done.json"
    done.write_text(json.dumps({"best_score": "high"}))
    one_line_error(invoke("train", "--out", cost_copy, *RESUME), done, "'best_score'")


def test_dag_resume_refuses_a_checkpoint_missing_an_entry(dag_copy):
    from bad_runs import edit_checkpoint

    edit_checkpoint(dag_copy / "checkpoint.pt", lambda state: state.pop("optim"))
    args = ["--dataset", "lp", "--num-graphs", "12", "--threads", "1", "--epochs", "2", "--resume"]
    one_line_error(dag_cli("train", *args, "--out", dag_copy), dag_copy / "checkpoint.pt", "'optim'", "missing")


@pytest.mark.parametrize("given, names", [
    (["-c", "tile:xla"], ["--collection tile:xla", "collection layout:xla:random"]),
    (["--epochs", "3"], ["--epochs 3", "epochs 1"]),
    (["--seed", "7"], ["--seed 7", "seed 0"]),
    (["--batch-configs", "16"], ["--batch-configs 16", "batch_configs 8"]),
    (["--data-dir", "{tmp}/elsewhere"], ["--data-dir", "elsewhere", "data_dir"]),
    (["--model-opt", "hidden=7"], ["--model-opt hidden=7", "model_config.hidden"]),
])
def test_train_resume_refuses_options_that_contradict_run_json(cost_copy, tmp_path, given, names):
    """issue 36: `train --resume` with a --collection / --epochs (any setting run.json records) other
    than the interrupted run's silently trained on with the recorded ones."""
    before = (cost_copy / "checkpoint.pt").read_bytes()
    args = [a.format(tmp=tmp_path) for a in given]
    one_line_error(invoke("train", "--out", cost_copy, *args, *RESUME), "--resume", cost_copy / "run.json",
                   "drop", *names)
    assert (cost_copy / "checkpoint.pt").read_bytes() == before


def test_train_resume_accepts_options_that_agree_with_run_json(cost_copy, data_root):
    result = invoke("train", "--out", cost_copy, "-c", "layout:xla:random", "--data-dir", data_root, "--epochs", "1",
                    "--batch-configs", "8", *RESUME)
    assert result.exit_code == 0, result.output
