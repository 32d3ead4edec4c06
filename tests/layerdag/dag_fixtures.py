"""Helpers for the LayerDAG model tests (a module name no other test directory uses)."""

from __future__ import annotations

import numpy as np

from graphcost.layerdag.dag_record import DAG


TINY = {"dim": 16, "T_node": 6, "T_edge": 4, "heads": 2}  # LayerDAG overrides small enough for unit tests


def tiny_dags(n: int, seed: int, max_nodes: int = 9) -> list[DAG]:
    """n random DAGs of 3 to max_nodes - 1 nodes over 3 categories (the training data of the model tests)."""
    rng = np.random.default_rng(seed)
    return [random_dag(rng, int(rng.integers(3, max_nodes)), p=0.35, num_categories=3) for _ in range(n)]


def random_dag(rng: np.random.Generator, n: int, p: float = 0.2, num_categories: int = 5, shuffle: bool = True) -> DAG:
    """Random DAG: edges i -> j (i < j) with probability p, then node ids shuffled."""
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    src, dst = iu[keep], ju[keep]
    attr = rng.integers(0, num_categories, n)
    if shuffle:
        perm = rng.permutation(n)
        src, dst = perm[src], perm[dst]
        inv = np.empty(n, np.int64)
        inv[perm] = np.arange(n)
        attr = attr[inv]
    return DAG(attr.astype(np.int64), src.astype(np.int64), dst.astype(np.int64), float(rng.random()))
