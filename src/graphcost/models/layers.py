"""Layers shared by the cost models (TGraph, TpuGraphs baselines, Kaufman et al.).

Conventions. Per-configuration node states are ``(B, N, F)`` (B configurations of one graph,
N nodes, F channels); configuration-independent ones are ``(N, F)``. PyTorch Geometric's
message passing works on either, since its node dimension is ``-2``.

References:
* TGraph = Khizbullin et al., "Graph Neural Networks with Configuration Cross-Attention for
  Tensor Compilers", arXiv:2405.16623, 2024 (eq. 2-6, §2.2.4-2.2.5).
* TpuGraphs = Phothilimthana et al., "TpuGraphs: A Performance Prediction Dataset on Large Tensor
  Computational Graphs", NeurIPS 2023 Datasets and Benchmarks (§4.2, §4.4).
* Kaufman = Kaufman et al., "A Learned Performance Model for Tensor Processing Units", MLSys 2021
  (§3.2).

Every layer with parameters of its own has ``reset_parameters()`` (the PyTorch convention), so
``model.apply(lambda m: getattr(m, "reset_parameters", lambda: None)())`` re-initialises a whole
model. Constructors do not call it: that would draw the initial weights a second time and change
what a seed gives.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import SAGEConv

from graphcost.data.graph import LAYOUT_CONFIG_DIM, NODE_FEAT_DIM, NODE_FEAT_SCALED, TILE_CONFIG_DIM

NUM_OPCODES = 128  # XLA HloOpcode ids used by TpuGraphs are < 121 (tpu_graphs hlo_opcode.h)
LAYOUT_VALUES = 7  # a layout entry is one of -1, 0, ..., 5 (TGraph §2.2.3)


def check_batch(batch, kind: str | None = None, num_opcodes: int = NUM_OPCODES) -> None:
    """Raise a ValueError naming the field and the problem if `batch` cannot feed a model."""

    def fail(field: str, problem: str) -> None:
        raise ValueError(f"GraphBatch {batch.graph_name!r}: field {field!r}: {problem}")

    if kind is not None and batch.kind != kind:
        fail("kind", f"model expects {kind!r} batches, got {batch.kind!r}")
    nf = batch.node_feat
    if nf.dim() != 2 or nf.shape[1] != NODE_FEAT_DIM:
        fail("node_feat", f"expected shape (N, {NODE_FEAT_DIM}), got {tuple(nf.shape)}")
    n = nf.shape[0]
    if n == 0:
        fail("node_feat", "graph has no nodes")
    if tuple(batch.node_opcode.shape) != (n,):
        fail("node_opcode", f"expected shape ({n},), got {tuple(batch.node_opcode.shape)}")
    if int(batch.node_opcode.min()) < 0 or int(batch.node_opcode.max()) >= num_opcodes:
        fail("node_opcode", f"opcode ids must lie in [0, {num_opcodes})")
    ei = batch.edge_index
    if ei.dim() != 2 or ei.shape[0] != 2:
        fail("edge_index", f"expected shape (2, E), got {tuple(ei.shape)}")
    if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= n):
        fail("edge_index", f"node ids must lie in [0, {n})")
    b = batch.num_configs
    if batch.kind == "layout":
        if batch.config_node_index is None or batch.node_config_feat is None:
            fail("node_config_feat", "layout batches need config_node_index and node_config_feat")
        c = batch.config_node_index.shape[0]
        if tuple(batch.node_config_feat.shape) != (b, c, LAYOUT_CONFIG_DIM):
            fail("node_config_feat", f"expected shape ({b}, {c}, {LAYOUT_CONFIG_DIM}), "
                 f"got {tuple(batch.node_config_feat.shape)}")
        if c and (int(batch.config_node_index.min()) < 0 or int(batch.config_node_index.max()) >= n):
            fail("config_node_index", f"node ids must lie in [0, {n})")
    else:
        if batch.config_feat is None or tuple(batch.config_feat.shape) != (b, TILE_CONFIG_DIM):
            shape = None if batch.config_feat is None else tuple(batch.config_feat.shape)
            fail("config_feat", f"expected shape ({b}, {TILE_CONFIG_DIM}), got {shape}")


class OpcodeEmbedding(nn.Embedding):
    """Learned opcode embedding: ``e_i = E[opcode_i]`` (TGraph §2.2.5, TpuGraphs §4.2).

    Input (N,) int64 opcode ids in [0, num_opcodes); output (N, dim).
    """

    def __init__(self, dim: int, num_opcodes: int = NUM_OPCODES):
        super().__init__(num_opcodes, dim)


class LayoutEmbedding(nn.Module):
    """One learned table for every layout value, shared by node_feat[134:140] and the per-node
    layout configuration features (TGraph §2.2.4-2.2.5: -1 padding makes both comparable).

    Each entry v in {-1, 0, ..., 5} maps to ``T[v + 1]`` (T has 7 rows of `channels`); the
    embeddings of the K entries are concatenated: input (..., K) -> output (..., K * channels).
    """

    def __init__(self, channels: int = 4):
        super().__init__()
        self.channels = channels
        self.table = nn.Embedding(LAYOUT_VALUES, channels)

    def reset_parameters(self) -> None:
        self.table.reset_parameters()

    def forward(self, values: Tensor) -> Tensor:
        idx = torch.round(values).long() + 1  # -1..5 -> 0..6
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= LAYOUT_VALUES):
            raise ValueError("layout values must lie in {-1, 0, ..., 5} (TGraph §2.2.3); "
                             f"got range [{int(idx.min()) - 1}, {int(idx.max()) - 1}]")
        out = self.table(idx)  # (..., K, channels)
        return out.flatten(-2)  # (..., K * channels)


class L2SAGE(SAGEConv):
    """GraphSAGE with L2 normalisation (TGraph eq. 2; Kaufman §3.2):

        S_i(ε) = N_L2( f_2( concat(ε_i, Σ_{j ∈ neighbours(i)} f_1(ε_j)) ) )

    With f_1 linear (default) the composition of f_1 and the right half of f_2 is one matrix, so
    eq. 2 is exactly PyG's ``SAGEConv(normalize=True)``: ``lin_r`` acts on ε_i, ``lin_l`` on the
    aggregated neighbours, and the output is L2-normalised per node. ``project=True`` makes
    f_1 = ReLU(Linear) as in PyG. ``aggr="sum"`` is eq. 2's Σ; ``"mean"`` is Kaufman's choice.
    Works on (N, F) or (B, N, F) inputs (edges along dim -2).
    """

    def __init__(self, in_channels: int, out_channels: int, aggr: str = "sum", project: bool = False):
        super().__init__(in_channels, out_channels, aggr=aggr, normalize=True, project=project)


class ChannelSE(nn.Module):
    """Channel-wise self-attention, squeeze-and-excitation style (TGraph eq. 5):

        A_self(ε) = ε ∘ σ( f_square( ReLU( f_excitation(ε) ) ) )

    f_excitation: F -> F / reduction (8x bottleneck), f_square: F / reduction -> F. Per node, so
    it applies to any (..., F) tensor.
    """

    def __init__(self, channels: int, reduction: int = 8):
        super().__init__()
        hidden = max(1, channels // reduction)
        self.excite = nn.Linear(channels, hidden)
        self.square = nn.Linear(hidden, channels)

    def reset_parameters(self) -> None:
        self.excite.reset_parameters()
        self.square.reset_parameters()

    def gate(self, x: Tensor) -> Tensor:  # (..., F) -> (..., F): σ(f_square(ReLU(f_excitation(x))))
        z = self.square(F.relu(self.excite(x)))
        return torch.sigmoid(z) if torch.is_grad_enabled() else z.sigmoid_()

    def forward(self, x: Tensor) -> Tensor:  # (..., F) -> (..., F)
        if torch.is_grad_enabled():
            return x * self.gate(x)  # TGraph eq. 5
        return self.gate(x).mul_(x)  # same, without temporaries


class CrossConfigAttention(nn.Module):
    """Cross-configuration attention (TGraph eq. 6):

        A_cross(ε)_i^b = ε_i^b ∘ w_i^b,   w_i^b = Softmax_b(ε_i^b / T)            (scale "softmax")
                                         w_i^b = B · Softmax_b(ε_i^b / T)        (scale "mean", default)

    The softmax runs over the configuration axis b, separately for every node i and channel;
    T > 0 is a learnable temperature (stored as log T). Input (B, N, F) with `dim=0` (default).

    Why "mean": with the paper-literal weights a node whose state is the same in all B
    configurations (every node no configuration reaches) gets weight exactly 1/B, so the whole
    shared part of the graph is scaled by the batch size: a model trained on batches of 64
    scores batches of 128 with those states halved. B · Softmax is the same attention relative
    to uniform weights (the weights average to 1 over the batch): a shared state passes through
    unchanged whatever B is, and a configuration's score depends on its batch only through the
    configurations that actually differ from it (see `shared_value`).
    """

    def __init__(self, init_temperature: float = 1.0, scale: str = "mean"):
        super().__init__()
        if scale not in ("mean", "softmax"):
            raise ValueError(f"CrossConfigAttention scale must be 'mean' or 'softmax', got {scale!r}")
        self.scale = scale
        self.init_temperature = float(init_temperature)
        self.log_temperature = nn.Parameter(torch.tensor(self.init_temperature).log())

    def reset_parameters(self) -> None:
        with torch.no_grad():  # the constructor's value, computed the same way
            self.log_temperature.copy_(torch.tensor(self.init_temperature).log())

    @property
    def temperature(self) -> Tensor:
        return self.log_temperature.exp()

    def weights(self, x: Tensor, dim: int = 0) -> Tensor:
        """w of eq. 6 (same shape as x)."""
        w = torch.softmax(x / self.temperature, dim=dim)
        return w * x.shape[dim] if self.scale == "mean" else w

    def forward(self, x: Tensor, dim: int = 0) -> Tensor:
        return x * self.weights(x, dim)  # TGraph eq. 6

    def shared_value(self, x: Tensor, num_configs: int) -> Tensor:
        """eq. 6 for a state shared by all `num_configs` configurations: softmax = 1/B."""
        return x if self.scale == "mean" else x / num_configs


class ReferenceInstanceNorm(nn.Module):
    """Instance normalisation over the nodes of one graph (TGraph eq. 4, N_instance):

        N(ε)_i = γ ∘ (ε_i - μ) / sqrt(σ² + eps) + β,   μ, σ² per channel over the nodes i.

    ``mode="config"``: μ, σ² per configuration (paper-literal InstanceNorm; every node becomes
    configuration dependent). ``mode="reference"`` (default in graphcost): μ, σ² are taken from
    the graph's *reference* state (every layout entry unset, i.e. -1), shared by all
    configurations; this keeps nodes that no configuration reaches identical across
    configurations, so TGraph computes them once (see `graphcost.models.shared_nodes`), and makes
    a score independent of which other configurations share its batch through the norm.
    """

    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)
        nn.init.zeros_(self.bias)

    def stats(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Per-channel mean and 1/std over the node axis (-2) of x (..., N, F)."""
        mean = x.mean(dim=-2, keepdim=True)
        var = (x - mean).pow(2).mean(dim=-2, keepdim=True)
        return mean, torch.rsqrt(var + self.eps)

    def normalize(self, x: Tensor, mean: Tensor, inv_std: Tensor) -> Tensor:
        """γ ∘ (x - mean) · inv_std + β with given statistics (e.g. the reference state's)."""
        scale = inv_std * self.weight  # γ / σ
        return torch.addcmul(self.bias - mean * scale, x, scale)  # one pass over x

    def forward(self, x: Tensor) -> Tensor:  # per-configuration statistics
        mean, inv_std = self.stats(x)
        return self.normalize(x, mean, inv_std)


def mlp(sizes: list[int], act: type[nn.Module] = nn.ReLU, last_act: bool = False, dropout: float = 0.0) -> nn.Sequential:
    """Linear layers sizes[0] -> ... -> sizes[-1] with `act` between (and after, if last_act)."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last_act:
            layers.append(act())
            if dropout:
                layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)


def undirected(edge_index: Tensor) -> Tensor:
    """(2, E) producer->consumer edges plus their reverses: (2, 2E)."""
    return torch.cat([edge_index, edge_index.flip(0)], dim=1)


def scaled_node_features(node_feat: Tensor) -> Tensor:
    """The numeric, already standard-scaled part node_feat[:, :134] (TGraph §2.2.5)."""
    return node_feat[:, :NODE_FEAT_SCALED]


def layout_node_features(node_feat: Tensor) -> Tensor:
    """The layout minor_to_major part node_feat[:, 134:140], -1 padded (TGraph §2.2.4)."""
    return node_feat[:, NODE_FEAT_SCALED:]


LAYOUT_CHANGE_DIM = 6  # `layout_change_features`: moved + minor-most moved, for each of the 3 layout slots


def layout_change_features(cfg: Tensor) -> Tensor:
    """Which layouts of a configurable node a configuration changes: (..., 18) -> (..., 6) floats.

    The 18 configuration entries are 3 slots (output, input, kernel layout; TpuGraphs §3) of 6
    minor_to_major dimension ids, -1 padded. With r the rank of a slot (its entries >= 0), the
    compiler's default (row-major) layout is minor_to_major = (r-1, r-2, ..., 0). Per slot:

        moved_s = any_d (slot_s[d] >= 0 and slot_s[d] != r - 1 - d)     the layout is not the default
        minor_s = slot_s[0] >= 0 and slot_s[0] != r - 1                  the minor-most (contiguous) dim moves

    These are what the tree baseline's per-configuration table is built from (which tensors move,
    whether the contiguous dimension moves; the tensor's size is in node_feat). An embedding of the
    raw ids can express them only through rank-dependent comparisons the model would have to learn
    from few graphs. An unset configuration (all -1) gives zeros.
    """
    slots = cfg.unflatten(-1, (3, LAYOUT_CONFIG_DIM // 3))  # (..., 3, 6)
    valid = slots >= 0
    rank = valid.sum(-1, keepdim=True)  # (..., 3, 1)
    default = rank - 1 - torch.arange(slots.shape[-1], device=cfg.device)  # (..., 3, 6)
    moved = ((slots != default) & valid).any(-1)  # (..., 3)
    minor = valid[..., 0] & (slots[..., 0] != default[..., 0])  # (..., 3)
    return torch.cat([moved, minor], dim=-1).to(cfg.dtype)  # (..., 6)


def per_node_config(batch, fill: float) -> Tensor:
    """Layout batch -> (B, N, 18) per-node config features, `fill` on non-configurable nodes."""
    n = batch.node_feat.shape[0]
    b = batch.num_configs
    out = batch.node_feat.new_full((b, n, LAYOUT_CONFIG_DIM), fill)
    out[:, batch.config_node_index] = batch.node_config_feat.to(out.dtype)
    return out
