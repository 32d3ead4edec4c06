"""The two denoising networks of LayerDAG's layerwise diffusion (§III-C, §III-D).

Node attributes, φ_X(G(≤l), X(l+1, t), t) modelling p(X(l+1) | G(≤l), |V(l+1)|): the prefix G(≤l)
is encoded by a bidirectional MPNN and pooled; the graph vector, an embedding of t, of the layer
index, of the label and (`set_features`) set statistics — |V(l+1)|, the noisy attribute histogram
of the new layer and the attribute histogram of layer l — are added to the embedding of
every noisy attribute of the new layer; a transformer WITHOUT positional
encodings (a set transformer, permutation equivariant) over the new layer's nodes predicts x̂_0.

Edges, φ_E(G(≤l), X(l+1), E(l+1, t), t): G(≤l) is augmented with the new nodes (flagged) and
the current noisy edges E(l+1, t); a bidirectional MPNN gives node states h, and the probability
of each candidate edge (u, v) ∈ V(≤l) × V(l+1) is MLP([h_u, h_v, emb(t)]). With `set_features`
(the edge analogue of the node denoiser's), each candidate also sees statistics of v's current noisy
predecessor set without itself: how many other candidates into v are present, how many of those share
u's attribute, how many lie in v's previous layer, and its layer gap depth(v) − depth(u).
"""

from __future__ import annotations

import torch
from torch import nn

from graphcost.layerdag.encoder import DAGEncoder, SinusoidalEmbedding, frontier_histogram


class NodeDenoiser(nn.Module):
    """x̂_0 logits for the attributes of the new layer's nodes.

    With `set_features` (set statistics as extra denoiser inputs, in the spirit of DiGress's extra
    features computed from the noisy graph), the context MLP also receives, per set: an embedding of
    |V(l+1)|, the histogram of the noisy attributes X(l+1, t) (counts / 4 and fractions) and the
    attribute histogram of the prefix's deepest layer V(l) (counts / 4). All are permutation
    invariant. Without them the network must learn counting through attention, and in our CPU runs
    it did not: it denoised each node from its own noisy state only, so count rules between
    consecutive layers (LP's per-label bounds) were met only by chance."""

    def __init__(self, num_categories: int, dim: int, num_mpnn: int, num_tf: int, heads: int, set_features: bool = False):
        super().__init__()
        self.num_categories = num_categories
        self.encoder = DAGEncoder(num_categories, dim, num_mpnn)
        self.t_emb = SinusoidalEmbedding(dim, scale=1.0)
        self.layer_emb = SinusoidalEmbedding(dim)
        self.x_emb = nn.Embedding(num_categories, dim)
        self.set_features = set_features
        if set_features:
            self.size_emb = SinusoidalEmbedding(dim)  # emb(|V(l+1)|)
            self.hist_proj = nn.Linear(2 * num_categories, dim)  # noisy histogram of X(l+1, t)
            self.front_proj = nn.Linear(num_categories, dim)  # histogram of V(l)
        n_in = 7 if set_features else 4
        self.ctx = nn.Sequential(nn.Linear(n_in * dim, dim), nn.GELU(), nn.Linear(dim, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, num_tf, enable_nested_tensor=False)  # no positional encoding
        self.out = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_categories))

    def graph_context(self, attr, depth, edge_index, batch, num_graphs, cond) -> torch.Tensor:
        """(G, d) or (G, 2d) representation of each prefix G(≤l) (reused across denoising steps):
        the pooled encoder state, plus the projected attribute histogram of its deepest layer."""
        g = self.encoder(attr, depth, edge_index, batch, num_graphs, cond=cond)[1]  # (G, d)
        if not self.set_features:
            return g
        hist = frontier_histogram(attr, depth, batch, num_graphs, self.num_categories)  # (G, C)
        return torch.cat([g, self.front_proj(hist / 4.0)], -1)  # (G, 2d)

    def forward(self, g, x_t, pad_mask, t, layer_idx, cond) -> torch.Tensor:
        # g (S, d | 2d) prefix vectors of S sets (graph_context); x_t (S, M) noisy attrs padded;
        # pad_mask (S, M) True = padding; t (S,) timesteps; layer_idx (S,) l; cond (S, d) label embeddings
        parts = [g, self.t_emb(t), self.layer_emb(layer_idx), cond]
        if self.set_features:
            real = (~pad_mask).to(torch.float32)  # (S, M)
            k = real.sum(1)  # (S,) |V(l+1)|
            counts = (nn.functional.one_hot(x_t, self.num_categories) * real[..., None]).sum(1)  # (S, C)
            parts += [self.size_emb(k), self.hist_proj(torch.cat([counts / 4.0, counts / k.clamp_min(1)[:, None]], -1))]
        ctx = self.ctx(torch.cat(parts, -1))  # (S, d)
        tokens = self.x_emb(x_t) + ctx[:, None, :]  # (S, M, d)
        h = self.transformer(tokens, src_key_padding_mask=pad_mask)
        return self.out(h)  # (S, M, C)


class EdgeDenoiser(nn.Module):
    """Logit that candidate edge (u, v) exists, given the graph with the current noisy edges.

    With `set_features`, the candidate's input also holds its view of v's noisy predecessor set
    (module doc): rules such as "one or two predecessors, with distinct attributes, one in the
    previous layer" are about that whole set, and the MPNN's sums over it blur exact counts
    (without these inputs, 1% of new nodes and 18.5% of LP graphs broke such a rule with true
    prefixes and attributes given, measured on the LP dataset's validation graphs). Counts are capped at
    `MAX_COUNT`, the gap at `MAX_GAP`."""

    MAX_COUNT, MAX_GAP = 7, 16

    def __init__(self, num_categories: int, dim: int, num_mpnn: int, set_features: bool = False):
        super().__init__()
        self.num_categories = num_categories
        self.set_features = set_features
        if set_features:  # one embedding per statistic, summed into the candidate's input
            self.others_emb = nn.Embedding(self.MAX_COUNT + 1, dim)
            self.same_emb = nn.Embedding(self.MAX_COUNT + 1, dim)
            self.prev_emb = nn.Embedding(self.MAX_COUNT + 1, dim)
            self.gap_emb = nn.Embedding(self.MAX_GAP, dim)
        self.encoder = DAGEncoder(num_categories, dim, num_mpnn, num_flags=2)
        self.t_emb = SinusoidalEmbedding(dim)
        # MLP([h_u, h_v, emb(t)]); its first Linear is split into three projections applied per node / per graph
        # before the gather, which is the same function at a third of the cost on the K candidates
        self.proj_u = nn.Linear(dim, dim)
        self.proj_v = nn.Linear(dim, dim, bias=False)
        self.proj_t = nn.Linear(dim, dim, bias=False)
        self.state_emb = nn.Embedding(2, dim)  # the candidate's own noisy state e_t(u, v) (DiGress-style input)
        self.mlp = nn.Sequential(nn.GELU(), nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, 1))

    def forward(self, attr, depth, flag, edge_index, batch, num_graphs, t, cond, cand_src, cand_dst, cand_ex, cand_state):
        # attr/depth/flag/batch (N,) augmented graphs; edge_index (2, E) fixed + noisy edges;
        # t (G,) and cond (G, d) per graph; cand_src/cand_dst (K,) node ids; cand_ex (K,) graph of each candidate;
        # cand_state (K,) int64 current noisy state of each candidate (1 = present in edge_index)
        te = self.t_emb(t)  # (G, d)
        h, _ = self.encoder(attr, depth, edge_index, batch, num_graphs, cond=cond + te, flag=flag)  # (N, d)
        z = self.proj_u(h)[cand_src] + self.proj_v(h)[cand_dst] + self.proj_t(te)[cand_ex] + self.state_emb(cand_state)  # (K, d)
        if self.set_features:
            z = z + self.predecessor_set_features(attr, depth, cand_src, cand_dst, cand_state)
        return self.mlp(z).squeeze(-1)  # (K,)

    def predecessor_set_stats(self, attr, depth, cand_src, cand_dst, cand_state) -> tuple[torch.Tensor, ...]:
        """Each candidate's view of its target's noisy predecessor set, as four (K,) int64 tensors:
        other present candidates into v, those of them with u's attribute, those of them in v's
        previous layer (each capped at MAX_COUNT), and the layer gap depth(v) − depth(u) − 1
        (capped at MAX_GAP − 1)."""
        on = cand_state.to(torch.float32)  # (K,) 1 = candidate currently present
        gap = depth[cand_dst] - depth[cand_src]  # (K,) >= 1
        prev = on * (gap == 1)  # (K,) present and from v's previous layer
        n, a_u = attr.shape[0], attr[cand_src]
        count = on.new_zeros(n).index_add_(0, cand_dst, on)  # (N,) present candidates into each node
        prev_count = on.new_zeros(n).index_add_(0, cand_dst, prev)  # (N,)
        same = on.new_zeros(n, self.num_categories).index_put_((cand_dst, a_u), on, accumulate=True)  # (N, C)
        cap = self.MAX_COUNT
        others = (count[cand_dst] - on).long().clamp(0, cap)  # the candidate itself left out
        same_others = (same[cand_dst, a_u] - on).long().clamp(0, cap)
        prev_others = (prev_count[cand_dst] - prev).long().clamp(0, cap)
        return others, same_others, prev_others, (gap - 1).clamp(0, self.MAX_GAP - 1)

    def predecessor_set_features(self, attr, depth, cand_src, cand_dst, cand_state) -> torch.Tensor:
        """(K, d): the sum of the embeddings of `predecessor_set_stats`."""
        others, same, prev, gap = self.predecessor_set_stats(attr, depth, cand_src, cand_dst, cand_state)
        return self.others_emb(others) + self.same_emb(same) + self.prev_emb(prev) + self.gap_emb(gap)
