"""Teacher-forced training batches over all layers of all graphs (LayerDAG §III-D).

Every graph is kept in canonical (layer-major) order, so the prefix G(≤l) is its first off[l]
nodes and the edges with dst < off[l]. One batch of B graphs expands to
- prefix examples (g, l) for l = 0..L_g: the encoder input for layer-size prediction (target
  |V(l+1)|, 0 after the last layer) and for node-attribute denoising (target X(l+1), l < L_g);
- edge examples (g, k) for layers k = 2..L_g (1-based): G(≤k-1) plus the nodes of layer k (flag 1),
  with candidates V(≤k-1) × V(k) labelled by whether the edge exists.
All examples are disjoint unions; the three modules see them in one forward pass.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.tokenise import tokenise


@dataclass
class PreparedDAG:
    """One DAG in canonical order with its layer offsets."""

    attr: np.ndarray  # (N,) int64
    depth: np.ndarray  # (N,) int64 0-based layer
    src: np.ndarray  # (E,) int64 canonical, edges sorted by dst
    dst: np.ndarray  # (E,) int64
    off: np.ndarray  # (L+1,) first node of each layer
    ecum: np.ndarray  # (L+1,) number of edges whose dst lies in layers < l
    label: float | None

    @property
    def num_layers(self) -> int:
        return len(self.off) - 1


def prepare(dag: DAG) -> PreparedDAG:
    lay = tokenise(dag)
    off = lay.offsets
    sizes = lay.layer_sizes
    depth = np.repeat(np.arange(len(sizes)), sizes).astype(np.int64)
    e = np.concatenate(lay.layer_edges).astype(np.int64)  # sorted by (dst, src)
    ecum = np.searchsorted(e[:, 1], off) if e.size else np.zeros(len(off), np.int64)
    attr = np.concatenate(lay.layer_attrs).astype(np.int64)
    return PreparedDAG(attr, depth, e[:, 0].copy(), e[:, 1].copy(), off, ecum.astype(np.int64), lay.label)


def _cat(xs, dtype=np.int64):
    return torch.from_numpy(np.concatenate(xs).astype(dtype)) if xs else torch.zeros(0, dtype=torch.long)


def build_batch(graphs: list[PreparedDAG]) -> dict[str, torch.Tensor]:
    """Tensors for one teacher-forced step over all layers of `graphs` (see module docstring)."""
    # ---- prefix examples (layer size + node attributes) ----
    p_attr, p_depth, p_src, p_dst, p_batch = [], [], [], [], []
    ex_graph, ex_layer, size_target = [], [], []
    n_attr, n_ex, n_pos = [], [], []
    base, ex = 0, 0
    for gi, g in enumerate(graphs):
        L = g.num_layers
        for l in range(L + 1):
            n, m = int(g.off[l]), int(g.ecum[l])
            p_attr.append(g.attr[:n])
            p_depth.append(g.depth[:n])
            p_src.append(g.src[:m] + base)
            p_dst.append(g.dst[:m] + base)
            p_batch.append(np.full(n, ex))
            ex_graph.append(gi)
            ex_layer.append(l)
            size = int(g.off[l + 1] - g.off[l]) if l < L else 0
            size_target.append(size)
            if size:
                n_attr.append(g.attr[g.off[l] : g.off[l + 1]])
                n_ex.append(np.full(size, ex))
                n_pos.append(np.arange(size))
            base += n
            ex += 1
    out = {
        "p_attr": _cat(p_attr), "p_depth": _cat(p_depth), "p_batch": _cat(p_batch),
        "p_edge_index": torch.stack([_cat(p_src), _cat(p_dst)]),
        "p_graph": torch.tensor(ex_graph), "p_layer": torch.tensor(ex_layer),
        "size_target": torch.tensor(size_target),
        "n_attr": _cat(n_attr), "n_ex": _cat(n_ex), "n_pos": _cat(n_pos),
    }  # fmt: skip
    # ---- edge examples ----
    a_attr, a_depth, a_flag, a_src, a_dst, a_batch = [], [], [], [], [], []
    e_graph, e_layer, c_src, c_dst, c_ex, c_label = [], [], [], [], [], []
    base, ex = 0, 0
    for gi, g in enumerate(graphs):
        for k in range(1, g.num_layers):
            lo, hi = int(g.off[k]), int(g.off[k + 1])
            m0, m1 = int(g.ecum[k]), int(g.ecum[k + 1])
            a_attr.append(g.attr[:hi])
            a_depth.append(g.depth[:hi])
            a_flag.append((np.arange(hi) >= lo).astype(np.int64))
            a_src.append(g.src[:m0] + base)
            a_dst.append(g.dst[:m0] + base)
            a_batch.append(np.full(hi, ex))
            u, v = np.meshgrid(np.arange(lo), np.arange(lo, hi), indexing="ij")
            u, v = u.ravel(), v.ravel()
            true = np.isin(u * hi + v, g.src[m0:m1] * hi + g.dst[m0:m1])
            c_src.append(u + base)
            c_dst.append(v + base)
            c_ex.append(np.full(u.size, ex))
            c_label.append(true.astype(np.int64))
            e_graph.append(gi)
            e_layer.append(k)
            base += hi
            ex += 1
    out.update({
        "a_attr": _cat(a_attr), "a_depth": _cat(a_depth), "a_flag": _cat(a_flag), "a_batch": _cat(a_batch),
        "a_edge_index": torch.stack([_cat(a_src), _cat(a_dst)]),
        "e_graph": torch.tensor(e_graph, dtype=torch.long), "e_layer": torch.tensor(e_layer, dtype=torch.long),
        "c_src": _cat(c_src), "c_dst": _cat(c_dst), "c_ex": _cat(c_ex), "c_label": _cat(c_label),
    })  # fmt: skip
    return out


def dataset_statistics(graphs: list[PreparedDAG], num_categories: int) -> dict:
    """Marginals and sizes the model needs: node-attr marginal m, edge density ρ over candidates,
    largest layer, most layers, most nodes."""
    counts = np.zeros(num_categories, dtype=np.float64)
    n_edges, n_cand = 0, 0
    for g in graphs:
        counts += np.bincount(g.attr, minlength=num_categories)[:num_categories]
        sizes = np.diff(g.off)
        n_cand += int((g.off[1:-1] * sizes[1:]).sum()) if g.num_layers > 1 else 0
        n_edges += int(g.src.shape[0])
    return {
        "node_marginal": (counts / max(1.0, counts.sum())).tolist(),
        "edge_density": float(n_edges / max(1, n_cand)),
        "max_layer_size": int(max(int(np.diff(g.off).max()) for g in graphs)),
        "max_layers": int(max(g.num_layers for g in graphs)),
        "max_nodes": int(max(int(g.off[-1]) for g in graphs)),
    }
