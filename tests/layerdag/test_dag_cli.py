"""graphcost dag train / sample / evaluate end to end on a few LP graphs (synthetic)."""

import json
import re

import numpy as np
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.layerdag.io import load_dags
from graphcost.layerdag.tokenise import tokenise


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
    r = CliRunner().invoke(app, ["dag", "sample", str(tmp_path / "nope"), "--out", str(tmp_path / "new.npz")])
    assert r.exit_code == 1 and "no such run directory" in r.output
    r = CliRunner().invoke(app, ["dag", "sample", str(run), "--tmax", "999", "--out", str(out), "--overwrite"])
    assert r.exit_code == 1 and "exceeds" in r.output


def test_evaluate_prints_the_surrogate_rows(capsys):
    from graphcost.commands.dag import _print_results

    surrogate = {"pearson_real": 0.8, "pearson_synthetic": 0.6, "ratio": 0.75, "pearson_real_by_seed": [0.79, 0.81],
                 "pearson_real_log": 0.9, "pearson_synthetic_log": 0.81, "ratio_log": 0.9, "label_fidelity": 0.7}  # fmt: skip
    _print_results({"num_generated": 3, "mean_nodes": 4.0, "real_mean_nodes": 5.0, "mean_edges": 3.0, "real_mean_edges": 4.0,
                    "uniqueness": 1.0, "novelty": 1.0, "mmd": {"in_degree": 0.01}, "surrogate": surrogate})  # fmt: skip
    out = capsys.readouterr().out
    assert re.search(r"surrogate fits averaged\s+2\n", out) and re.search(r"\nratio\s+0.750\n", out)
    assert re.search(r"on log labels: real / synthetic / ratio\s+0.900 / 0.810 / 0.900\n", out)
    assert re.search(r"label fidelity \(Pearson\)\s+0.700\n", out)


def test_dag_cli_cross_validation_fold(tmp_path):
    from graphcost.layerdag.datasets import load_dataset

    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["dag", "train", "--dataset", "lp", "--num-graphs", "12", "--epochs", "1", "--threads", "1",
                                 "--folds", "4", "--fold", "1", "--out", str(run)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "on 6 lp graphs" in r.output  # 4 parts of 3: train = the two parts that are neither test nor valid
    assert json.loads((run / "run.json").read_text())["fold"] == [1, 4]
    samples = tmp_path / "s.npz"
    assert CliRunner().invoke(app, ["dag", "sample", str(run), "-n", "2", "--tmax", "2", "--out", str(samples)]).exit_code == 0
    js = tmp_path / "eval.json"
    r = CliRunner().invoke(app, ["dag", "evaluate", str(run), "--samples", str(samples), "--json", str(js)])
    assert r.exit_code == 0, r.output
    test = load_dataset("lp", num_graphs=12, fold=(1, 4))["test"]
    assert json.loads(js.read_text())["real_mean_nodes"] == np.mean([d.num_nodes for d in test])  # evaluate used fold 1
    for args, msg in ((["--fold", "2"], "--fold 2 needs --folds K"), (["--folds", "4", "--fold", "4"], "--fold in 0..3"),
                      (["--folds", "2"], "--folds must be >= 3")):  # fmt: skip
        r = CliRunner().invoke(app, ["dag", "train", "--dataset", "lp", "--num-graphs", "12", "--out", str(tmp_path / "x"), *args])
        assert r.exit_code == 1 and msg in r.output, r.output
        assert not (tmp_path / "x").exists()
    for bad in ([1], [4, 4], [0, 2]):
        (run / "run.json").write_text(json.dumps({"dataset": "lp", "num_graphs": 12, "fold": bad}))
        r = CliRunner().invoke(app, ["dag", "evaluate", str(run), "--samples", str(samples)])
        assert r.exit_code == 1 and "run.json: field 'fold' must be null or [fold, folds]" in r.output, r.output
