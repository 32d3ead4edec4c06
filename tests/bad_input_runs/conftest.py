"""Fixtures for the adversarial run-directory / checkpoint / output-safety tests (issue 19).

One tiny cost-model run and one tiny LayerDAG run per session; every test copies what it breaks
into its own tmp_path, so the originals stay intact.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from bad_runs import dag_cli, run_cli

torch.set_num_threads(1)  # tiny tensors on 2 shared cores

SMALL = ["--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "layout_dim=2",
         "--model-opt", "num_blocks=1"]  # fmt: skip


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    """A tiny SYNTHETIC layout:xla:random collection (5 graphs, split 3/1/1)."""
    from graphcost.data.synth.collection import write_synthetic_collection

    root = tmp_path_factory.mktemp("synthetic")
    write_synthetic_collection(root, "layout:xla:random", num_graphs=5, seed=3, split_fractions=(0.6, 0.2, 0.2),
                               max_nodes=20, max_configs=16, progress=False)  # fmt: skip
    return root


@pytest.fixture(scope="session")
def cost_run(tmp_path_factory, data_root) -> Path:
    """A finished 1-epoch TGraph run directory (run.json, checkpoint.pt, best.pt)."""
    run = tmp_path_factory.mktemp("cost") / "run"
    run_cli("train", "-c", "layout:xla:random", "--data-dir", data_root, *SMALL, "--epochs", "1",
            "--batch-configs", "8", "--out", run, "--no-progress", "--device", "cpu", code=0)  # fmt: skip
    return run


@pytest.fixture
def cost_copy(tmp_path, cost_run) -> Path:
    """A private copy of `cost_run` to damage."""
    return Path(shutil.copytree(cost_run, tmp_path / "run"))


@pytest.fixture(scope="session")
def dag_run(tmp_path_factory) -> Path:
    """A finished 1-epoch LayerDAG run on 12 LP graphs."""
    run = tmp_path_factory.mktemp("dag") / "run"
    result = dag_cli("train", "--dataset", "lp", "--num-graphs", "12", "--threads", "1", "--epochs", "1", "--out", run)
    assert result.exit_code == 0, result.output
    return run


@pytest.fixture
def dag_copy(tmp_path, dag_run) -> Path:
    return Path(shutil.copytree(dag_run, tmp_path / "dagrun"))

