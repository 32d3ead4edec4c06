"""train / dag train --resume: refused without a checkpoint to continue; a killed write's 0-byte
temp file is removed on resume (issue 19)."""

from bad_runs import dag_cli, invoke, killed_write_leftover, one_line_error

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
