"""LayerDAG's real datasets outside a checkout: --data-dir, $GRAPHCOST_DAG_DATA, the run's recorded
directory, and an error that says where to get the files."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.layerdag.datasets import load_dataset, locate


@pytest.fixture()
def installed(monkeypatch):
    """As an installed graphcost: no checkout beside it, no environment variable."""
    monkeypatch.setattr(locate, "checkout_data", lambda: None)
    monkeypatch.delenv(locate.ENV, raising=False)
    monkeypatch.delenv(locate.TEST_ENV, raising=False)


@pytest.fixture()
def data_dir(tmp_path, shared_data):
    root = tmp_path / "dag-data"
    (root / "tpu_tile_graphs").mkdir(parents=True)
    (root / "tpu_tile_graphs" / "val.npz").symlink_to(shared_data / "tpu_tile_graphs" / "val.npz")
    return root


def test_checkout_layout_is_found_only_in_a_checkout():
    found = locate.checkout_data()
    assert found is not None and found.name == "data" and found.parent.name == "shared"  # tests run from a checkout


@pytest.mark.parametrize("name, what", [("tpu-tile", "tpu_tile_graphs/val.npz"), ("nasbench201", "archs.txt")])
def test_installed_without_data_says_where_to_get_it(installed, name, what):
    with pytest.raises(FileNotFoundError) as err:
        load_dataset(name)
    message = str(err.value)
    assert "\n" not in message and "--data-dir" in message and locate.ENV in message
    assert "docs/layerdag.md" in message and what in message and "--dataset lp needs no files" in message


def test_data_dir_and_environment_variable(installed, data_dir, monkeypatch):
    assert len(load_dataset("tpu-tile", data_dir=data_dir)["train"]) > 400
    monkeypatch.setenv(locate.ENV, str(data_dir))
    assert locate.dag_data_dir() == data_dir and len(load_dataset("tpu-tile")["test"]) > 40
    assert locate.dag_data_dir(data_dir / "elsewhere") == data_dir / "elsewhere"  # --data-dir wins


def test_dag_evaluate_data_dir_option_and_recorded_directory(installed, data_dir, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"dataset": "tpu-tile", "seed": 0}))
    samples = data_dir / "tpu_tile_graphs" / "val.npz"
    cli = CliRunner()
    r = cli.invoke(app, ["dag", "evaluate", str(run), "--samples", str(samples)])
    assert r.exit_code == 1 and "error: tpu-tile DAGs not found" in r.output and "--data-dir" in r.output
    r = cli.invoke(app, ["dag", "evaluate", str(run), "--samples", str(samples), "--data-dir", str(data_dir)])
    assert r.exit_code == 0, r.output
    (run / "run.json").write_text(json.dumps({"dataset": "tpu-tile", "seed": 0, "data_dir": str(data_dir)}))
    r = cli.invoke(app, ["dag", "evaluate", str(run), "--samples", str(samples)])  # the run's directory
    assert r.exit_code == 0, r.output
    r = cli.invoke(app, ["dag", "evaluate", str(run), "--samples", str(samples), "--data-dir", str(tmp_path / "none")])
    assert r.exit_code == 1 and f"not found at {tmp_path / 'none'}" in r.output  # the option wins over run.json
