"""`dag evaluate --samples` on a small but hostile samples file (issue 19, memory): a deep chain and
many graphs take memory linear in the file, and the output names the MMD kernel."""

import json
import tracemalloc

import numpy as np
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.layerdag.datasets import load_dataset
from graphcost.layerdag.experiment import describe_samples
from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.io import load_dags, save_dags


def chain(n):
    return DAG(np.zeros(n, np.int64), np.arange(n - 1), np.arange(1, n))


def test_deep_and_many_graph_samples_run_in_bounded_memory(tmp_path):
    samples = save_dags([chain(2000)] + [chain(2 + i % 30) for i in range(150)], tmp_path / "hostile.npz")
    splits = load_dataset("lp", seed=0, num_graphs=12)
    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    try:
        res = describe_samples(load_dags(samples), splits, "lp")  # what `dag evaluate --samples` runs
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # before: np.eye(2001) (32 MB) for the deep graph and 151^2 x 2001 float64 (365 MB) in the MMD
    assert peak < 16 * 2**20, peak
    assert res["mmd_kernel"].startswith("gaussian_emd") and res["mmd_graphs"]["generated"] == 151
    assert all(0 <= v < 2 for v in res["mmd"].values())

    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"dataset": "lp", "num_graphs": 12, "seed": 0}))
    r = CliRunner().invoke(app, ["dag", "evaluate", str(run), "--samples", str(samples), "--json", str(tmp_path / "e.json")])
    assert r.exit_code == 0, r.output
    assert "MMD^2 vs real test set (gaussian_emd(sigma=1, unit bin spacing)):" in r.output
    assert json.loads((tmp_path / "e.json").read_text())["mmd"] == res["mmd"]


def test_the_printed_heading_says_when_the_mmd_was_subsampled(capsys):
    from graphcost.commands.dag import _print_results

    res = {"num_generated": 8000, "mean_nodes": 4.0, "real_mean_nodes": 5.0, "mean_edges": 3.0, "real_mean_edges": 4.0,
           "uniqueness": 1.0, "novelty": 1.0, "mmd": {"in_degree": 0.01}, "mmd_kernel": "gaussian_emd(sigma=1, unit bin spacing)",
           "mmd_graphs": {"generated": 2048, "real": 30, "of_generated": 8000, "of_real": 30, "max": 2048}}  # fmt: skip
    _print_results(res)
    assert "seeded subsample of at most 2048 per side: 2048 of 8000 generated, 30 of 30 real graphs" in capsys.readouterr().out
