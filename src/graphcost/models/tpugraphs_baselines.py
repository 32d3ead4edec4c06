"""The TpuGraphs baseline models (Phothilimthana et al. 2023, §4.2 and §4.4, Appendix B-C).

Common shape (§4.2, Fig. 4): opcode embedding ⊕ node features -> GNN -> pooling -> feedforward
-> one scalar per configuration (lower = predicted faster).

* `SageLayout` ("sage"): 3-layer GraphSAGE with residual connections; per-node layout config
  features (18) concatenated to node features, zeros on non-configurable nodes (§4.4). Supports
  Graph Segment Training (`segment_forward`, §4.4 and Appendix C.1).
* Tile (§4.4): `TileMLP` ("tile-mlp": opcode embedding ⊕ node features, summed over nodes,
  ⊕ config features, 3-layer MLP); `TileGNN` with gnn "sage"/"gcn" and join "early" (config
  features replicated onto every node) or "late" (joined after pooling).

Graph read-out (as the TpuGraphs reference code): mean ⊕ L2-normalised sum over nodes.
GNN layers see edges in both directions.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, SAGEConv, global_add_pool, global_mean_pool
from torch_geometric.utils import subgraph

from graphcost.data.graph import LAYOUT_CONFIG_DIM, NODE_FEAT_DIM, TILE_CONFIG_DIM
from graphcost.models.layers import NUM_OPCODES, OpcodeEmbedding, check_batch, mlp, per_node_config, undirected


@dataclass
class BaselineConfig:
    hidden: int = 128  # Table 5: layout {100, 200}, tile {64, 128}
    opcode_dim: int = 64  # Table 5: {64, 128(, 256)}
    num_layers: int = 3  # §4.4 layout: 3-layer GraphSAGE; tile {2, 3}
    num_opcodes: int = NUM_OPCODES

    @classmethod
    def small(cls, **overrides) -> "BaselineConfig":
        return cls(**{"hidden": 16, "opcode_dim": 4, "num_layers": 2, **overrides})


def readout(x: Tensor) -> Tensor:
    """(..., N, F) -> (..., 2F): mean ⊕ L2-normalised sum over nodes (TpuGraphs reference)."""
    return torch.cat([global_mean_pool(x, None), F.normalize(global_add_pool(x, None), dim=-1)], dim=-1)


def signed_log(x: Tensor) -> Tensor:
    """sign(x)·log(1+|x|): tile sizes and their products span several decades."""
    return torch.sign(x) * torch.log1p(x.abs())


class ResidualGNN(nn.Module):
    """x <- x + act(conv_k(x)) for k = 1..L, on (N, F) or (B, N, F) states (§4.4 residual GNN)."""

    def __init__(self, hidden: int, num_layers: int, gnn: str = "sage"):
        super().__init__()
        if gnn not in ("sage", "gcn"):
            raise ValueError(f"gnn must be 'sage' or 'gcn', got {gnn!r}")
        make = (lambda: SAGEConv(hidden, hidden)) if gnn == "sage" else (lambda: GCNConv(hidden, hidden))
        self.convs = nn.ModuleList(make() for _ in range(num_layers))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        for conv in self.convs:
            x = x + F.leaky_relu(conv(x, edge_index))
        return x


class SageLayout(nn.Module):
    """TpuGraphs layout baseline: [node_feat ⊕ E(opcode) ⊕ config (0 if unset)] -> prenet ->
    residual 3-layer GraphSAGE -> readout -> MLP -> score, for each of B configurations."""

    name = "sage"

    def __init__(self, kind: str = "layout", config: BaselineConfig | None = None):
        super().__init__()
        if kind != "layout":
            raise ValueError(f"model 'sage' is the TpuGraphs layout baseline; kind {kind!r} is not supported")
        self.kind, self.config = kind, config or BaselineConfig()
        c = self.config
        self.opcode_emb = OpcodeEmbedding(c.opcode_dim, c.num_opcodes)
        self.prenet = mlp([NODE_FEAT_DIM + c.opcode_dim + LAYOUT_CONFIG_DIM, c.hidden, c.hidden], nn.LeakyReLU, True)
        self.gnn = ResidualGNN(c.hidden, c.num_layers, "sage")
        self.head = mlp([2 * c.hidden, c.hidden, 1], nn.LeakyReLU)

    def node_inputs(self, batch) -> Tensor:
        """(B, N, 140 + opcode_dim + 18) GNN inputs; config features are 0 on unset nodes (§4.4)."""
        cfg = per_node_config(batch, 0.0)  # (B, N, 18)
        node = torch.cat([batch.node_feat, self.opcode_emb(batch.node_opcode)], dim=-1)  # (N, .)
        return torch.cat([node.unsqueeze(0).expand(cfg.shape[0], -1, -1), cfg], dim=-1)

    def embed_nodes(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.gnn(self.prenet(x), edge_index)  # (B, N, H)

    def forward(self, batch) -> Tensor:
        check_batch(batch, "layout", self.config.num_opcodes)
        h = self.embed_nodes(self.node_inputs(batch), undirected(batch.edge_index))
        return self.head(readout(h)).squeeze(-1)

    def segment_forward(self, batch, num_segments: int, rng: np.random.Generator) -> Tensor:
        """Graph Segment Training (TpuGraphs §4.4, Appendix C.1; Cao et al. 2023), training only.

        Nodes are split into `num_segments` contiguous segments in node-id order (TpuGraphs
        node ids are topologically ordered). One segment [i, i + L), L = ceil(N / num_segments),
        i drawn at random, is chosen; the forward pass uses ALL nodes and edges, but gradients
        flow only through the chosen segment's node embeddings: its nodes are embedded by a
        pass on the segment's induced subgraph with gradients, every other node by a full-graph
        pass without gradients (no historical embeddings, no segment dropout). The scores are
        then used with any loss; memory for backward scales with L instead of N.
        """
        check_batch(batch, "layout", self.config.num_opcodes)
        n = batch.node_feat.shape[0]
        if num_segments < 1:
            raise ValueError(f"num_segments must be >= 1, got {num_segments}")
        length = math.ceil(n / num_segments)
        start = int(rng.integers(0, max(1, n - length + 1)))
        seg = torch.arange(start, min(n, start + length), device=batch.node_feat.device)
        x = self.node_inputs(batch)  # (B, N, in)
        edge_index = undirected(batch.edge_index)
        with torch.no_grad():
            h_full = self.embed_nodes(x, edge_index)  # (B, N, H), no graph for backward
        seg_edges, _ = subgraph(seg, edge_index, relabel_nodes=True, num_nodes=n)
        h_seg = self.embed_nodes(x[:, seg], seg_edges)  # (B, L, H) with gradients
        h = h_full.clone()
        h[:, seg] = h_seg
        return self.head(readout(h)).squeeze(-1)


class TileMLP(nn.Module):
    """TpuGraphs tile MLP baseline (§4.4): Σ_nodes [E(opcode) ⊕ node_feat] ⊕ config -> 3-layer MLP."""

    name = "tile-mlp"

    def __init__(self, kind: str = "tile", config: BaselineConfig | None = None):
        super().__init__()
        if kind != "tile":
            raise ValueError(f"model 'tile-mlp' is a tile baseline; kind {kind!r} is not supported")
        self.kind, self.config = kind, config or BaselineConfig()
        c = self.config
        self.opcode_emb = OpcodeEmbedding(c.opcode_dim, c.num_opcodes)
        d = NODE_FEAT_DIM + c.opcode_dim + TILE_CONFIG_DIM
        self.mlp = mlp([d, c.hidden, c.hidden, 1], nn.LeakyReLU)

    def forward(self, batch) -> Tensor:
        check_batch(batch, "tile", self.config.num_opcodes)
        nodes = torch.cat([batch.node_feat, self.opcode_emb(batch.node_opcode)], dim=-1).sum(0)  # (D,)
        cfg = signed_log(batch.config_feat)  # (B, 24)
        return self.mlp(torch.cat([nodes.expand(cfg.shape[0], -1), cfg], dim=-1)).squeeze(-1)


class TileGNN(nn.Module):
    """TpuGraphs tile GNN baselines (§4.4): GraphSAGE or GCN with residual connections;
    ``join="early"`` replicates config features onto every node before the GNN (like the
    original TPU cost model), ``join="late"`` runs the GNN once on node features and joins the
    config features to the pooled graph embedding."""

    def __init__(self, kind: str = "tile", config: BaselineConfig | None = None, gnn: str = "sage", join: str = "early"):
        super().__init__()
        if kind != "tile":
            raise ValueError(f"model '{join}-{gnn}' is a tile baseline; kind {kind!r} is not supported")
        if join not in ("early", "late"):
            raise ValueError(f"join must be 'early' or 'late', got {join!r}")
        self.kind, self.config, self.gnn_name, self.join = kind, config or BaselineConfig(), gnn, join
        self.name = f"{join}-{gnn}"
        c = self.config
        self.opcode_emb = OpcodeEmbedding(c.opcode_dim, c.num_opcodes)
        node_dim = NODE_FEAT_DIM + c.opcode_dim
        self.node_in = nn.Linear(node_dim, c.hidden)
        self.cfg_in = nn.Linear(TILE_CONFIG_DIM, c.hidden, bias=False) if join == "early" else None
        self.gnn = ResidualGNN(c.hidden, c.num_layers, gnn)
        head_in = 2 * c.hidden + (TILE_CONFIG_DIM if join == "late" else 0)
        self.head = mlp([head_in, c.hidden, 1], nn.LeakyReLU)

    def forward(self, batch) -> Tensor:
        check_batch(batch, "tile", self.config.num_opcodes)
        edge_index = undirected(batch.edge_index)
        node = self.node_in(torch.cat([batch.node_feat, self.opcode_emb(batch.node_opcode)], dim=-1))  # (N, H)
        cfg = signed_log(batch.config_feat)  # (B, 24)
        if self.cfg_in is not None:  # join early
            # Linear on [node ⊕ config] = node part + config part, broadcast to (B, N, H)
            x = F.leaky_relu(node.unsqueeze(0) + self.cfg_in(cfg).unsqueeze(1))
            g = readout(self.gnn(x, edge_index))  # (B, 2H)
        else:
            g = readout(self.gnn(F.leaky_relu(node), edge_index))  # (2H,) computed once
            g = torch.cat([g.expand(cfg.shape[0], -1), cfg], dim=-1)  # (B, 2H + 24)
        return self.head(g).squeeze(-1)
