"""Computing B configurations of one graph without repeating the work they share.

In a layout batch only the configurable nodes (C of N, typically a few percent) carry
configuration features. A node's state depends on the configuration only if some configurable
node lies within as many hops as message-passing layers have run; all other nodes have the
same state in every configuration. `SplitState` stores such a layer output as

* ``static`` (N, F): every node's state under the *reference* configuration (all layout
  entries unset, -1) -- computed once, shared by all B configurations;
* ``idx`` (D,): sorted ids of the nodes whose state may differ from the reference;
* ``dyn`` (B, D, F): their per-configuration states.

The dense (B, N, F) tensor it stands for is ``static`` broadcast over B with rows ``idx``
replaced by ``dyn`` (`to_dense`). Node-wise operations act on both parts; message passing
(`sage_split`) moves the differences ``dyn - static[idx]`` along the edges, which is exact
because the aggregation and both SAGE linear maps are linear. Work per layer is
O(N F^2 + B D F^2 + B E_D F) instead of O(B N F^2), where E_D are the edges leaving ``idx``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn import SAGEConv
from torch_geometric.utils import scatter


@dataclass
class SplitState:
    static: Tensor  # (N, F) reference-configuration state
    idx: Tensor  # (D,) int64, sorted node ids that may differ from the reference
    dyn: Tensor  # (B, D, F) their per-configuration states

    @property
    def num_configs(self) -> int:
        return int(self.dyn.shape[0])

    def to_dense(self) -> Tensor:
        """(B, N, F) per-configuration states."""
        out = self.static.unsqueeze(0).expand(self.num_configs, -1, -1).clone()
        out[:, self.idx] = self.dyn
        return out

    def delta(self) -> Tensor:
        """(B, D, F) difference to the reference state."""
        return self.dyn - self.static[self.idx]

    def expand(self, new_idx: Tensor) -> "SplitState":
        """Same states, with `new_idx` (a sorted superset of idx) as the dynamic set."""
        if new_idx.numel() == self.idx.numel():
            return self
        pos = torch.searchsorted(new_idx, self.idx)
        dyn = self.static[new_idx].unsqueeze(0).expand(self.num_configs, -1, -1).clone()
        dyn[:, pos] = self.dyn
        return SplitState(self.static, new_idx, dyn)

    def mean_pool(self, static_sum: Tensor | None = None) -> Tensor:
        """Mean over all N nodes per configuration: (B, F). `static_sum` may be precomputed."""
        n = self.static.shape[0]
        total = self.static.sum(0) if static_sum is None else static_sum  # (F,)
        return (total + self.delta().sum(1)) / n


@dataclass
class Edges:
    """Message-passing edges (source -> target) with what `sage_split` needs, built once per graph."""

    src: Tensor  # (E,)
    dst: Tensor  # (E,)
    in_degree: Tensor  # (N,) float, number of incoming edges per node

    @classmethod
    def build(cls, edge_index: Tensor, num_nodes: int) -> "Edges":
        src, dst = edge_index[0], edge_index[1]
        deg = torch.bincount(dst, minlength=num_nodes).to(torch.float32)
        return cls(src, dst, deg)

    @property
    def edge_index(self) -> Tensor:
        return torch.stack([self.src, self.dst])


def sage_static(conv: SAGEConv, x: Tensor, edges: Edges) -> Tensor:
    """Unnormalised SAGE output lin_l(aggr_j x_j) + lin_r(x_i) for (N, F) states."""
    if conv.project:
        raise ValueError("sage_split supports SAGEConv(project=False) only (f_1 linear)")
    agg = scatter(x[edges.src], edges.dst, dim=0, dim_size=x.shape[0], reduce="sum")  # (N, F)
    if conv.aggr == "mean":
        agg = agg / edges.in_degree.clamp(min=1).unsqueeze(-1)
    elif conv.aggr != "sum":
        raise ValueError(f"sage_split supports aggr 'sum' or 'mean', not {conv.aggr!r}")
    return conv.lin_l(agg) + conv.lin_r(x)


def sage_split(conv: SAGEConv, state: SplitState, edges: Edges, static_out: Tensor) -> SplitState:
    """SAGEConv on a SplitState, given ``static_out = sage_static(conv, state.static, edges)``.

    Returns the *unnormalised* output; new dynamic set = idx ∪ targets of edges leaving idx.
    Exactness: out_b = out_ref + W_r Δ_i + Σ_{j->i} w_ji W_l Δ_j with Δ = dyn - static,
    w_ji = 1 (sum) or 1/deg_in(i) (mean).
    """
    n = state.static.shape[0]
    is_dyn = torch.zeros(n, dtype=torch.bool, device=state.idx.device)
    is_dyn[state.idx] = True
    emask = is_dyn[edges.src]
    e_src, e_dst = edges.src[emask], edges.dst[emask]
    new_idx = torch.unique(torch.cat([state.idx, e_dst]))  # sorted
    delta = state.delta()  # (B, D, F)
    d_l = F.linear(delta, conv.lin_l.weight)  # (B, D, F_out), lin_l's bias is in static_out
    d_r = F.linear(delta, conv.lin_r.weight)  # (B, D, F_out)
    out = static_out[new_idx].unsqueeze(0).expand(state.num_configs, -1, -1).clone()  # (B, D', F_out)
    out.index_add_(1, torch.searchsorted(new_idx, state.idx), d_r)
    if e_src.numel():
        pos_src = torch.searchsorted(state.idx, e_src)
        msg = d_l[:, pos_src]  # (B, E_D, F_out)
        if conv.aggr == "mean":
            msg = msg / edges.in_degree[e_dst].clamp(min=1).view(1, -1, 1)
        out.index_add_(1, torch.searchsorted(new_idx, e_dst), msg)  # scatter-sum onto targets
    return SplitState(static_out, new_idx, out)
