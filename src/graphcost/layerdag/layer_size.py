"""Layer-size prediction p(|V(l+1)| | G(≤l)) (LayerDAG §III-B).

A categorical over sizes 0..S_max, where S_max is the largest layer in the training data; size 0
ends generation. The prefix G(≤l) is encoded with a bidirectional MPNN, pooled into a graph
vector and combined with the layer index l and the label embedding (conditioning). With
`set_features`, the head also sees the attribute histogram of the deepest layer V(l) (as the node
denoiser does): in LP the next layer's size bounds are exact functions of those counts, and the
pooled MPNN state carries them only approximately.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

import torch
from torch import nn

from graphcost.layerdag.encoder import DAGEncoder, SinusoidalEmbedding, frontier_histogram


class LayerSizePredictor(nn.Module):
    """logits (G, S_max + 1) over the size of the next layer; index 0 = stop."""

    def __init__(self, num_categories: int, max_size: int, dim: int, num_layers: int, set_features: bool = False):
        super().__init__()
        self.num_categories, self.set_features = num_categories, set_features
        self.encoder = DAGEncoder(num_categories, dim, num_layers)
        self.layer_emb = SinusoidalEmbedding(dim)
        if set_features:
            self.front_proj = nn.Linear(num_categories, dim)
        self.head = nn.Sequential(nn.Linear((4 if set_features else 3) * dim, dim), nn.GELU(), nn.Linear(dim, max_size + 1))

    def forward(self, attr, depth, edge_index, batch, num_graphs, layer_idx, cond) -> torch.Tensor:
        # attr/depth (N,), edge_index (2, E), batch (N,), layer_idx (G,) = l, cond (G, d)
        _, g = self.encoder(attr, depth, edge_index, batch, num_graphs, cond=cond)  # (G, d)
        parts = [g, self.layer_emb(layer_idx), cond]
        if self.set_features:
            parts.append(self.front_proj(frontier_histogram(attr, depth, batch, num_graphs, self.num_categories) / 4.0))
        return self.head(torch.cat(parts, -1))  # (G, S_max + 1)

    @staticmethod
    def mask_logits(logits: torch.Tensor, layer_idx: torch.Tensor, room: torch.Tensor) -> torch.Tensor:
        """Forbid stopping before the first layer and sizes beyond the node budget `room` (G,)."""
        sizes = torch.arange(logits.shape[-1], device=logits.device)
        bad = (sizes[None, :] > room[:, None]) | ((sizes[None, :] == 0) & (layer_idx[:, None] == 0))
        bad[:, 0] &= room > 0  # with no room left, stopping is always allowed
        return logits.masked_fill(bad, -torch.inf)
