"""The learned TPU performance model of Kaufman et al. (MLSys'21, §3.2, §6.2, Tables 4-6).

    X_i   = node_feat_i ⊕ E(opcode_i) ⊕ config features        (kernel features, option 1)
    ε^0   = f_1(X)
    ε^k   = l2( f_3^k( concat(ε^{k-1}_i, Σ_{j ∈ N(i)} f_2^k(ε^{k-1}_j)) ) )   (GraphSAGE, §3.2)
    κ     = reduction(node_layers(ε^K));   score = Linear(κ)    (lower = predicted faster)

Options (KaufmanConfig):
* encoder "sage" | "gat" | "none" (Table 4 columns). Directed (default, the paper's 'vanilla'):
  incoming and outgoing neighbours get separate feedforward layers; undirected: one shared
  layer over both (Table 3 'Undirected').
* reduction "per_node" (Linear per node, summed), "column" (column-wise mean ⊕ max, Table 5),
  "lstm" (final state of an LSTM over topologically sorted nodes), "transformer" (encoder over
  the nodes, summed, Table 5).
Config features: tile `config_feat` (24, signed-log) replicated onto every node; layout the
18 per-node layout values (-1 on non-configurable nodes).

References:
    [Kaufman et al.] S. J. Kaufman et al. A Learned Performance Model for Tensor Processing Units. MLSys 2021.
        https://arxiv.org/abs/2008.01040
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GATConv, SAGEConv

from graphcost.data.graph import LAYOUT_CONFIG_DIM, NODE_FEAT_DIM, TILE_CONFIG_DIM
from graphcost.models.layers import NUM_OPCODES, OpcodeEmbedding, check_batch, mlp, per_node_config, undirected

ENCODERS = ("sage", "gat", "none")
REDUCTIONS = ("per_node", "column", "lstm", "transformer")


@dataclass
class KaufmanConfig:
    encoder: str = "sage"
    reduction: str = "column"
    directed: bool = True
    hidden: int = 256  # Table 6: 512-1024 on TPU-scale training
    opcode_dim: int = 256  # Table 5
    num_layers: int = 3  # Table 5: GNN layers
    aggr: str = "mean"  # Table 5: GraphSAGE aggregator
    node_layers: int = 3  # Table 5: node final layers
    gat_heads: int = 4  # Table 6
    transformer_layers: int = 1  # Table 6
    transformer_heads: int = 4  # Table 5
    dropout: float = 0.1  # Table 6
    num_opcodes: int = NUM_OPCODES

    @classmethod
    def small(cls, **overrides) -> "KaufmanConfig":
        return cls(**{"hidden": 16, "opcode_dim": 4, "num_layers": 2, "node_layers": 1, "dropout": 0.0, **overrides})


def topological_order(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Kahn's algorithm (smallest id first) on producer->consumer edges; raises on a cycle."""
    src, dst = edge_index.cpu().numpy()
    indeg = np.bincount(dst, minlength=num_nodes)
    order_e = np.argsort(src, kind="stable")
    starts = np.searchsorted(src[order_e], np.arange(num_nodes + 1))
    import heapq

    ready = [int(i) for i in np.flatnonzero(indeg == 0)]
    heapq.heapify(ready)
    out = []
    while ready:
        u = heapq.heappop(ready)
        out.append(u)
        for v in dst[order_e[starts[u]:starts[u + 1]]]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(ready, int(v))
    if len(out) != num_nodes:
        raise ValueError("edge_index: graph has a cycle; the LSTM reduction needs a DAG")
    return torch.as_tensor(out, dtype=torch.long, device=edge_index.device)


class _SageLayer(nn.Module):
    """One Kaufman GraphSAGE layer: l2(ReLU(W_r ε_i + W_in Σ_in ε_j + W_out Σ_out ε_j))."""

    def __init__(self, hidden: int, directed: bool, aggr: str):
        super().__init__()
        self.directed = directed
        self.inc = SAGEConv(hidden, hidden, aggr=aggr)  # f_3 ∘ [ε_i, Σ f_2(ε_j)], f_2 linear
        self.out = SAGEConv(hidden, hidden, aggr=aggr, root_weight=False) if directed else None

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        if self.directed:
            assert self.out is not None  # directed: built in __init__
            h = self.inc(x, edge_index) + self.out(x, edge_index.flip(0))
        else:
            h = self.inc(x, undirected(edge_index))
        return F.normalize(F.relu(h), p=2.0, dim=-1)  # Kaufman §3.2, l2


class _GatLayer(nn.Module):
    """Multi-head GAT layer (Kaufman §6.2 Q3); directed: separate attention over in/out edges."""

    def __init__(self, hidden: int, directed: bool, heads: int):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"KaufmanConfig.hidden ({hidden}) must be divisible by gat_heads ({heads})")
        self.directed = directed
        self.inc = GATConv(hidden, hidden // heads, heads=heads)
        self.out = GATConv(hidden, hidden // heads, heads=heads, add_self_loops=False) if directed else None

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        # GATConv has no (B, N, F) support: the graph is replicated B times with node offsets
        b, n, f = x.shape
        offs = (torch.arange(b, device=x.device) * n).view(b, 1, 1)
        flat_x = x.reshape(b * n, f)
        if self.directed:
            ei = (edge_index.unsqueeze(0) + offs).transpose(0, 1).reshape(2, -1)
            assert self.out is not None  # directed: built in __init__
            h = self.inc(flat_x, ei) + self.out(flat_x, ei.flip(0))
        else:
            ei = (undirected(edge_index).unsqueeze(0) + offs).transpose(0, 1).reshape(2, -1)
            h = self.inc(flat_x, ei)
        return F.elu(h).reshape(b, n, -1)


class Kaufman(nn.Module):
    """Kaufman et al. performance model; forward(GraphBatch) -> (B,) scores."""

    name = "kaufman"

    def __init__(self, kind: str = "tile", config: KaufmanConfig | None = None):
        super().__init__()
        if kind not in ("layout", "tile"):
            raise ValueError(f"Kaufman kind must be 'layout' or 'tile', got {kind!r}")
        c = config or KaufmanConfig()
        if c.encoder not in ENCODERS:
            raise ValueError(f"KaufmanConfig.encoder must be one of {ENCODERS}, got {c.encoder!r}")
        if c.reduction not in REDUCTIONS:
            raise ValueError(f"KaufmanConfig.reduction must be one of {REDUCTIONS}, got {c.reduction!r}")
        self.kind, self.config = kind, c
        self.opcode_emb = OpcodeEmbedding(c.opcode_dim, c.num_opcodes)
        cfg_dim = TILE_CONFIG_DIM if kind == "tile" else LAYOUT_CONFIG_DIM
        self.f1 = mlp([NODE_FEAT_DIM + c.opcode_dim + cfg_dim, c.hidden], last_act=True)  # ε^0 = f_1(X)
        if c.encoder == "sage":
            self.layers = nn.ModuleList(_SageLayer(c.hidden, c.directed, c.aggr) for _ in range(c.num_layers))
        elif c.encoder == "gat":
            self.layers = nn.ModuleList(_GatLayer(c.hidden, c.directed, c.gat_heads) for _ in range(c.num_layers))
        else:
            self.layers = nn.ModuleList()
        self.node_mlp = mlp([c.hidden] * (c.node_layers + 1), last_act=True, dropout=c.dropout)
        if c.reduction == "lstm":
            self.lstm = nn.LSTM(c.hidden, c.hidden, batch_first=True)
        elif c.reduction == "transformer":
            layer = nn.TransformerEncoderLayer(c.hidden, c.transformer_heads, 2 * c.hidden, c.dropout, batch_first=True)
            self.transformer = nn.TransformerEncoder(layer, c.transformer_layers, enable_nested_tensor=False)
        self.out = nn.Linear(2 * c.hidden if c.reduction == "column" else c.hidden, 1)

    def node_inputs(self, batch) -> Tensor:
        """(B, N, 140 + opcode_dim + config_dim): config features on every node (option 1)."""
        node = torch.cat([batch.node_feat, self.opcode_emb(batch.node_opcode)], dim=-1)  # (N, .)
        b = batch.num_configs
        if self.kind == "tile":
            cf = batch.config_feat
            cfg = (torch.sign(cf) * torch.log1p(cf.abs())).unsqueeze(1).expand(-1, node.shape[0], -1)
        else:
            cfg = per_node_config(batch, -1.0)
        return torch.cat([node.unsqueeze(0).expand(b, -1, -1), cfg], dim=-1)

    def forward(self, batch) -> Tensor:
        check_batch(batch, self.kind, self.config.num_opcodes)
        x = self.f1(self.node_inputs(batch))  # (B, N, H)
        for layer in self.layers:
            x = layer(x, batch.edge_index)
        x = self.node_mlp(x)  # (B, N, H)
        red = self.config.reduction
        if red == "per_node":
            return self.out(x).squeeze(-1).sum(-1)  # Σ_i Linear(ε_i)
        if red == "column":
            kappa = torch.cat([x.mean(1), x.amax(1)], dim=-1)  # column-wise mean ⊕ max
        elif red == "lstm":
            order = topological_order(batch.edge_index, x.shape[1])
            _, (h_n, _) = self.lstm(x[:, order])
            kappa = h_n[-1]  # final LSTM state
        else:
            kappa = self.transformer(x).sum(1)  # Transformer, sum reduction
        return self.out(kappa).squeeze(-1)
