"""Distribution statistics of generated vs real DAGs, compared with MMD.

For each graph we take three histograms — in-degree, out-degree, layer sizes (of the layerwise
partition, LayerDAG §III-A) — and one scalar, the layer count (a one-hot histogram over counts).
Two sets of graphs are compared with the MMD of GraphRNN (You et al. 2018, `eval/mmd.py`) and GRAN
(Liao et al. 2019), so our numbers can be set beside theirs: each histogram is normalised to a pmf
p over the integers 0, 1, 2, ... (unit bin spacing), and

    EMD(p, q) = sum_k |P(k) - Q(k)|,   P, Q the CDFs     (1-D earth mover's distance)
    k(p, q)   = exp(-EMD(p, q)^2 / (2 sigma^2)),  sigma = 1   (GraphRNN/GRAN `gaussian_emd` default)
    MMD^2(X, Y) = mean k(x, x') + mean k(y, y') - 2 mean k(x, y)   (means over all pairs, self pairs
                  included: the biased V-statistic both papers report)

The LayerDAG paper (Table II) reports validity and surrogate Pearson only, no MMD kernel.
Lower is better; 0 means the two sets have the same statistic distribution. A graph without nodes
has no degree or layer-size distribution and is left out of those three MMDs.

Memory is linear in the input and the MMD is streamed: histograms are kept at their own length
(a graph's histograms have at most nodes + edges + 3 bins), identical pmfs are merged with a count,
and the pairwise kernel sums are computed in blocks of at most `BLOCK_ELEMENTS` numbers. Time is
quadratic in the graphs compared, so a side with more than `MAX_GRAPHS` graphs is replaced by a
seeded uniform subsample of `MAX_GRAPHS` graphs (`MMDResult.used` says how many were compared).

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.tokenise import layer_index

STATISTICS = ("in_degree", "out_degree", "layer_size", "num_layers")
SIGMA = 1.0  # GraphRNN / GRAN `gaussian_emd(sigma=1.0, distance_scaling=1.0)`
KERNEL = f"gaussian_emd(sigma={SIGMA:g}, unit bin spacing)"
MAX_GRAPHS = 2048  # per side; beyond it a seeded subsample (the O(n^2) kernel sums bound the time)
BLOCK_ELEMENTS = 1 << 20  # numbers in one block of the pairwise computation (8 MiB of float64)


def graph_histograms(dag: DAG) -> dict[str, np.ndarray]:
    """Un-normalised histograms of one DAG's statistics, each at most nodes + edges + 1 bins long."""
    n = dag.num_nodes
    layer = layer_index(n, dag.src, dag.dst)  # raises NotADAGError (a ValueError) on a cycle
    num_layers = int(layer.max()) + 1 if n else 0
    one_hot = np.zeros(num_layers + 1)  # (L+1,), not a row of an (L+1, L+1) identity
    one_hot[num_layers] = 1.0
    return {
        "in_degree": np.bincount(np.bincount(dag.dst, minlength=n)),
        "out_degree": np.bincount(np.bincount(dag.src, minlength=n)),
        "layer_size": np.bincount(np.bincount(layer)) if n else np.zeros(1),
        "num_layers": one_hot,
    }


def emd_1d(p: np.ndarray, q: np.ndarray) -> float:
    """Earth mover's distance between two histograms on 0, 1, 2, ... after normalising each to a pmf:
    the summed absolute difference of their CDFs (unit bin spacing)."""
    width = max(len(p), len(q))
    cp = np.cumsum(np.pad(np.asarray(p, float), (0, width - len(p)))) / np.sum(p)
    cq = np.cumsum(np.pad(np.asarray(q, float), (0, width - len(q)))) / np.sum(q)
    return float(np.abs(cp - cq).sum())


@dataclass
class _PMFs:
    """Distinct pmfs of a set of histograms, sparse: pmf i has mass at `pos[i]` (increasing ints) with
    CDF values `cdf[i]` there, and stands for `weight[i]` of the input histograms."""

    pos: list[np.ndarray]
    cdf: list[np.ndarray]
    weight: np.ndarray  # (U,) float

    @classmethod
    def of(cls, hists: list[np.ndarray]) -> "_PMFs":
        merged: dict[tuple[bytes, bytes], int] = {}
        pos: list[np.ndarray] = []
        cdf: list[np.ndarray] = []
        weight: list[float] = []
        for h in hists:
            h = np.asarray(h, dtype=np.float64)
            nz = np.flatnonzero(h)
            if nz.size == 0:  # no mass: a graph without nodes
                continue
            c = np.cumsum(h[nz]) / h[nz].sum()
            key = (nz.tobytes(), c.tobytes())
            if key in merged:
                weight[merged[key]] += 1.0
            else:
                merged[key] = len(pos)
                pos.append(nz)
                cdf.append(c)
                weight.append(1.0)
        return cls(pos, cdf, np.asarray(weight))

    def cdf_at(self, support: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """(hi-lo, len(support)) CDFs of pmfs lo..hi-1 evaluated at the support points."""
        out = np.zeros((hi - lo, support.size))
        for r, i in enumerate(range(lo, hi)):
            at = np.searchsorted(self.pos[i], support, side="right") - 1  # last mass point <= u
            out[r] = np.where(at >= 0, self.cdf[i][np.maximum(at, 0)], 0.0)
        return out


def _kernel_sum(a: _PMFs, b: _PMFs, support: np.ndarray, gaps: np.ndarray, sigma: float, same: bool) -> float:
    """sum_ij w_i v_j k(a_i, b_j), blockwise: between consecutive support points u_k < u_k+1 every CDF
    is constant, so EMD(p, q) = sum_k (u_k+1 - u_k) |P(u_k) - Q(u_k)|."""
    rows = int(max(1, min(256, BLOCK_ELEMENTS // support.size)))
    cols = int(max(1, BLOCK_ELEMENTS // (rows * rows)))
    total = 0.0
    for i0 in range(0, len(a.weight), rows):
        i1 = min(i0 + rows, len(a.weight))
        fa = a.cdf_at(support, i0, i1)  # (Ba, S)
        for j0 in range(i0 if same else 0, len(b.weight), rows):
            j1 = min(j0 + rows, len(b.weight))
            fb = fa if same and j0 == i0 else b.cdf_at(support, j0, j1)  # (Bb, S)
            emd = np.zeros((i1 - i0, j1 - j0))
            for k0 in range(0, support.size, cols):
                k = slice(k0, k0 + cols)
                emd += (np.abs(fa[:, None, k] - fb[None, :, k]) * gaps[k]).sum(-1)  # (Ba, Bb, <=cols) -> (Ba, Bb)
            kern = np.exp(-(emd**2) / (2 * sigma**2))
            part = float(a.weight[i0:i1] @ kern @ b.weight[j0:j1])
            total += 2 * part if same and j0 > i0 else part  # an off-diagonal block of a symmetric sum
    return total


@dataclass
class MMDResult:
    """MMD^2 and the number of histograms compared on each side (after any subsample)."""

    value: float
    used: tuple[int, int]


def _subsample(hists: list[np.ndarray], max_graphs: int, seed: int) -> list[np.ndarray]:
    if len(hists) <= max_graphs:
        return hists
    keep = np.sort(np.random.default_rng(seed).choice(len(hists), size=max_graphs, replace=False))
    return [hists[i] for i in keep]


def mmd_with_info(x_hists: list[np.ndarray], y_hists: list[np.ndarray], sigma: float = SIGMA,
                  max_graphs: int = MAX_GRAPHS, seed: int = 0) -> MMDResult:  # fmt: skip
    """MMD^2 between two sets of histograms with the Gaussian-EMD kernel (module docstring); each side
    is first cut to a seeded subsample of `max_graphs` histograms when longer."""
    x_hists, y_hists = _subsample(x_hists, max_graphs, seed), _subsample(y_hists, max_graphs, seed + 1)
    x, y = _PMFs.of(x_hists), _PMFs.of(y_hists)
    if not len(x.weight) or not len(y.weight):
        raise ValueError("MMD needs at least one non-empty histogram (a graph with nodes) on each side")
    support = np.unique(np.concatenate(x.pos + y.pos))  # (S,) every point where some pmf has mass
    gaps = np.diff(support).astype(np.float64)  # the CDFs all reach 1 at the last point: no gap after it
    support = support[:-1]
    if support.size == 0:  # every pmf is the same point mass
        return MMDResult(0.0, (int(x.weight.sum()), int(y.weight.sum())))
    wx, wy = x.weight.sum(), y.weight.sum()
    kxx = _kernel_sum(x, x, support, gaps, sigma, same=True) / wx**2
    kyy = _kernel_sum(y, y, support, gaps, sigma, same=True) / wy**2
    kxy = _kernel_sum(x, y, support, gaps, sigma, same=False) / (wx * wy)
    return MMDResult(float(max(kxx + kyy - 2 * kxy, 0.0)), (int(wx), int(wy)))


def mmd(x_hists: list[np.ndarray], y_hists: list[np.ndarray], sigma: float = SIGMA,
        max_graphs: int = MAX_GRAPHS, seed: int = 0) -> float:  # fmt: skip
    """MMD^2 between two sets of histograms with the Gaussian-EMD kernel (module docstring)."""
    return mmd_with_info(x_hists, y_hists, sigma, max_graphs, seed).value


def mmd_report(generated: list[DAG], real: list[DAG], max_graphs: int = MAX_GRAPHS) -> dict:
    """{"mmd": {statistic: MMD^2}, "mmd_kernel": KERNEL, "mmd_graphs": {"generated", "real": compared,
    "max": max_graphs}}; the graph counts are those of num_layers (every graph has a layer count)."""
    gen = [graph_histograms(d) for d in _subsample(generated, max_graphs, 0)]
    ref = [graph_histograms(d) for d in _subsample(real, max_graphs, 1)]
    values = {s: mmd_with_info([g[s] for g in gen], [r[s] for r in ref], max_graphs=max_graphs) for s in STATISTICS}
    used = values["num_layers"].used
    return {
        "mmd": {s: r.value for s, r in values.items()},
        "mmd_kernel": KERNEL,
        "mmd_graphs": {"generated": used[0], "real": used[1], "of_generated": len(generated), "of_real": len(real),
                       "max": max_graphs},  # fmt: skip
    }


def mmd_table(generated: list[DAG], real: list[DAG]) -> dict[str, float]:
    """MMD^2 for every statistic in STATISTICS (Gaussian-EMD kernel, at most MAX_GRAPHS per side)."""
    return mmd_report(generated, real)["mmd"]
