"""Fixtures for the LayerDAG model tests: the real TPU Tile DAGs and random DAGs."""

from __future__ import annotations

import numpy as np
import pytest

from graphcost.layerdag.dag_record import DAG


def load_flat(path) -> list[DAG]:
    """Read the flat npz directly (independent of graphcost.layerdag.io)."""
    with np.load(path, allow_pickle=False) as d:
        no, eo, cat, src, dst, y = (d[k] for k in ("node_offsets", "edge_offsets", "node_cat", "src", "dst", "y"))
    return [
        DAG(cat[no[g] : no[g + 1]].astype(np.int64), src[eo[g] : eo[g + 1]].astype(np.int64),
            dst[eo[g] : eo[g + 1]].astype(np.int64), float(y[g]))
        for g in range(len(no) - 1)
    ]  # fmt: skip


@pytest.fixture(scope="session")
def tpu_dags(shared_data) -> list[DAG]:
    return load_flat(shared_data / "tpu_tile_graphs" / "val.npz")


