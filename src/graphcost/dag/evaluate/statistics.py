"""Distribution statistics of generated vs real DAGs, compared with MMD.

For each graph we take four histograms — in-degree, out-degree, layer sizes (of the layerwise
partition, LayerDAG §III-A) — and one scalar, the layer count. The MMD between two sets of graphs
uses a Gaussian kernel on the total-variation distance between normalised histograms,

    k(p, q) = exp(-TV(p, q)^2 / (2 sigma^2)),  TV(p, q) = 1/2 * sum_i |p_i - q_i|,
    MMD^2(X, Y) = mean k(x, x') + mean k(y, y') - 2 mean k(x, y),

in the style of GraphRNN's graph-statistics evaluation (which uses an EMD kernel; TV keeps this
dependency-free and O(bins)). Layer counts are compared as one-hot histograms over counts.
Lower is better; 0 means the two sets have the same statistic distribution.
"""

from __future__ import annotations

import numpy as np

from graphcost.dag.graph import DAG
from graphcost.dag.tokenise import layer_index

STATISTICS = ("in_degree", "out_degree", "layer_size", "num_layers")


def graph_histograms(dag: DAG) -> dict[str, np.ndarray]:
    """Un-normalised histograms of one DAG's statistics."""
    n = dag.num_nodes
    layer = layer_index(n, dag.src, dag.dst)  # raises NotADAGError (a ValueError) on a cycle
    num_layers = int(layer.max()) + 1 if n else 0
    return {
        "in_degree": np.bincount(np.bincount(dag.dst, minlength=n)),
        "out_degree": np.bincount(np.bincount(dag.src, minlength=n)),
        "layer_size": np.bincount(np.bincount(layer)) if n else np.zeros(1),
        "num_layers": np.eye(num_layers + 1)[num_layers],
    }


def _normalise(hists: list[np.ndarray], width: int) -> np.ndarray:
    out = np.zeros((len(hists), width))
    for i, h in enumerate(hists):
        out[i, : h.shape[0]] = h
    total = out.sum(axis=1, keepdims=True)
    return out / np.where(total > 0, total, 1.0)


def mmd(x_hists: list[np.ndarray], y_hists: list[np.ndarray], sigma: float = 1.0) -> float:
    """MMD^2 between two sets of histograms with the Gaussian-TV kernel (module docstring)."""
    if not x_hists or not y_hists:
        raise ValueError("MMD needs at least one graph on each side")
    width = max(h.shape[0] for h in x_hists + y_hists)
    x, y = _normalise(x_hists, width), _normalise(y_hists, width)

    def kernel(a: np.ndarray, b: np.ndarray) -> float:
        tv = 0.5 * np.abs(a[:, None, :] - b[None, :, :]).sum(-1)  # (|a|, |b|)
        return float(np.exp(-(tv**2) / (2 * sigma**2)).mean())

    return max(kernel(x, x) + kernel(y, y) - 2 * kernel(x, y), 0.0)


def mmd_table(generated: list[DAG], real: list[DAG]) -> dict[str, float]:
    """MMD^2 for every statistic in STATISTICS."""
    gen = [graph_histograms(d) for d in generated]
    ref = [graph_histograms(d) for d in real]
    return {s: mmd([g[s] for g in gen], [r[s] for r in ref]) for s in STATISTICS}
