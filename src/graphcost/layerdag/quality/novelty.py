"""Uniqueness and novelty of generated DAGs (LayerDAG §V).

Two attributed DAGs are treated as isomorphic when their Weisfeiler-Lehman hashes agree: the
initial colour of a node is its attribute, and each round refines it with the sorted multisets of
predecessor and successor colours (directed WL), for `rounds` rounds plus the node/edge counts.
Different hashes prove non-isomorphism; equal hashes are taken as isomorphic (WL cannot separate
some regular structures, so uniqueness/novelty are, if anything, slightly under-estimated).

uniqueness = |distinct generated graphs| / |generated|
novelty    = |generated graphs not isomorphic to any training graph| / |generated|

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

import hashlib

import numpy as np

from graphcost.layerdag.dag_record import DAG


def wl_hash(dag: DAG, rounds: int = 3) -> str:
    """Directed, attribute-aware Weisfeiler-Lehman hash of a DAG."""
    n = dag.num_nodes
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(dag.src.tolist(), dag.dst.tolist()):
        succs[u].append(v)
        preds[v].append(u)
    colours = [str(int(a)) for a in dag.node_attr]
    for _ in range(rounds):
        colours = [
            hashlib.blake2b(
                (colours[v] + "|" + ",".join(sorted(colours[u] for u in preds[v]))
                 + "|" + ",".join(sorted(colours[w] for w in succs[v]))).encode(),
                digest_size=8,
            ).hexdigest()
            for v in range(n)
        ]  # fmt: skip
    summary = f"{n}:{dag.num_edges}:" + ",".join(sorted(colours))
    return hashlib.blake2b(summary.encode(), digest_size=16).hexdigest()


def uniqueness(generated: list[DAG]) -> float:
    if not generated:
        return 0.0
    return len({wl_hash(d) for d in generated}) / len(generated)


def novelty(generated: list[DAG], training: list[DAG]) -> float:
    if not generated:
        return 0.0
    seen = {wl_hash(d) for d in training}
    return float(np.mean([wl_hash(d) not in seen for d in generated]))
