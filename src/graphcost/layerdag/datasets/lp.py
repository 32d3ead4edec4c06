"""Latent-preferential (LP) synthetic DAGs with hard logical rules (LayerDAG §V-A).

Generation (paper §V-A): every node has a binary label. Layer 1 is a single node with label
~ Bernoulli(0.5). With n_i^(l) the number of label-i nodes in layer l (layers 1-indexed),
n_i^(l+1) ~ U{max(0, n_i^(l) - (l+1)), ..., n_i^(l) + (l+1)}. Every new node has one or two
predecessors, at least one of them in the previous layer; two predecessors carry distinct labels.

The paper does not say when generation stops; here a graph ends when a drawn layer is empty or
after `max_layers` layers (`max_layers` itself drawn uniformly from [min_layers, max_layers]),
and `max_nodes` caps the size. The validity checker tests the rules above on the DAG's own
layerwise partition (the LayerDAG tokenisation), not on any stored layer ids.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.tokenise import NotADAGError, layer_index


@dataclass(frozen=True)
class LPConfig:
    min_layers: int = 3
    max_layers: int = 8
    max_nodes: int = 120
    two_parent_prob: float = 0.5  # chance that a new node asks for a second predecessor


def generate_lp_dag(rng: np.random.Generator, cfg: LPConfig = LPConfig()) -> DAG:
    """Draw one LP DAG (labels in {0, 1})."""
    num_layers = int(rng.integers(cfg.min_layers, cfg.max_layers + 1))
    labels = [int(rng.integers(0, 2))]
    layers = [[0]]
    src, dst = [], []
    counts = np.bincount(labels, minlength=2)
    for l in range(1, num_layers):  # creating layer l+1 (1-indexed) from layer l
        width = l + 1
        new_counts = [int(rng.integers(max(0, c - width), c + width + 1)) for c in counts]
        if sum(new_counts) == 0 or len(labels) + sum(new_counts) > cfg.max_nodes:
            break
        prev = layers[-1]
        earlier = [v for layer in layers for v in layer]
        new_layer = []
        for lab, count in enumerate(new_counts):
            for _ in range(count):
                v = len(labels)
                labels.append(lab)
                p1 = int(rng.choice(prev))
                src.append(p1)
                dst.append(v)
                if rng.random() < cfg.two_parent_prob:
                    others = [u for u in earlier if labels[u] != labels[p1]]
                    if others:
                        src.append(int(rng.choice(others)))
                        dst.append(v)
                new_layer.append(v)
        layers.append(new_layer)
        counts = np.array(new_counts)
    return DAG(np.array(labels, np.int64), np.array(src, np.int64), np.array(dst, np.int64), None)


def generate_lp_dataset(num_graphs: int, seed: int = 0, cfg: LPConfig = LPConfig()) -> list[DAG]:
    rng = np.random.default_rng(seed)
    return [generate_lp_dag(rng, cfg) for _ in range(num_graphs)]


def lp_violations(dag: DAG) -> list[str]:
    """Every LP rule the DAG breaks (empty list = valid)."""
    problems = []
    if dag.num_nodes == 0:
        return ["empty graph"]
    if dag.node_attr.size and (dag.node_attr.min() < 0 or dag.node_attr.max() > 1):
        problems.append("node labels must be binary")
    if dag.num_edges and (dag.src.min() < 0 or max(dag.src.max(), dag.dst.max()) >= dag.num_nodes):
        return problems + ["edge endpoint out of range"]
    if np.any(dag.src == dag.dst):
        return problems + ["self-loop"]
    try:
        layer = layer_index(dag.num_nodes, dag.src, dag.dst)
    except NotADAGError:
        return problems + ["cycle"]
    num_layers = int(layer.max()) + 1
    if int((layer == 0).sum()) != 1:
        problems.append(f"layer 1 has {int((layer == 0).sum())} nodes, expected 1")
    labels = np.clip(dag.node_attr, 0, 1)
    counts = np.zeros((num_layers, 2), dtype=np.int64)
    np.add.at(counts, (layer, labels), 1)
    for l in range(1, num_layers):  # LayerDAG layers are 1-indexed: bound width is (l + 1)
        for lab in (0, 1):
            lo, hi = max(0, counts[l - 1, lab] - (l + 1)), counts[l - 1, lab] + (l + 1)
            if not lo <= counts[l, lab] <= hi:
                problems.append(f"layer {l + 1}: {counts[l, lab]} nodes with label {lab}, allowed [{lo}, {hi}]")
    preds: list[list[int]] = [[] for _ in range(dag.num_nodes)]
    for u, v in zip(dag.src.tolist(), dag.dst.tolist()):
        preds[v].append(u)
    for v in range(dag.num_nodes):
        if layer[v] == 0:
            continue
        p = preds[v]
        if len(set(p)) != len(p):
            problems.append(f"node {v}: duplicate edge")
        if len(p) > 2:
            problems.append(f"node {v}: {len(p)} predecessors, at most 2 allowed")
        if len(p) == 2 and labels[p[0]] == labels[p[1]]:
            problems.append(f"node {v}: two predecessors with the same label")
    return problems


def is_valid_lp(dag: DAG) -> bool:
    return not lp_violations(dag)


def lp_validity(dags: list[DAG]) -> float:
    """Fraction of DAGs that satisfy every LP rule (LayerDAG Table II 'Validity')."""
    return float(np.mean([is_valid_lp(d) for d in dags])) if dags else 0.0
