"""LayerDAG run directories: a damaged run.json or checkpoint gives a one-line `error:` naming the
file and the field / key, exit code 1, for `dag sample` and `dag evaluate` (issue 19)."""

import pytest
from bad_runs import (
    DAG_CHECKPOINT_CASES,
    DAG_RUN_JSON_CASES,
    dag_cli,
    edit_checkpoint,
    edit_json,
)
from cli_asserts import one_line_error


@pytest.mark.parametrize("case, change, field", DAG_RUN_JSON_CASES, ids=[c[0] for c in DAG_RUN_JSON_CASES])
def test_dag_evaluate_refuses_a_bad_run_json(dag_copy, case, change, field):
    edit_json(dag_copy / "run.json", change)
    one_line_error(dag_cli("evaluate", dag_copy, "--threads", "1"), dag_copy / "run.json", field)


@pytest.mark.parametrize("case, change, key", DAG_CHECKPOINT_CASES, ids=[c[0] for c in DAG_CHECKPOINT_CASES])
def test_dag_sample_refuses_a_bad_checkpoint(dag_copy, tmp_path, case, change, key):
    ckpt = dag_copy / "checkpoint.pt"
    edit_checkpoint(ckpt, change)
    result = dag_cli("sample", ckpt, "-n", "1", "--tmax", "1", "--threads", "1", "--out", tmp_path / "s.npz")
    one_line_error(result, ckpt, key)
    assert not (tmp_path / "s.npz").exists()


def test_dag_resume_refuses_a_checkpoint_with_bad_weights(dag_copy):
    edit_checkpoint(dag_copy / "checkpoint.pt", DAG_CHECKPOINT_CASES[-1][1])  # a weight missing
    result = dag_cli("train", "--dataset", "lp", "--num-graphs", "12", "--threads", "1", "--epochs", "2", "--resume",
                     "--out", dag_copy)  # fmt: skip
    one_line_error(result, dag_copy / "checkpoint.pt", "key 'model'")


def test_dag_evaluate_refuses_a_run_json_nested_50000_deep(dag_copy):
    """issue 26: a run.json nested 50,000 deep raised RecursionError."""
    (dag_copy / "run.json").write_text('{"a":' * 50_000 + "1" + "}" * 50_000)
    one_line_error(dag_cli("evaluate", dag_copy, "--threads", "1"), dag_copy / "run.json", "nested too deeply")
