"""TGraph (Khizbullin et al., 2024): GraphSAGE + channel self-attention + cross-configuration
attention, scoring B configurations of one graph (lower score = predicted faster).

    X      = StandardScaled node_feat[:134] ⊕ E_layout(node_feat[134:140]) ⊕ E_opcode(opcode)
             ⊕ E_layout(config) ⊕ moved(config)        (TGraph §2.2.5; moved: `layout_change_features`)
    ε^0    = f_in(X)          f_in: Linear-GELU-Linear-GELU, {256, 256}     (TGraph eq. 7)
    η      = A_self(S(N_instance(ε)))          S: L2 SAGE, H -> H/2          (TGraph eq. 2, 4, 5)
    B(ε)   = ε + GELU(concat(η, A_cross(η)))   back to H channels            (TGraph eq. 3, 6)
    score  = f_out(Σ_i B_2(B_1(ε^0))_i)     layout; the paper's mean_i: readout "mean" (TGraph eq. 7)

Layout: configuration features enter per configurable node (early). Tile (§2.2.5, "late
fusion"): the graph part has no configuration input, so it runs once (node-level A_cross over
one shared state is the identity); `config_feat` is joined after pooling and the
cross-configuration attention acts on the fused per-configuration vectors.

Ablations (TGraph Table 3): ``channel_attention`` (A_self), ``cross_attention`` (A_cross; the
SAGE output then keeps H channels so the residual still matches), ``use_edges`` (no edges = no
message passing). ``cross_scale`` "mean" (default) weighs eq. 6 by B · softmax so that states
shared by the whole batch do not shrink with the batch size ("softmax": the paper's 1/B; see
`layers.CrossConfigAttention`). ``readout`` (layout): "sum" (default) pools the final node
states by Σ_i, "mean" (paper eq. 7) by mean_i. f_out is linear, so with "mean" a configuration
that changes k nodes moves the score by O(k / N): on a graph of N ~ 10^3 nodes the hinge loss's
margin is out of reach, the model underfits its training data (train loss stalls) and ranks
little better than counting moved tensors (an ablation on the validation part of one program);
with "sum" the change is O(k) whatever the graph's size. ``change_features``
adds, per configurable node, which of its layouts the configuration moves off the default
(`layers.layout_change_features`). Norm: ``"reference"`` (default; see `layers.ReferenceInstanceNorm`),
``"config"`` (per-configuration InstanceNorm, paper-literal, dense path) or ``"none"``.

Speed: for layout batches with norm "reference"/"none" the forward pass computes the nodes no
configuration reaches once for all B configurations (reference pass) and only the rows a
configuration can reach per configuration, node-major, with the SAGE layers split by
`shared_nodes.SagePlan` (exact; the reference norm is folded into the SAGE weights). Without
gradients those rows stream through the blocks in cache-sized node tiles (`tgraph_stream`).
`forward_dense` is the plain (B, N, F) PyG path (used to test the fast path).

What the compiler did (``compiled_stats``, off by default): score += g(log(1 + 10 x)), x the 7
scale-free columns of the configuration's compiled module (`graphcost.data.transforms.compiled`),
g: Linear-GELU-Linear {32}. The term is added only for batches that carry the statistics; a share
``compiled_dropout`` of training batches goes without, so the graph part ranks on its own too.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import global_add_pool

from graphcost.data.graph import LAYOUT_CONFIG_DIM, NODE_FEAT_DIM, NODE_FEAT_SCALED, TILE_CONFIG_DIM
from graphcost.data.transforms.compiled import COMPILED_COLUMNS
from graphcost.models.layers import (
    NUM_OPCODES,
    LAYOUT_CHANGE_DIM,
    ChannelSE,
    CrossConfigAttention,
    L2SAGE,
    LayoutEmbedding,
    OpcodeEmbedding,
    ReferenceInstanceNorm,
    check_batch,
    layout_change_features,
    layout_node_features,
    mlp,
    scaled_node_features,
    undirected,
)
from graphcost.models.shared_nodes import Edges, SagePlan, sage_static
from graphcost.models.tgraph_stream import Workspace, map_chunks, stream_blocks

T = TypeVar("T")


PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16}  # score_chunked(precision=...)


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
    cross_scale: str = "mean"  # eq. 6 weights: "mean" = B · softmax (batch-size invariant), "softmax" = paper
    change_features: bool = True  # layout: which layouts a configuration moves (layers.layout_change_features)
    readout: str = "sum"  # layout: Σ_i ("sum") or mean_i ("mean", paper eq. 7) of the final node states
    compiled_stats: bool = False  # add g(what the compiler did) to the score, where a batch carries it
    compiled_dropout: float = 0.25  # training: share of batches scored as if they carried no statistics
    num_opcodes: int = NUM_OPCODES

    @classmethod
    def small(cls, **overrides) -> "TGraphConfig":
        """A tiny configuration for CPU tests."""
        return cls(**{"hidden": 32, "opcode_dim": 4, "layout_dim": 2, **overrides})


def _given(value: T | None, what: str) -> T:
    """`value`, which the reference pass has set (RuntimeError naming `what` when it has not)."""
    if value is None:
        raise RuntimeError(f"TGraph: {what} is not set (the reference pass sets it for layout graphs)")
    return value


@dataclass
class _BlockRef:
    """One block's reference-configuration pass (see TGraph._static_pass)."""

    eps_in: Tensor  # (N, H) block input ε
    mean: Tensor | None = None  # (1, H) reference norm statistics
    inv_std: Tensor | None = None
    plan: SagePlan | None = None  # layout only: the split SAGE layer

    @property
    def layout_plan(self) -> SagePlan:
        """`plan`, which `TGraph._static_pass` sets for every block of a layout graph."""
        return _given(self.plan, "a block's SAGE plan")

    @property
    def stats(self) -> tuple[Tensor, Tensor]:
        """(mean, inv_std), which `TGraph._static_pass` sets under the reference norm."""
        return _given(self.mean, "a block's norm mean"), _given(self.inv_std, "a block's norm inv_std")


@dataclass
class _Reference:
    """The configuration-independent pass of one graph, reused by every batch of configurations."""

    eps0: Tensor  # (N, H) f_in output
    blocks: list[_BlockRef] = field(default_factory=list)
    eps_final: Tensor | None = None  # (N, H) output of the last block
    # layout only:
    fin_static: Tensor | None = None  # (C, H) node part of f_in's first layer, configurable nodes
    config_order: Tensor | None = None  # (C,) order of config_node_index that sorts the node ids
    pool_const: Tensor | None = None  # (H,) float32 Σ_i of the final states over the static rows

    @property
    def final(self) -> Tensor:
        """eps_final (N, H), which `TGraph._static_pass` always sets."""
        return _given(self.eps_final, "eps_final")

    def layout_part(self, name: str) -> Tensor:
        """fin_static, config_order or pool_const: set by `TGraph._static_pass` for a layout graph."""
        return _given(getattr(self, name), name)

    def to(self, dtype: torch.dtype) -> _Reference:
        """The tensors the dynamic pass reads, in `dtype` (pool_const stays float32)."""
        blocks = [_BlockRef(b.eps_in.to(dtype), b.mean, b.inv_std, b.layout_plan.to(dtype)) for b in self.blocks]
        return _Reference(self.eps0.to(dtype), blocks, self.final.to(dtype), self.layout_part("fin_static").to(dtype),
                          self.config_order, self.pool_const)


class _Block(nn.Module):
    """One TGraph block (eq. 3-6) and its pieces, applied by TGraph in dense or split form."""

    def __init__(self, cfg: TGraphConfig):
        super().__init__()
        h = cfg.hidden
        out = h // 2 if cfg.cross_attention else h  # concat(η, A_cross(η)) has H channels
        self.norm: ReferenceInstanceNorm | None = ReferenceInstanceNorm(h) if cfg.norm != "none" else None
        self.sage: L2SAGE = L2SAGE(h, out, aggr=cfg.aggr)
        self.se: ChannelSE | None = ChannelSE(out, cfg.se_reduction) if cfg.channel_attention else None
        self.cross: CrossConfigAttention | None = (CrossConfigAttention(cfg.init_temperature, cfg.cross_scale)
                                                   if cfg.cross_attention else None)

    def attend(self, s: Tensor) -> Tensor:
        return self.se(s) if self.se is not None else s  # η = A_self(S(...)) (eq. 4-5)

    def combine(self, eps: Tensor, eta: Tensor, cross: Tensor | None) -> Tensor:
        mixed = torch.cat([eta, cross], dim=-1) if cross is not None else eta
        return eps + F.gelu(mixed)  # TGraph eq. 3


def _row_sum_fp32(x: Tensor, rows: int = 16) -> Tensor:
    """x (D, ...) summed over dim 0 in float32. On CPU a low-precision x is converted `rows` rows
    at a time (in cache), not as one float32 copy of the whole tensor; CUDA's reduction kernel
    accumulates in float32 itself, so there one call does it (no per-slice kernel launches)."""
    if x.dtype == torch.float32 or torch.is_grad_enabled() or x.is_cuda:
        return x.sum(0, dtype=torch.float32)
    total = x.new_zeros(x.shape[1:], dtype=torch.float32)
    for r0 in range(0, x.shape[0], rows):
        total += x[r0:r0 + rows].sum(0, dtype=torch.float32)
    return total


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
        if config.readout not in ("sum", "mean"):
            raise ValueError(f"TGraphConfig.readout must be 'sum' or 'mean', got {config.readout!r}")
        if not 0.0 <= config.compiled_dropout < 1.0:
            raise ValueError(f"TGraphConfig.compiled_dropout must be in [0, 1), got {config.compiled_dropout!r}")
        if config.cross_attention and config.hidden % 2:
            raise ValueError("TGraphConfig.hidden must be even with cross_attention")
        self.kind, self.config = kind, config
        c = config
        self.layout_emb = LayoutEmbedding(c.layout_dim)
        self.opcode_emb = OpcodeEmbedding(c.opcode_dim, c.num_opcodes)
        in_dim = NODE_FEAT_SCALED + (NODE_FEAT_DIM - NODE_FEAT_SCALED) * c.layout_dim + c.opcode_dim
        if kind == "layout":
            in_dim += self.config_dim
        self.f_in: nn.Sequential = mlp([in_dim, c.hidden, c.hidden], act=nn.GELU, last_act=True)  # eq. 7 f_in
        self.blocks: Sequence[_Block] = cast("Sequence[_Block]", nn.ModuleList(_Block(c) for _ in range(c.num_blocks)))
        if kind == "layout":
            self.f_out = nn.Linear(c.hidden, 1)  # eq. 7 f_out
        else:  # late fusion of config_feat (TGraph §2.2.5)
            self.config_in = mlp([TILE_CONFIG_DIM, c.hidden, c.hidden], act=nn.GELU, last_act=True)
            self.fuse = mlp([2 * c.hidden, c.hidden], act=nn.GELU, last_act=True)
            self.head_cross = CrossConfigAttention(c.init_temperature, c.cross_scale) if c.cross_attention else None
            self.f_out = nn.Linear(2 * c.hidden if c.cross_attention else c.hidden, 1)
        # g: 7 compiled columns -> a score term (module docstring, "What the compiler did")
        self.compiled_head: nn.Sequential | None = mlp([COMPILED_COLUMNS, 32, 1], act=nn.GELU) if c.compiled_stats else None

    # ----------------------------------------------------------------- inputs
    @property
    def _f_in_first(self) -> nn.Linear:
        """f_in's first Linear layer (eq. 7)."""
        return cast(nn.Linear, self.f_in[0])

    @property
    def config_dim(self) -> int:
        """Input channels a layout configuration gives a configurable node (the last ones of X)."""
        c = self.config
        return LAYOUT_CONFIG_DIM * c.layout_dim + (LAYOUT_CHANGE_DIM if c.change_features else 0)

    def _config_part(self, cfg: Tensor) -> Tensor:
        """(..., 18) layout configuration -> (..., config_dim): E_layout(config) ⊕ moved(config)."""
        emb = self.layout_emb(cfg)  # (..., 18 * layout_dim)
        if not self.config.change_features:
            return emb
        return torch.cat([emb, layout_change_features(cfg).to(emb.dtype)], dim=-1)

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
            parts.append(self._config_part(unset))
        return torch.cat(parts, dim=-1)

    def _config_input(self, x_static: Tensor, node_ids: Tensor, cfg: Tensor) -> Tensor:
        """(B, C, in_dim): inputs of configurable nodes under each configuration."""
        emb = self._config_part(cfg)  # (B, C, config_dim)
        base = x_static[node_ids].unsqueeze(0).expand(cfg.shape[0], -1, -1)
        return torch.cat([base[..., : -emb.shape[-1]], emb], dim=-1)

    # ------------------------------------------------------- split (fast) path
    def _static_pass(self, batch, edges: Edges, num_configs: int) -> _Reference:
        """Reference-configuration states of every block (shared by all configurations) and,
        for layout batches, the per-block `SagePlan`s of the nodes a configuration can reach."""
        x = self._static_input(batch)  # (N, in)
        eps = self.f_in(x)  # (N, H)
        ref = _Reference(eps0=eps)
        idx = torch.sort(batch.config_node_index).values if self.kind == "layout" else None
        if idx is not None:
            lin = self._f_in_first  # first f_in layer, split into node part (static) and config part
            n_cfg = self.config_dim
            ref.fin_static = F.linear(x[idx, :-n_cfg], lin.weight[:, :-n_cfg], lin.bias)  # (C, H)
            ref.config_order = torch.argsort(batch.config_node_index)
        for blk in self.blocks:
            br = _BlockRef(eps_in=eps)
            if blk.norm is not None:
                br.mean, br.inv_std = blk.norm.stats(eps)
                n_s = blk.norm.normalize(eps, br.mean, br.inv_std)
                scale = (br.inv_std * blk.norm.weight).reshape(-1)  # (H,) norm = scale ⊙ ε + shift
            else:
                n_s, scale = eps, None
            sage_raw = sage_static(blk.sage, n_s, edges)  # (N, H')
            eta = blk.attend(F.normalize(sage_raw, p=2.0, dim=-1))
            cross = blk.cross.shared_value(eta, num_configs) if blk.cross is not None else None
            out = blk.combine(eps, eta, cross)
            if idx is not None:
                br.plan = SagePlan.build(blk.sage, edges, idx, eps, sage_raw, scale)
                idx = br.plan.idx_out
            ref.blocks.append(br)
            eps = out
        ref.eps_final = eps
        if self.kind == "layout":  # Σ_i of the final states minus the rows `_dynamic_pool` adds per configuration
            if ref.blocks:  # last block: its dynamic input rows (ε) and output rows (GELU(...) = out - ε)
                last, plan = ref.blocks[-1], ref.blocks[-1].layout_plan
                gelu = eps[plan.idx_out] - last.eps_in[plan.idx_out]
                ref.pool_const = eps.sum(0) - last.eps_in[plan.idx_in].sum(0) - gelu.sum(0)
            else:  # no blocks: the configurable nodes' f_in rows
                ref.pool_const = eps.sum(0) - eps[torch.sort(batch.config_node_index).values].sum(0)
        return ref

    def _dynamic_pool(self, batch, ref: _Reference, cfg: Tensor, workspace: Workspace | None = None) -> Tensor:
        """Pooled final states (B, H), float32, of configurations `cfg` (B, C, 18) (`_pool_div`).

        Runs in the dtype of `ref` and of this module's weights (see `score_chunked`'s
        precision); sums are accumulated in float32. Without gradients the blocks run streamed
        (`tgraph_stream`), reusing the buffers of `workspace` if given."""
        n = self._pool_div(batch)
        if cfg.shape[1] == 0:  # no configurable node: every configuration is the reference graph
            return (ref.final.float().sum(0) / n).expand(cfg.shape[0], -1)
        cfg = cfg[:, ref.layout_part("config_order")].transpose(0, 1)  # (C, B, 18), sorted node ids
        plans = [br.layout_plan for br in ref.blocks]
        pool_const = ref.layout_part("pool_const")
        h = self._config_rows(ref, cfg, workspace)  # (C, B, H) ε^0 of the configurable nodes
        if not torch.is_grad_enabled() and self.blocks:
            tile_rows = self._tile_rows_cuda if h.is_cuda else self._tile_rows
            eps_static = [br.eps_in[plan.idx_out] for br, plan in zip(ref.blocks, plans)]  # (D'_k, H) reference ε
            dyn = stream_blocks(self.blocks, plans, eps_static, h, workspace or Workspace(), tile_rows)
            return (pool_const + dyn) / n  # (B, H) readout
        tail = None
        for k, (blk, br, plan) in enumerate(zip(self.blocks, ref.blocks, plans)):
            s = plan.apply(h)  # (D', B, H') unnormalised SAGE output (eq. 2, norm folded in)
            if k + 1 < len(self.blocks):
                h = self._block_tail(blk, s, plan.expand(h, br.eps_in))  # B(ε) rows (D', B, H)
            else:  # last block: only Σ_i B(ε)_i = Σ_i ε_i + Σ_i GELU(...)_i is needed (eq. 3, 7)
                tail = self._block_tail(blk, s, None)  # (B, H) float32
        total = pool_const + _row_sum_fp32(h)
        return (total if tail is None else total + tail) / n  # (B, H) readout

    def _pool_div(self, batch) -> int:
        """The readout's divisor: 1 for Σ_i (layout "sum"), N for mean_i (tile, layout "mean")."""
        return 1 if self.kind == "layout" and self.config.readout == "sum" else batch.node_feat.shape[0]

    def _config_rows(self, ref: _Reference, cfg: Tensor, workspace: Workspace | None = None) -> Tensor:
        """f_in (eq. 7) of the configurable nodes: (C, B, H) from cfg (C, B, 18); the node part
        of the first layer is ref.fin_static. Without gradients the layers write into
        `workspace` buffers and the GELUs run in place."""
        lin = self._f_in_first
        fin = ref.layout_part("fin_static").unsqueeze(1)  # (C, 1, H) node part of layer 1
        emb = self._config_part(cfg).to(lin.weight.dtype)  # (C, B, config_dim)
        w_cfg = lin.weight[:, -emb.shape[-1]:]  # config part of layer 1
        if torch.is_grad_enabled() or workspace is None:
            h = F.linear(emb, w_cfg)  # (C, B, H)
            if torch.is_grad_enabled():
                return self.f_in[1:](h + fin)
            return self._f_in_rest(h.add_(fin), None)
        h = workspace.get("fin0", (*emb.shape[:-1], w_cfg.shape[0]), emb)
        torch.matmul(emb, w_cfg.T, out=h)
        return self._f_in_rest(h.add_(fin), workspace)

    def _f_in_rest(self, h: Tensor, workspace: Workspace | None) -> Tensor:
        """f_in[1:] without gradients: GELU in place, Linear into alternating workspace buffers."""
        buf = 0  # h is in workspace buffer "fin0" (if any); a Linear writes into the other one
        for layer in list(self.f_in)[1:]:
            if isinstance(layer, nn.GELU):
                h = torch._C._nn.gelu_(h, approximate=layer.approximate)  # type: ignore[attr-defined]  # not in torch's stubs
            elif isinstance(layer, nn.Linear) and workspace is not None:
                buf = 1 - buf
                out = workspace.get(f"fin{buf}", (*h.shape[:-1], layer.out_features), h)
                torch.addmm(layer.bias, h.view(-1, h.shape[-1]), layer.weight.T, out=out.view(-1, out.shape[-1]))
                h = out
            else:
                h = layer(h)
        return h

    @staticmethod
    def _tile_rows(b: int, channels: int, itemsize: int = 4) -> int:
        """Nodes per tile so that one (tile, B, channels) tensor is ~2 MiB (stays in cache)."""
        return max(1, (1 << 21) // max(1, b * channels * itemsize))

    @staticmethod
    def _tile_rows_cuda(b: int, channels: int, itemsize: int = 4) -> int:
        """On a GPU tiles only bound the temporaries (~256 MiB each): a cache-sized tile would
        cost a dozen kernel launches per few rows."""
        return max(1, (1 << 28) // max(1, b * channels * itemsize))

    def _block_tail(self, blk: _Block, s_raw: Tensor, eps_in: Tensor | None) -> Tensor:
        """Eq. 2's L2 norm, eq. 5, eq. 6 and eq. 3 on the dynamic rows s_raw (D', B, H') (the
        differentiable form; without gradients `tgraph_stream` does this tile by tile).
        eps_in (D', B, H) given: returns B(ε) = ε + GELU(concat(η, A_cross(η)));
        None: returns Σ_i GELU(...) over the rows, (B, H) float32."""
        eta = blk.attend(F.normalize(s_raw, p=2.0, dim=-1))  # (D', B, H')
        halves = [eta] if blk.cross is None else [eta, blk.cross(eta, dim=1)]  # A_cross over B
        g = F.gelu(torch.cat(halves, dim=-1))  # (D', B, H)
        return eps_in + g if eps_in is not None else _row_sum_fp32(g)

    def _with_compiled(self, batch, scores: Tensor) -> Tensor:
        """(B,) scores + g(log(1 + 10 x)) of the batch's compiled columns x (B, 7), when the model
        has g and the batch carries them; in training, a share `compiled_dropout` of the batches goes
        without (the whole batch, so that its ranking stays one model's), so that the graph part
        learns to rank graphs that have no statistics on its own."""
        x = getattr(batch, "config_compiled", None)
        if self.compiled_head is None or x is None:
            return scores
        if self.training and self.config.compiled_dropout and float(torch.rand(())) < self.config.compiled_dropout:
            return scores
        x = torch.log1p(10.0 * x.to(device=scores.device, dtype=torch.float32).clamp_min(0.0))  # (B, 7)
        return scores + self.compiled_head(x).squeeze(-1).to(scores.dtype)

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
                n = blk.norm.normalize(eps, *ref.blocks[k].stats)
            eta = blk.attend(blk.sage(n, edges.edge_index))  # PyG SAGEConv(normalize=True)
            cross = blk.cross(eta, dim=0) if blk.cross is not None else None
            eps = blk.combine(eps, eta, cross)
        pooled = global_add_pool(eps, None) / self._pool_div(batch)  # (B, H) readout
        if self.kind == "layout":
            return self._with_compiled(batch, self.f_out(pooled).squeeze(-1))
        return self._with_compiled(batch, self._tile_head(pooled[0], batch.config_feat))

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

    @property
    def can_score_chunked(self) -> bool:
        """Whether `score_chunked` applies (not with the dense-only per-configuration norm)."""
        return self.kind == "tile" or self.config.norm != "config"

    def score_chunked(self, batch, chunk_size: int | None = 128, precision: str = "fp32",
                      chunk_sizes: Sequence[int] | None = None) -> Tensor:
        """Scores (B,) computing configurations in ceil(B / chunk_size) consecutive near-equal
        chunks (or chunks of the given `chunk_sizes`, which must add up to B); each chunk is one
        cross-attention group, as at training time. Configuration-independent work is done once per distinct chunk
        length. Use under torch.no_grad() for inference: then, on a CPU, the chunks run side by
        side on torch.get_num_threads() threads with one intra-op thread each (`map_chunks`).

        precision "bf16" (inference only): the per-configuration work of layout batches runs in
        bfloat16 (≈ 3x faster matrix products on CPUs with AVX512-BF16 or AMX); the reference
        pass, the pooling sums and f_out stay float32. Rankings agree closely with "fp32" but
        not exactly."""
        check_batch(batch, self.kind, self.config.num_opcodes)
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
        dtype = PRECISIONS[precision]
        if dtype != torch.float32 and torch.is_grad_enabled():
            raise ValueError(f"precision {precision!r} is for inference: call under torch.no_grad()")
        edges = self._edges(batch)
        b = batch.num_configs
        if chunk_sizes is None:  # ceil(B / chunk_size) near-equal chunks, larger first (= evaluate.chunk_indices)
            pieces = -(-b // chunk_size) if chunk_size else min(b, 1)
            chunk_sizes = [b // pieces + (k < b % pieces) for k in range(pieces)]
        elif sum(chunk_sizes) != b or min(chunk_sizes, default=1) < 1:
            raise ValueError(f"chunk_sizes {list(chunk_sizes)} must be positive and add up to the batch's {b} configurations")
        starts = [sum(chunk_sizes[:k]) for k in range(len(chunk_sizes))]
        if self.kind == "tile":
            graph_emb = self._static_pass(batch, edges, 1).final.mean(0)  # (H,)
            return self._with_compiled(batch, torch.cat([self._tile_head(graph_emb, batch.config_feat[i:i + n])
                                                         for i, n in zip(starts, chunk_sizes)]))
        if self.config.norm == "config":
            raise ValueError("score_chunked needs norm 'reference' or 'none' (per-config norm is dense-only)")
        runner = self if dtype == torch.float32 else copy.deepcopy(self).to(dtype)
        refs: dict[int, _Reference] = {}  # A_cross of a shared state depends on the group size
        for n in sorted(set(chunk_sizes)):
            ref = self._static_pass(batch, edges, n)
            refs[n] = ref if dtype == torch.float32 else ref.to(dtype)

        def pool(i: int, workspace: Workspace) -> Tensor:  # (B_i, H) float32, chunk i
            cfg = batch.node_config_feat[starts[i]:starts[i] + chunk_sizes[i]]
            return runner._dynamic_pool(batch, refs[cfg.shape[0]], cfg, workspace)

        # without gradients on a CPU, chunks run side by side on the intra-op threads (map_chunks)
        threads = 1 if torch.is_grad_enabled() or batch.node_feat.is_cuda else torch.get_num_threads()
        pooled = map_chunks(pool, range(len(chunk_sizes)), threads)
        return self._with_compiled(batch, torch.cat([self.f_out(p).squeeze(-1) for p in pooled]))
