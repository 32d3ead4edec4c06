"""TGraph (Khizbullin et al., 2024): GraphSAGE + channel self-attention + cross-configuration
attention, scoring B configurations of one graph (lower score = predicted faster).

    X      = StandardScaled node_feat[:134] ⊕ E_layout(node_feat[134:140]) ⊕ E_layout(config)
             ⊕ E_opcode(opcode)                                             (TGraph §2.2.5)
    ε^0    = f_in(X)          f_in: Linear-GELU-Linear-GELU, {256, 256}     (TGraph eq. 7)
    η      = A_self(S(N_instance(ε)))          S: L2 SAGE, H -> H/2          (TGraph eq. 2, 4, 5)
    B(ε)   = ε + GELU(concat(η, A_cross(η)))   back to H channels            (TGraph eq. 3, 6)
    score  = f_out(mean_i B_2(B_1(ε^0))_i)                                   (TGraph eq. 7)

Layout: configuration features enter per configurable node (early). Tile (§2.2.5, "late
fusion"): the graph part has no configuration input, so it runs once (node-level A_cross over
one shared state is the identity); `config_feat` is joined after pooling and the
cross-configuration attention acts on the fused per-configuration vectors.

Ablations (TGraph Table 3): ``channel_attention`` (A_self), ``cross_attention`` (A_cross; the
SAGE output then keeps H channels so the residual still matches), ``use_edges`` (no edges = no
message passing). Norm: ``"reference"`` (default; see `layers.ReferenceInstanceNorm`),
``"config"`` (per-configuration InstanceNorm, paper-literal, dense path) or ``"none"``.

Speed: for layout batches with norm "reference"/"none" the forward pass uses
`shared_nodes.SplitState`: nodes no configuration reaches are computed once for all B
configurations. `forward_dense` is the plain (B, N, F) PyG path (used to test the fast path).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import global_mean_pool

from graphcost.data.graph import LAYOUT_CONFIG_DIM, NODE_FEAT_DIM, NODE_FEAT_SCALED, TILE_CONFIG_DIM
from graphcost.models.layers import (
    NUM_OPCODES,
    ChannelSE,
    CrossConfigAttention,
    L2SAGE,
    LayoutEmbedding,
    OpcodeEmbedding,
    ReferenceInstanceNorm,
    check_batch,
    layout_node_features,
    mlp,
    scaled_node_features,
    undirected,
)
from graphcost.models.shared_nodes import Edges, SplitState, sage_split, sage_static


@dataclass
class TGraphConfig:
    hidden: int = 256  # f_in {256, 256} (TGraph eq. 7)
    num_blocks: int = 2  # B_1, B_2 (TGraph §2.3.3)
    opcode_dim: int = 16  # TGraph §2.2.5
    layout_dim: int = 4  # channels per layout entry (TGraph §2.2.5)
    aggr: str = "sum"  # eq. 2's Σ; "mean" also supported
    directed: bool = False  # False: neighbours = producers and consumers
    channel_attention: bool = True
    cross_attention: bool = True
    use_edges: bool = True
    norm: str = "reference"  # "reference" | "config" | "none"
    se_reduction: int = 8  # TGraph eq. 5, 8x bottleneck
    init_temperature: float = 1.0  # T of eq. 6 (learned)
    num_opcodes: int = NUM_OPCODES

    @classmethod
    def small(cls, **overrides) -> "TGraphConfig":
        """A tiny configuration for CPU tests."""
        return cls(**{"hidden": 32, "opcode_dim": 4, "layout_dim": 2, **overrides})


class _Block(nn.Module):
    """One TGraph block (eq. 3-6) and its pieces, applied by TGraph in dense or split form."""

    def __init__(self, cfg: TGraphConfig):
        super().__init__()
        h = cfg.hidden
        out = h // 2 if cfg.cross_attention else h  # concat(η, A_cross(η)) has H channels
        self.norm = ReferenceInstanceNorm(h) if cfg.norm != "none" else None
        self.sage = L2SAGE(h, out, aggr=cfg.aggr)
        self.se = ChannelSE(out, cfg.se_reduction) if cfg.channel_attention else None
        self.cross = CrossConfigAttention(cfg.init_temperature) if cfg.cross_attention else None

    def attend(self, s: Tensor) -> Tensor:
        return self.se(s) if self.se is not None else s  # η = A_self(S(...)) (eq. 4-5)

    def combine(self, eps: Tensor, eta: Tensor, cross: Tensor | None) -> Tensor:
        mixed = torch.cat([eta, cross], dim=-1) if cross is not None else eta
        return eps + F.gelu(mixed)  # TGraph eq. 3


class TGraph(nn.Module):
    """TGraph for `kind` "layout" or "tile"; forward(GraphBatch) -> (B,) scores."""

    name = "tgraph"

    def __init__(self, kind: str = "layout", config: TGraphConfig | None = None):
        super().__init__()
        if kind not in ("layout", "tile"):
            raise ValueError(f"TGraph kind must be 'layout' or 'tile', got {kind!r}")
        if config is None:
            config = TGraphConfig()
        if config.norm not in ("reference", "config", "none"):
            raise ValueError(f"TGraphConfig.norm must be 'reference', 'config' or 'none', got {config.norm!r}")
        if config.cross_attention and config.hidden % 2:
            raise ValueError("TGraphConfig.hidden must be even with cross_attention")
        self.kind, self.config = kind, config
        c = config
        self.layout_emb = LayoutEmbedding(c.layout_dim)
        self.opcode_emb = OpcodeEmbedding(c.opcode_dim, c.num_opcodes)
        in_dim = NODE_FEAT_SCALED + (NODE_FEAT_DIM - NODE_FEAT_SCALED) * c.layout_dim + c.opcode_dim
        if kind == "layout":
            in_dim += LAYOUT_CONFIG_DIM * c.layout_dim
        self.f_in = mlp([in_dim, c.hidden, c.hidden], act=nn.GELU, last_act=True)  # eq. 7 f_in
        self.blocks = nn.ModuleList(_Block(c) for _ in range(c.num_blocks))
        if kind == "layout":
            self.f_out = nn.Linear(c.hidden, 1)  # eq. 7 f_out
        else:  # late fusion of config_feat (TGraph §2.2.5)
            self.config_in = mlp([TILE_CONFIG_DIM, c.hidden, c.hidden], act=nn.GELU, last_act=True)
            self.fuse = mlp([2 * c.hidden, c.hidden], act=nn.GELU, last_act=True)
            self.head_cross = CrossConfigAttention(c.init_temperature) if c.cross_attention else None
            self.f_out = nn.Linear(2 * c.hidden if c.cross_attention else c.hidden, 1)

    # ----------------------------------------------------------------- inputs
    def _edges(self, batch) -> Edges:
        n = batch.node_feat.shape[0]
        ei = batch.edge_index
        if not self.config.use_edges:
            ei = ei[:, :0]
        elif not self.config.directed:
            ei = undirected(ei)
        return Edges.build(ei, n)

    def _static_input(self, batch) -> Tensor:
        """(N, in_dim) node inputs with every layout configuration entry unset (-1)."""
        nf = batch.node_feat
        parts = [scaled_node_features(nf), self.layout_emb(layout_node_features(nf)),
                 self.opcode_emb(batch.node_opcode)]
        if self.kind == "layout":
            unset = nf.new_full((nf.shape[0], LAYOUT_CONFIG_DIM), -1.0)
            parts.append(self.layout_emb(unset))
        return torch.cat(parts, dim=-1)

    def _config_input(self, x_static: Tensor, node_ids: Tensor, cfg: Tensor) -> Tensor:
        """(B, C, in_dim): inputs of configurable nodes under each configuration."""
        emb = self.layout_emb(cfg)  # (B, C, 18 * layout_dim)
        base = x_static[node_ids].unsqueeze(0).expand(cfg.shape[0], -1, -1)
        return torch.cat([base[..., : -emb.shape[-1]], emb], dim=-1)

    # ------------------------------------------------------- split (fast) path
    def _static_pass(self, batch, edges: Edges, num_configs: int) -> list[dict]:
        """Reference-configuration states of every block (shared by all configurations)."""
        x = self._static_input(batch)  # (N, in)
        eps = self.f_in(x)  # (N, H)
        cache = [{"x": x, "eps": eps}]
        for blk in self.blocks:
            c = {}
            if blk.norm is not None:
                c["mean"], c["inv_std"] = blk.norm.stats(eps)
                n_s = blk.norm.apply(eps, c["mean"], c["inv_std"])
            else:
                n_s = eps
            c["n"] = n_s
            c["sage_raw"] = sage_static(blk.sage, n_s, edges)  # (N, H')
            eta = blk.attend(F.normalize(c["sage_raw"], p=2.0, dim=-1))
            cross = CrossConfigAttention.shared_value(eta, num_configs) if blk.cross is not None else None
            eps = blk.combine(eps, eta, cross)
            cache[-1].update(c)
            cache.append({"eps": eps})
        cache[-1]["sum"] = eps.sum(0)
        return cache

    def _dynamic_pass(self, batch, edges: Edges, cache: list[dict], cfg: Tensor) -> Tensor:
        """Scores (B,) of configurations `cfg` (B, C, 18) given the reference-state cache."""
        node_ids, order = torch.sort(batch.config_node_index)
        cfg = cfg[:, order]
        x_dyn = self._config_input(cache[0]["x"], node_ids, cfg)
        state = SplitState(cache[0]["eps"], node_ids, self.f_in(x_dyn))
        for k, blk in enumerate(self.blocks):
            c = cache[k]
            n_dyn = blk.norm.apply(state.dyn, c["mean"], c["inv_std"]) if blk.norm is not None else state.dyn
            s = sage_split(blk.sage, SplitState(c["n"], state.idx, n_dyn), edges, c["sage_raw"])
            last = k + 1 == len(self.blocks)
            if not last:
                eps_in = state.expand(s.idx).dyn  # (B, D', H)
                state = SplitState(cache[k + 1]["eps"], s.idx, self._block_tail(blk, s.dyn, eps_in))
                continue
            # last block: only the node mean is needed, so sum B(ε) = ε + GELU(...) over the
            # dynamic rows without materialising it (eq. 3 then eq. 7's pooling)
            total = cache[-1]["sum"] + state.delta().sum(1)  # Σ_i ε_i per configuration
            gel = self._block_tail(blk, s.dyn, None)  # (B, H) Σ_i GELU(...)
            ref_out = cache[k + 1]["eps"][s.idx] - cache[k]["eps"][s.idx]  # reference GELU(...) rows
            pooled = (total + gel - ref_out.sum(0)) / state.static.shape[0]  # (B, H) mean pool
            return self.f_out(pooled).squeeze(-1)
        pooled = state.mean_pool(cache[-1]["sum"])  # (B, H) global mean pool (eq. 7), no blocks
        return self.f_out(pooled).squeeze(-1)

    @staticmethod
    def _tile_rows(b: int, channels: int) -> int:
        """Nodes per tile so that one (B, tile, channels) float tensor is ~4 MiB (stays in cache)."""
        return max(1, (1 << 20) // max(1, b * channels))

    def _block_tail(self, blk: _Block, s_raw: Tensor, eps_in: Tensor | None) -> Tensor:
        """Eq. 2's L2 norm, eq. 5, eq. 6 and eq. 3 on the dynamic rows s_raw (B, D', H').

        Everything here is per node (A_cross per node and channel, over B), so without
        gradients it runs in node tiles that stay in cache. eps_in (B, D', H) given: returns
        B(ε) = ε + GELU(concat(η, A_cross(η))) (written into eps_in when gradients are off);
        None: returns Σ_i GELU(...) over the rows, (B, H)."""
        b, d, h_out = s_raw.shape
        if d == 0:  # no configurable node: nothing differs from the reference state
            return eps_in if eps_in is not None else s_raw.new_zeros(b, self.config.hidden)
        grad = torch.is_grad_enabled()
        step = d if grad else self._tile_rows(b, h_out)
        sums = []
        for r0 in range(0, d, step):
            eta = blk.attend(F.normalize(s_raw[:, r0:r0 + step], p=2.0, dim=-1))  # (B, t, H')
            cross = blk.cross(eta, dim=0) if blk.cross is not None else None
            g = F.gelu(torch.cat([eta, cross], dim=-1) if cross is not None else eta)  # (B, t, H)
            if eps_in is None:
                sums.append(g.sum(1))
            elif grad:
                return eps_in + g  # one tile when gradients are on
            else:
                eps_in[:, r0:r0 + step] += g
        return torch.stack(sums).sum(0) if eps_in is None else eps_in

    # ------------------------------------------------------------ dense path
    def forward_dense(self, batch) -> Tensor:
        """Reference implementation on full (B, N, H) states with PyG's SAGEConv."""
        check_batch(batch, self.kind, self.config.num_opcodes)
        edges = self._edges(batch)
        x = self._static_input(batch)
        b = batch.num_configs if self.kind == "layout" else 1
        x = x.unsqueeze(0).expand(b, -1, -1).clone()  # (B, N, in)
        if self.kind == "layout":
            node_ids = batch.config_node_index
            x[:, node_ids] = self._config_input(x[0], node_ids, batch.node_config_feat.to(x.dtype))
        ref = self._static_pass(batch, edges, b) if self.config.norm == "reference" else None
        eps = self.f_in(x)
        for k, blk in enumerate(self.blocks):
            if blk.norm is None:
                n = eps
            elif ref is None:  # per-configuration InstanceNorm
                n = blk.norm(eps)
            else:
                n = blk.norm.apply(eps, ref[k]["mean"], ref[k]["inv_std"])
            eta = blk.attend(blk.sage(n, edges.edge_index))  # PyG SAGEConv(normalize=True)
            cross = blk.cross(eta, dim=0) if blk.cross is not None else None
            eps = blk.combine(eps, eta, cross)
        pooled = global_mean_pool(eps, None)  # (B, H)
        if self.kind == "layout":
            return self.f_out(pooled).squeeze(-1)
        return self._tile_head(pooled[0], batch.config_feat)

    # ------------------------------------------------------------------ tile
    def _tile_head(self, graph_emb: Tensor, config_feat: Tensor) -> Tensor:
        """Late fusion: (H,) graph embedding ⊕ per-config embedding -> (B,) scores."""
        cf = torch.sign(config_feat) * torch.log1p(config_feat.abs())  # tile sizes span decades
        c = self.config_in(cf)  # (B, H)
        z = self.fuse(torch.cat([graph_emb.expand_as(c), c], dim=-1))  # (B, H)
        if self.head_cross is not None:
            z = torch.cat([z, self.head_cross(z, dim=0)], dim=-1)  # TGraph eq. 6 over configs
        return self.f_out(z).squeeze(-1)

    # --------------------------------------------------------------- public
    def forward(self, batch) -> Tensor:
        """Scores (B,) for the B configurations of `batch` (one cross-attention group)."""
        if self.kind == "layout" and self.config.norm == "config":
            return self.forward_dense(batch)
        return self.score_chunked(batch, chunk_size=None)

    def score_chunked(self, batch, chunk_size: int | None = 128) -> Tensor:
        """Scores (B,) computing configurations in chunks of `chunk_size` (each chunk is one
        cross-attention group, as at training time). Configuration-independent work is done
        once per distinct chunk length. Use under torch.no_grad() for inference."""
        check_batch(batch, self.kind, self.config.num_opcodes)
        edges = self._edges(batch)
        b = batch.num_configs
        if self.kind == "tile":
            cache = self._static_pass(batch, edges, 1)
            graph_emb = cache[-1]["sum"] / batch.node_feat.shape[0]
            step = chunk_size or b
            return torch.cat([self._tile_head(graph_emb, batch.config_feat[i:i + step])
                              for i in range(0, b, step)])
        if self.config.norm == "config":
            raise ValueError("score_chunked needs norm 'reference' or 'none' (per-config norm is dense-only)")
        step = chunk_size or b
        caches: dict[int, list[dict]] = {}
        out = []
        for i in range(0, b, step):
            cfg = batch.node_config_feat[i:i + step].to(batch.node_feat.dtype)
            if cfg.shape[0] not in caches:
                caches[cfg.shape[0]] = self._static_pass(batch, edges, cfg.shape[0])
            out.append(self._dynamic_pass(batch, edges, caches[cfg.shape[0]], cfg))
        return torch.cat(out)
