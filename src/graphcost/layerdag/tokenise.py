"""Layerwise partition and tokenisation of a DAG (LayerDAG §III-A).

V(1) is the set of nodes without predecessors; V(l+1) is the set of unplaced nodes whose
predecessors all lie in V(≤l). The ordered partition (V(1), ..., V(L)) is unique, and with
E(l+1) = {(u, v) ∈ E : u ∈ V(≤l), v ∈ V(l+1)} the sequence V(1), V(2), E(2), ..., V(L), E(L)
reconstructs the DAG exactly.

Canonical node order: layer by layer, and inside a layer by original node id. In that order the
prefix G(≤l) is simply the first |V(≤l)| nodes, which is what the model's batching relies on.
`reconstruct(tokenise(dag))` returns the canonically numbered DAG; `restore_order=True` maps it
back to the original numbering, so the round trip is exact.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphcost.errors import GraphcostError
from graphcost.layerdag.dag_record import DAG


class NotADAGError(GraphcostError, ValueError):
    """The graph cannot be tokenised (a cycle, a self-loop, a duplicate edge, a bad node id)."""


@dataclass
class LayeredDAG:
    """A DAG as its layer sequence. Node ids below are canonical (layer-major) unless stated."""

    layer: np.ndarray  # (N,) int64 0-based layer of each ORIGINAL node id
    order: np.ndarray  # (N,) int64 order[k] = original id of canonical node k
    layer_attrs: list[np.ndarray]  # L arrays: attrs of V(l) in canonical order
    layer_edges: list[np.ndarray]  # L arrays (E_l, 2) canonical (src, dst); src in V(<l), dst in V(l); [0] is empty
    label: float | None = None

    @property
    def num_layers(self) -> int:
        return len(self.layer_attrs)

    @property
    def layer_sizes(self) -> np.ndarray:  # (L,)
        return np.array([a.shape[0] for a in self.layer_attrs], dtype=np.int64)

    @property
    def offsets(self) -> np.ndarray:  # (L+1,) canonical id where each layer starts
        return np.concatenate([[0], np.cumsum(self.layer_sizes)]).astype(np.int64)

    @property
    def num_nodes(self) -> int:
        return int(self.layer_sizes.sum())


def layer_index(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """(N,) 0-based layer of every node: V(1) the nodes without predecessors, V(l+1) those whose
    predecessors all lie in V(<=l) (`networkx.topological_generations`).

    Raises NotADAGError on a cycle (some nodes never become free of predecessors).
    """
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(num_nodes))
    graph.add_edges_from(zip(np.asarray(src).tolist(), np.asarray(dst).tolist()))
    layer = np.full(num_nodes, -1, dtype=np.int64)
    try:
        for depth, nodes in enumerate(nx.topological_generations(graph)):
            layer[nodes] = depth
    except nx.NetworkXUnfeasible:  # a cycle: the nodes on or behind it keep layer -1
        pass
    if np.any(layer < 0):
        stuck = np.flatnonzero(layer < 0)
        raise NotADAGError(
            f"graph has a cycle: {stuck.size} of {num_nodes} nodes are never free of predecessors "
            f"(e.g. node {int(stuck[0])}); LayerDAG tokenisation needs an acyclic graph"
        )
    return layer


def _check(dag: DAG) -> tuple[np.ndarray, np.ndarray]:
    n = dag.num_nodes
    src, dst = np.asarray(dag.src, dtype=np.int64), np.asarray(dag.dst, dtype=np.int64)
    if src.shape != dst.shape or src.ndim != 1:
        raise NotADAGError(f"src/dst must be 1-d arrays of equal length, got {src.shape} and {dst.shape}")
    if np.asarray(dag.node_attr).ndim != 1:
        raise NotADAGError(f"node_attr must be 1-d, got shape {np.asarray(dag.node_attr).shape}")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise NotADAGError(f"edge endpoint out of range [0, {n})")
    if np.any(src == dst):
        raise NotADAGError(f"graph has a cycle: self-loop on node {int(src[src == dst][0])}")
    if src.size and np.unique(src * n + dst).size != src.size:
        raise NotADAGError("graph has duplicate edges; LayerDAG models simple DAGs")
    return src, dst


def tokenise(dag: DAG) -> LayeredDAG:
    """Split `dag` into its layer sequence V(1), V(2), E(2), ..., V(L), E(L) (LayerDAG §III-A)."""
    src, dst = _check(dag)
    n = dag.num_nodes
    if n == 0:
        raise NotADAGError("graph has no nodes")
    layer = layer_index(n, src, dst)
    order = np.lexsort((np.arange(n), layer))  # canonical: by layer, then original id
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    attrs = np.asarray(dag.node_attr, dtype=np.int64)[order]
    L = int(layer.max()) + 1
    sizes = np.bincount(layer, minlength=L)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    cs, cd = rank[src], rank[dst]
    e_order = np.lexsort((cs, cd))  # edges sorted by (dst, src) canonical
    cs, cd = cs[e_order], cd[e_order]
    e_layer = layer[order][cd] if cd.size else np.zeros(0, dtype=np.int64)
    e_cuts = np.searchsorted(e_layer, np.arange(L + 1))
    layer_attrs = [attrs[offsets[i] : offsets[i + 1]] for i in range(L)]
    layer_edges = [np.stack([cs[e_cuts[i] : e_cuts[i + 1]], cd[e_cuts[i] : e_cuts[i + 1]]], 1) for i in range(L)]
    return LayeredDAG(layer=layer, order=order, layer_attrs=layer_attrs, layer_edges=layer_edges, label=dag.label)


def reconstruct(layered: LayeredDAG, restore_order: bool = False) -> DAG:
    """Rebuild the DAG from its layer sequence; edges come out sorted by (src, dst).

    With restore_order=False nodes are numbered canonically (layer-major); with True they get
    their original ids back (needs `layered.order`).
    """
    attrs = (
        np.concatenate(layered.layer_attrs).astype(np.int64) if layered.layer_attrs else np.zeros(0, np.int64)
    )
    edges = [e for e in layered.layer_edges if e.size]
    e = np.concatenate(edges).astype(np.int64) if edges else np.zeros((0, 2), np.int64)
    src, dst = e[:, 0], e[:, 1]
    if restore_order:
        order = np.asarray(layered.order, dtype=np.int64)
        if order.shape != attrs.shape:
            raise ValueError(f"order has {order.shape[0]} entries for {attrs.shape[0]} nodes")
        orig_attrs = np.empty_like(attrs)
        orig_attrs[order] = attrs
        attrs, src, dst = orig_attrs, order[src], order[dst]
    k = np.lexsort((dst, src))
    return DAG(node_attr=attrs, src=src[k], dst=dst[k], label=layered.label)


def canonicalise(dag: DAG) -> DAG:
    """The same DAG renumbered layer-major with edges sorted by (src, dst)."""
    return reconstruct(tokenise(dag))


def dags_equal(a: DAG, b: DAG) -> bool:
    """Same node attributes and the same edge set (order of edges ignored), same label."""
    if a.num_nodes != b.num_nodes or a.num_edges != b.num_edges or not np.array_equal(a.node_attr, b.node_attr):
        return False
    ka, kb = np.sort(a.src * a.num_nodes + a.dst), np.sort(b.src * b.num_nodes + b.dst)
    same_label = (a.label is None and b.label is None) or (
        a.label is not None and b.label is not None and float(a.label) == float(b.label)
    )
    return bool(np.array_equal(ka, kb)) and same_label
