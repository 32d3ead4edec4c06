"""Fixtures for the data-io tests: small valid TpuGraphs arrays and an npz writer."""

from pathlib import Path

import numpy as np
import pytest

from graphcost.data.synth.collection import synth_layout_graph, synth_tile_graph
from graphcost.data.io.validate import graph_arrays


@pytest.fixture(scope="session")
def layout_arrays() -> dict:
    """A small valid layout graph as npz-keyed arrays (synthetic)."""
    g = synth_layout_graph(num_nodes=80, num_configs=37, seed=5, config_fraction=0.15)
    return {k: np.asarray(v) for k, v in graph_arrays(g).items()}


@pytest.fixture(scope="session")
def tile_arrays() -> dict:
    """A small valid tile graph as npz-keyed arrays (synthetic)."""
    g = synth_tile_graph(num_nodes=20, num_configs=50, seed=2)
    return {k: np.asarray(v) for k, v in graph_arrays(g).items()}


@pytest.fixture
def write_npz(tmp_path):
    """write_npz(arrays, name="g.npz", compressed=False) -> Path of a real npz file."""

    def _write(arrays: dict, name: str = "g.npz", compressed: bool = False) -> Path:
        path = tmp_path / name
        (np.savez_compressed if compressed else np.savez)(path, **arrays)
        return path

    return _write
