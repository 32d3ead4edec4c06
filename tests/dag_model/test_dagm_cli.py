"""graphcost dag train / sample / evaluate end to end on a few LP graphs (synthetic)."""

import json

import numpy as np
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.dag.io import load_dags
from graphcost.dag.tokenise import tokenise


def test_dag_cli_train_sample_evaluate(tmp_path):
    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["dag", "train", "--dataset", "lp", "--num-graphs", "12", "--epochs", "1", "--threads", "1",
                                 "--out", str(run)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (run / "checkpoint.pt").is_file() and (run / "run.json").is_file()
    out = tmp_path / "samples.npz"
    r = CliRunner().invoke(app, ["dag", "sample", str(run), "-n", "3", "--tmax", "2", "--threads", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    dags = load_dags(out)
    assert len(dags) == 3 and out.with_suffix(".png").is_file()
    for d in dags:
        tokenise(d)  # acyclic
    js = tmp_path / "eval.json"
    r = CliRunner().invoke(app, ["dag", "evaluate", str(run), "--samples", str(out), "--json", str(js)])
    assert r.exit_code == 0, r.output
    res = json.loads(js.read_text())
    assert 0 <= res["validity"] <= 1 and set(res["mmd"]) >= {"in_degree", "layer_size"}
    assert "LP validity" in r.output and np.isfinite(res["uniqueness"])
    # bad inputs are clear errors
    r = CliRunner().invoke(app, ["dag", "sample", str(tmp_path / "nope"), "--out", str(out)])
    assert r.exit_code == 1 and "no such run directory" in r.output
    r = CliRunner().invoke(app, ["dag", "sample", str(run), "--tmax", "999", "--out", str(out)])
    assert r.exit_code == 1 and "exceeds" in r.output
