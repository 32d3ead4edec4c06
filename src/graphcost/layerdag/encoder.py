"""DAG encoder for LayerDAG (§III-D): bidirectional MPNN, set pooling, sinusoidal embeddings.

One bidirectional MPNN layer (LayerDAG §III-D):
  H' = σ(A H W_fwd + Aᵀ H W_rev + H W_self)
with A[v, u] = 1 for an edge u → v, so A H sums the predecessors' states and Aᵀ H the
successors'. σ is GELU, H is layer-normalised first (pre-norm, so sums keep neighbour counts), with a
residual connection around each layer. Sum
aggregation over a fixed edge set makes the layer permutation equivariant; pooling (mean, max and
an embedding of the node count) is permutation invariant.

Batches are disjoint unions: node states (N, d), `edge_index` (2, E) with rows (src, dst) and
`batch` (N,) the graph id of each node. Sums and readouts are PyG's (`torch_geometric.utils.scatter`,
`global_mean_pool`, `global_max_pool`, `global_add_pool`); empty graphs read out as zeros.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.utils import scatter


def frontier_histogram(attr, depth, batch, num_graphs: int, num_categories: int) -> torch.Tensor:
    """(G, C) attribute counts of each graph's deepest layer V(l) (the layer the next one attaches to)."""
    front = frontier_mask(depth, batch, num_graphs).to(torch.float32)  # (N,) 1 for the nodes of V(l)
    hist = torch.zeros(num_graphs, num_categories, device=attr.device)
    return hist.index_put_((batch, attr), front, accumulate=True)


def frontier_mask(depth, batch, num_graphs: int) -> torch.Tensor:
    """(N,) bool: the node lies in its graph's deepest layer."""
    deepest = scatter(depth, batch, dim=0, dim_size=num_graphs, reduce="max")  # (G,)
    return depth == deepest[batch]


class SinusoidalEmbedding(nn.Module):
    """Transformer-style embedding of a real scalar (Vaswani et al.): [sin(x ω_k), cos(x ω_k)], ω_k = 1/10000^(k/(d/2)),
    followed by a 2-layer MLP. Used for the graph label (conditioning), the diffusion step and depths."""

    def __init__(self, dim: int, scale: float = 1.0):
        super().__init__()
        self.dim, self.scale = dim, scale
        half = dim // 2
        self.register_buffer("freqs", torch.exp(-math.log(10000.0) * torch.arange(half) / max(1, half)), persistent=False)
        self.mlp = nn.Sequential(nn.Linear(2 * half, dim), nn.GELU(), nn.Linear(dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (n,) -> (n, dim)
        ang = (x.to(torch.float32) * self.scale).unsqueeze(-1) * self.freqs
        return self.mlp(torch.cat([ang.sin(), ang.cos()], -1))


class BiMPNNLayer(nn.Module):
    """σ(A H W_fwd + Aᵀ H W_rev + H W_self) with a residual; LayerDAG §III-D."""

    def __init__(self, dim: int):
        super().__init__()
        self.w_fwd = nn.Linear(dim, dim, bias=False)
        self.w_rev = nn.Linear(dim, dim, bias=False)
        self.w_self = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.act = nn.GELU()

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:  # h (N, d), edge_index (2, E)
        src, dst = edge_index[0], edge_index[1]
        x = self.norm(h)  # pre-norm: the sums below keep neighbour counts (a norm after them would not)
        n = x.shape[0]
        fwd = scatter(self.w_fwd(x)[src], dst, dim=0, dim_size=n, reduce="sum")  # (A H W_fwd): predecessors -> node
        rev = scatter(self.w_rev(x)[dst], src, dim=0, dim_size=n, reduce="sum")  # (Aᵀ H W_rev): successors -> node
        return h + self.act(fwd + rev + self.w_self(x))


class BiMPNN(nn.Module):
    """A stack of bidirectional MPNN layers."""

    def __init__(self, dim: int, num_layers: int):
        super().__init__()
        self.layers = nn.ModuleList([BiMPNNLayer(dim) for _ in range(num_layers)])

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            h = layer(h, edge_index)
        return h


class SetPool(nn.Module):
    """Permutation-invariant graph readout: [mean, max, sum over the frontier, emb(#nodes)] -> Linear (G, d).

    The frontier is the deepest layer present in each graph (the layer the next one attaches to);
    its sum keeps per-attribute counts of that layer, which mean/max pooling would lose.
    Graphs with no nodes (the empty prefix G(≤0)) read out as zeros plus the count embedding of 0.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.count_emb = SinusoidalEmbedding(dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, h: torch.Tensor, batch: torch.Tensor, num_graphs: int, depth: torch.Tensor) -> torch.Tensor:
        count = scatter(torch.ones_like(batch, dtype=h.dtype), batch, dim=0, dim_size=num_graphs, reduce="sum")  # (G,)
        mean = global_mean_pool(h, batch, size=num_graphs)  # (G, d)
        mx = global_max_pool(h, batch, size=num_graphs)  # (G, d)
        front = frontier_mask(depth, batch, num_graphs).to(h.dtype).unsqueeze(-1)  # (N, 1)
        fsum = global_add_pool(h * front, batch, size=num_graphs) * 0.1  # (G, d)
        return self.proj(torch.cat([mean, mx, fsum, self.count_emb(count)], -1))


class DAGEncoder(nn.Module):
    """Node embedding (attribute + depth [+ extra flag]) -> BiMPNN -> node states and pooled graph states.

    Inputs: `attr` (N,) int64 in [0, C), `depth` (N,) 0-based layer of each node, optional `flag` (N,)
    int64 in [0, num_flags) (e.g. 'node of the layer being generated'), `edge_index` (2, E),
    `batch` (N,), `num_graphs`; the conditioning vector `cond` (G, d) is added to every node of its
    graph before message passing (label conditioning, §V-A).
    """

    def __init__(self, num_categories: int, dim: int, num_layers: int, num_flags: int = 1):
        super().__init__()
        self.attr_emb = nn.Embedding(num_categories, dim)
        self.flag_emb = nn.Embedding(num_flags, dim)
        self.depth_emb = SinusoidalEmbedding(dim)
        self.mpnn = BiMPNN(dim, num_layers)
        self.pool = SetPool(dim)

    def forward(self, attr, depth, edge_index, batch, num_graphs, cond=None, flag=None):
        h = self.attr_emb(attr) + self.depth_emb(depth)  # (N, d)
        if flag is not None:
            h = h + self.flag_emb(flag)
        if cond is not None:
            h = h + cond[batch]
        h = self.mpnn(h, edge_index)  # (N, d)
        return h, self.pool(h, batch, num_graphs, depth)  # (N, d), (G, d)
