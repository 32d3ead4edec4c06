"""A LayerDAG run given where a cost-model run is expected (issue 36): one line saying what it is and
which command reads it, not "field 'collection' is missing"."""

from __future__ import annotations

import pytest
from cli_asserts import invoke, one_line_error


@pytest.mark.parametrize("target", ["run", "checkpoint.pt"])
def test_evaluate_of_a_layerdag_run_points_to_dag_evaluate(dag_copy, target):
    path = dag_copy if target == "run" else dag_copy / target
    line = one_line_error(invoke("evaluate", path, "--device", "cpu"), dag_copy / "run.json", "LayerDAG run",
                          "graphcost dag evaluate")
    assert "'collection' is missing" not in line
