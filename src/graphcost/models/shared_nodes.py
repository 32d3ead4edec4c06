"""Computing B configurations of one graph without repeating the work they share.

In a layout batch only the configurable nodes (C of N, typically a few percent) carry
configuration features. A node's state depends on the configuration only if some configurable
node lies within as many hops as message-passing layers have run; all other nodes have the
same state in every configuration. A layer output is therefore kept as

* a static (N, F) tensor: every node's state under the *reference* configuration (all layout
  entries unset, -1) -- computed once, shared by all B configurations;
* ``idx`` (D,): sorted ids of the nodes whose state may differ from the reference;
* dyn (D, B, F): their per-configuration states, node-major so that moving a node's states
  along an edge moves one contiguous (B, F) block.

The dense (B, N, F) tensor this stands for is the static one broadcast over B with rows
``idx`` replaced by dyn. A SAGE layer out_i = W_r x_i + Σ_{j->i} w_ji W_l x_j + b (w = 1 for
sum, 1/deg_in(i) for mean) is linear, so it splits into a configuration-independent part and a
part that only touches the dynamic rows (`SagePlan`):

    out_i^b = const_i + Σ_{j ∈ idx, j->i} w_ji W_l x_j^b + [i ∈ idx] W_r x_i^b,
    const_i = out_i^ref - Σ_{j ∈ idx, j->i} w_ji W_l x_j^ref - [i ∈ idx] W_r x_i^ref,

for i in the new dynamic set idx' = idx ∪ {targets of edges leaving idx}. Both sums are one
sparse (D', 2D) matrix `mix` applied to [W_l x^b; W_r x^b] of the D dynamic rows. Work per
layer is O(N F^2) once plus O(B D F^2 + B nnz(mix) F) per batch instead of O(B N F^2).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
from torch import Tensor
from torch_geometric.nn import SAGEConv
from torch_geometric.utils import scatter


@dataclass
class Edges:
    """Message-passing edges (source -> target) with what `SagePlan` needs, built once per graph."""

    src: Tensor  # (E,)
    dst: Tensor  # (E,)
    in_degree: Tensor  # (N,) float, number of incoming edges per node

    @classmethod
    def build(cls, edge_index: Tensor, num_nodes: int) -> Edges:
        src, dst = edge_index[0], edge_index[1]
        deg = torch.bincount(dst, minlength=num_nodes).to(torch.float32)
        return cls(src, dst, deg)

    @property
    def edge_index(self) -> Tensor:
        return torch.stack([self.src, self.dst])


def _check_conv(conv: SAGEConv) -> None:
    if conv.project:
        raise ValueError("the split SAGE path supports SAGEConv(project=False) only (f_1 linear)")
    if conv.aggr not in ("sum", "mean"):
        raise ValueError(f"the split SAGE path supports aggr 'sum' or 'mean', not {conv.aggr!r}")


def sage_static(conv: SAGEConv, x: Tensor, edges: Edges) -> Tensor:
    """Unnormalised SAGE output lin_l(aggr_j x_j) + lin_r(x_i) for (N, F) states."""
    _check_conv(conv)
    agg = scatter(x[edges.src], edges.dst, dim=0, dim_size=x.shape[0], reduce="sum")  # (N, F)
    if conv.aggr == "mean":
        agg = agg / edges.in_degree.clamp(min=1).unsqueeze(-1)
    return conv.lin_l(agg) + conv.lin_r(x)


@dataclass
class SagePlan:
    """The configuration-independent part of one SAGE layer on static + dynamic rows (module doc).

    Built once per graph (and weights) from the reference input; `apply` then costs two dense
    (D·B, F) x (F, F_out) products and one sparse product per batch of configurations. The
    CSR arrays of `mix` are also kept as plain tensors (mix_crow, mix_col, mix_weight), so that
    inference can take rows of the sparse product as embedding-bag sums (`tgraph_stream`).
    """

    idx_in: Tensor  # (D,) dynamic input rows
    idx_out: Tensor  # (D',) dynamic output rows, a sorted superset of idx_in
    pos_in: Tensor  # (D,) position of each idx_in row within idx_out
    mix: Tensor  # sparse CSR (D', 2D): [edge weights w_ji | placement of W_r x_i]
    const: Tensor  # (D', F_out) const_i of the module doc
    w_l: Tensor  # (F_out, F) neighbour weight (any input scaling folded in)
    w_r: Tensor  # (F_out, F) root weight
    mix_crow: Tensor | None = None  # (D' + 1,) CSR row offsets of mix
    mix_col: Tensor | None = None  # (nnz,) CSR column of each entry
    mix_weight: Tensor | None = None  # (nnz,) CSR values; None when all are 1 (aggr "sum", no duplicate edge)

    @classmethod
    def build(cls, conv: SAGEConv, edges: Edges, idx_in: Tensor, x_ref: Tensor, static_out: Tensor,
              in_scale: Tensor | None = None) -> SagePlan:
        """`x_ref` (N, F): reference input; `static_out` (N, F_out): the layer's reference output.

        `in_scale` (F,): the layer really sees in_scale ⊙ x + shift (a folded affine norm); the
        shift only moves the reference output, so folding the scale into W_l and W_r is exact
        for the differences that `apply` adds."""
        _check_conv(conv)
        w_l, w_r = conv.lin_l.weight, conv.lin_r.weight  # (F_out, F)
        if in_scale is not None:
            w_l, w_r = w_l * in_scale, w_r * in_scale
        n, d = x_ref.shape[0], idx_in.numel()
        is_dyn = torch.zeros(n, dtype=torch.bool, device=idx_in.device)
        is_dyn[idx_in] = True
        emask = is_dyn[edges.src]
        e_src, e_dst = edges.src[emask], edges.dst[emask]
        idx_out = torch.unique(torch.cat([idx_in, e_dst]))  # sorted
        pos_in = torch.searchsorted(idx_out, idx_in)
        w = torch.ones(e_src.numel(), dtype=x_ref.dtype, device=x_ref.device)
        if conv.aggr == "mean":
            w = w / edges.in_degree[e_dst].clamp(min=1)
        rows = torch.cat([torch.searchsorted(idx_out, e_dst), pos_in])
        cols = torch.cat([torch.searchsorted(idx_in, e_src), d + torch.arange(d, device=idx_in.device)])
        vals = torch.cat([w, torch.ones(d, dtype=x_ref.dtype, device=x_ref.device)])
        mix = torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (idx_out.numel(), 2 * d), check_invariants=True)
        with warnings.catch_warnings():  # "CSR support is in beta": CSR @ dense is what we use, and it is tested
            warnings.simplefilter("ignore", UserWarning)
            mix = mix.coalesce().to_sparse_csr()  # duplicate edges add up, like the scatter-sum
        vals = mix.values()
        plan = cls(idx_in, idx_out, pos_in, mix, static_out.new_zeros(0), w_l, w_r, mix.crow_indices(),
                   mix.col_indices(), None if bool((vals == 1).all()) else vals)
        plan.const = static_out[idx_out] - plan._mixed(x_ref[idx_in])
        return plan

    def to(self, dtype: torch.dtype) -> SagePlan:
        """This plan with weights, constants and mix in `dtype`. The mix stays CSR where the
        product has a kernel for it: on CPU (MKL) only float32/64, so other dtypes use a COO mix
        there; on CUDA the COO product has no bfloat16 kernel at all ("addmm_sparse_cuda" not
        implemented) while cuSPARSE's CSR one has, so the mix stays CSR for every dtype."""
        if dtype in (torch.float32, torch.float64):
            mix = self.mix.to(dtype)
        elif self.mix.is_cuda:
            with warnings.catch_warnings():  # "CSR support is in beta", as in `build`
                warnings.simplefilter("ignore", UserWarning)
                mix = self.mix.to_sparse_coo().coalesce().to(dtype).to_sparse_csr()
        else:
            mix = self.mix.to_sparse_coo().to(dtype)
        weight = self.mix_weight.to(dtype) if self.mix_weight is not None else None
        return SagePlan(self.idx_in, self.idx_out, self.pos_in, mix, self.const.to(dtype),
                        self.w_l.to(dtype), self.w_r.to(dtype), self.mix_crow, self.mix_col, weight)

    def _mixed(self, x: Tensor) -> Tensor:
        """mix @ [W_l x; W_r x] for rows x (D, ..., F) -> (D', ..., F_out)."""
        y = torch.cat([x @ self.w_l.T, x @ self.w_r.T], dim=0)  # (2D, ..., F_out)
        out = torch.sparse.mm(self.mix, y.reshape(y.shape[0], math.prod(y.shape[1:])))  # (D', prod(...) * F_out)
        return out.view(self.idx_out.numel(), *y.shape[1:])

    def apply(self, dyn: Tensor) -> Tensor:
        """Unnormalised SAGE outputs (D', B, F_out) of the dynamic rows, given dyn (D, B, F)."""
        return self._mixed(dyn) + self.const.unsqueeze(1)

    def expand(self, dyn: Tensor, static: Tensor) -> Tensor:
        """(D', B, F): the input states of the output rows (dyn where dynamic, else static)."""
        out = static[self.idx_out].unsqueeze(1).repeat(1, dyn.shape[1], 1)
        return out.index_copy(0, self.pos_in, dyn)
