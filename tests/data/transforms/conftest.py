"""Fixtures for the data-prep tests: small hand-made TpuGraphs records (graph.py dataclasses)."""

from __future__ import annotations

import numpy as np
import pytest

from graphcost.data.graph import LayoutGraph, TileGraph


def make_node_feat(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 140) float32 like TpuGraphs: random ranks, 0-padded dims and minor_to_major."""
    feat = rng.normal(size=(n, 140)).astype(np.float32) * 10
    feat[:, 21:27] = 0
    feat[:, 134:140] = 0
    for i in range(n):
        r = int(rng.integers(0, 7))
        feat[i, 21 : 21 + r] = rng.integers(1, 64, size=r)
        feat[i, 134 : 134 + r] = rng.permutation(r)
    return feat


def make_layout_graph(
    rng: np.random.Generator, n: int = 30, c: int = 5, k: int = 40, n_distinct: int | None = None, path=None
) -> LayoutGraph:
    """A random DAG (topological ids, row [u, v]: u consumes v, v < u) with c configurable nodes.

    If n_distinct is given, configurations are drawn from that many distinct ones (duplicates).
    """
    edges = []
    for u in range(1, n):
        for v in rng.choice(u, size=min(u, int(rng.integers(1, 3))), replace=False):
            edges.append((u, int(v)))
    config_ids = np.sort(rng.choice(n, size=c, replace=False)).astype(np.int64)
    pool = rng.integers(-1, 6, size=(n_distinct or k, c, 18)).astype(np.float32)
    pick = rng.integers(0, pool.shape[0], size=k) if n_distinct else np.arange(k)
    return LayoutGraph(
        path=path,
        node_feat=make_node_feat(rng, n),
        node_opcode=rng.integers(0, 120, size=n).astype(np.uint8),
        edge_index=np.asarray(edges, dtype=np.int64).reshape(-1, 2),
        node_config_ids=config_ids,
        node_config_feat=pool[pick],
        config_runtime=rng.integers(1_000, 100_000, size=k).astype(np.int64),
    )


def make_tile_graph(rng: np.random.Generator, n: int = 12, k: int = 30, path=None) -> TileGraph:
    edges = [(u, u - 1) for u in range(1, n)]
    distinct = rng.integers(0, 9, size=(k // 2 + 1, 24)).astype(np.float32)
    return TileGraph(
        path=path,
        node_feat=make_node_feat(rng, n),
        node_opcode=rng.integers(0, 120, size=n).astype(np.uint8),
        edge_index=np.asarray(edges, dtype=np.int64),
        config_feat=distinct[rng.integers(0, distinct.shape[0], size=k)],
        config_runtime=rng.integers(1_000, 100_000, size=k).astype(np.int64),
        config_runtime_normalizers=rng.integers(1_000, 2_000, size=k).astype(np.int64),
    )


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture
def layout_graph(rng) -> LayoutGraph:
    return make_layout_graph(rng, n=40, c=6, k=60, n_distinct=15)


@pytest.fixture
def tile_graph(rng) -> TileGraph:
    return make_tile_graph(rng)


@pytest.fixture
def layout_factory():
    """The `make_layout_graph` builder, for tests that need several graphs."""
    return make_layout_graph
