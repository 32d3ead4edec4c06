"""Synthetic layout configurations and an analytical TPU-like runtime simulator.

SYNTHETIC DATA — the runtimes are produced by the model below, not measured on hardware.

Configurable nodes (convolution, dot, reshape; TpuGraphs §3) each choose three physical layouts
(README "Layout Config Features"): output (6 cols), first input (6 cols) and, for convolutions,
kernel (6 cols); a layout is a permutation of the tensor's dimensions in minor-to-major order,
-1 beyond the tensor's rank. The runtime of configuration x is

    T(x) = T_fixed + sum_c T_op(c, x_c) + sum_{e in E_c} T_copy(e) [layouts disagree on e]    (1)
    T_op(c, x_c) = T_base(c) * sum_s w_s * pref_s(c, x_c,s) / eff(shape_s, x_c,s)              (2)
    eff(shape, L) = d0 / (128 * ceil(d0 / 128)) * d1 / (8 * ceil(d1 / 8)),  d0 = shape[L[0]],
                    d1 = shape[L[1]]: TPU (8, 128) vector tiles waste lanes when the most-minor
                    dimension is not a multiple of 128 and sublanes when the second is not of 8
    T_base(c) = max(flops / 100 TFLOP/s, bytes / 900 GB/s)  (conv: 2*|out|*kh*kw*cin; dot:
                    2*|out|*K; reshape: bytes only), slot weights w = (0.5, 0.3, 0.2) or (0.6, 0.4)
    pref: per-operator preferences: a convolution wants its input feature dim (NHWC dim 3)
          most-minor and its kernel output-feature dim (HWIO dim 3) most-minor (x1.25 otherwise); a
          dot wants its contracting (last) input dim most-minor (x1.2); a reshape costs an extra
          transpose (x2 its bytes) unless both its layouts are the default row-major ones
    T_copy(e) = 500 ns + 2 * bytes / 900 GB/s: the copy XLA inserts when a producer's layout
          differs from the layout its consumer expects (TpuGraphs Fig. 3); E_c are the edges
          touching configurable nodes (producer side: chosen output layout or the node's fixed
          layout from node_feat[134:140]; consumer side: chosen input/kernel layout or the
          consumer's fixed layout when ranks agree, else the default layout)
    measured(x) = T(x) * exp(sigma * N(0, 1))  (seeded measurement noise, sigma = 1 %)

Search modes: "random" draws every layout uniformly; "default" starts from the compiler's default
configuration (configuration 0) and mutates a few percent of the layouts (genetic-search-like),
so its runtimes are close to each other, as in the real default collections.
"""

from __future__ import annotations

import itertools
import numpy as np

from graphcost.data.schema import OPCODES
from graphcost.data.synth_graph import Program, default_layout

__all__ = ["LayoutSimulator"]

PEAK_FLOP_PER_NS = 100e3  # 100 TFLOP/s
BYTES_PER_NS = 900.0  # 900 GB/s
COPY_LAUNCH_NS = 500.0
MAX_RANK = 4
_PERMS = {  # minor-to-major permutations per rank; index 0 is the default (r-1, ..., 0)
    r: np.array(list(itertools.permutations(range(r - 1, -1, -1))), dtype=np.int64).reshape(-1, r)
    if r else np.zeros((1, 0), np.int64)
    for r in range(MAX_RANK + 1)
}
_OFFSET = np.cumsum([0] + [len(_PERMS[r]) for r in range(MAX_RANK + 1)])
_ALL6 = np.full((_OFFSET[-1], 6), -1.0, np.float32)  # every permutation, -1 padded to 6
for _r in range(MAX_RANK + 1):
    _ALL6[_OFFSET[_r] : _OFFSET[_r + 1], :_r] = _PERMS[_r]
NPERM = 24  # 4!
_BIG = 1e30


def _perm_index(layout: tuple[int, ...]) -> int:
    r = len(layout)
    return int(np.flatnonzero((_PERMS[r] == np.array(layout)).all(1))[0])


def _eff(shape, perms: np.ndarray) -> np.ndarray:
    """(P,) tile efficiency of each minor-to-major permutation of `shape` (eq. 2)."""
    if len(shape) == 0:
        return np.ones(1)
    s = np.asarray(shape, dtype=np.float64)
    d0 = s[perms[:, 0]]
    d1 = s[perms[:, 1]] if len(shape) >= 2 else np.ones(len(perms))
    return d0 / (128 * np.ceil(d0 / 128)) * d1 / (8 * np.ceil(d1 / 8))


class LayoutSimulator:
    """Cost tables for one synthetic program; `sample_choices` + `features` + `runtime` per chunk."""

    def __init__(self, program: Program, node_feat_layouts: np.ndarray | None = None):
        nodes = program.nodes
        conf_ops = {OPCODES["convolution"], OPCODES["dot"], OPCODES["reshape"]}
        self.config_ids = np.array([i for i, n in enumerate(nodes) if n.opcode in conf_ops], dtype=np.int64)
        pos = {int(i): k for k, i in enumerate(self.config_ids)}
        C = len(self.config_ids)
        self.rank = np.zeros((C, 3), np.int64)  # output / input / kernel ranks (0 = no such slot)
        self.default = np.zeros((C, 3), np.int64)  # compiler default choice (perm index)
        self.op_cost = np.full((C, 3, NPERM), _BIG)
        self.reshape_pen = np.zeros(C)
        layout_of = [n.layout or default_layout(len(n.shape)) for n in nodes]
        const_edges: list[tuple[int, int, int, float]] = []  # (c, slot, const perm idx, cost)
        var_edges: list[tuple[int, int, int, int, float]] = []  # (c_a, slot_a, c_b, slot_b, cost)
        self.fixed_ns = 0.0
        consumers: dict[int, list[int]] = {}
        for u, n in enumerate(nodes):
            for v in n.operands:
                consumers.setdefault(v, []).append(u)
        for u, n in enumerate(nodes):
            if u not in pos:
                self.fixed_ns += 4.0 * _vol(n.shape) / BYTES_PER_NS + 50.0
        for c, u in enumerate(self.config_ids.tolist()):
            n = nodes[u]
            x = nodes[n.operands[0]]
            shapes = [n.shape, x.shape, nodes[n.operands[1]].shape if n.opcode == OPCODES["convolution"] else ()]
            self.rank[c] = [len(s) for s in shapes]
            self.default[c] = [_perm_index(layout_of[u]), _perm_index(layout_of[n.operands[0]]), 0]
            out_bytes = 4.0 * _vol(n.shape)
            if n.opcode == OPCODES["convolution"]:
                kh, kw, cin, _ = shapes[2]
                base = max(2.0 * _vol(n.shape) * kh * kw * cin / PEAK_FLOP_PER_NS, (out_bytes + 4 * _vol(x.shape)) / BYTES_PER_NS)
                weights, prefer = (0.5, 0.3, 0.2), (None, 3, 3)
            elif n.opcode == OPCODES["dot"]:
                base = max(2.0 * _vol(n.shape) * x.shape[-1] / PEAK_FLOP_PER_NS, (out_bytes + 4 * _vol(x.shape)) / BYTES_PER_NS)
                weights, prefer = (0.6, 0.4, 0.0), (None, len(x.shape) - 1, None)
            else:  # reshape
                base = 2 * out_bytes / BYTES_PER_NS
                weights, prefer = (0.6, 0.4, 0.0), (None, None, None)
                self.reshape_pen[c] = 2 * out_bytes / BYTES_PER_NS
            for s in range(3):
                r = self.rank[c, s]
                if s == 2 and n.opcode != OPCODES["convolution"]:
                    self.op_cost[c, s, 0] = 0.0
                    continue
                perms = _PERMS[r]
                pref = np.ones(len(perms))
                if prefer[s] is not None and r:
                    pref = np.where(perms[:, 0] == prefer[s], 1.0, 1.2 if n.opcode == OPCODES["dot"] else 1.25)
                self.op_cost[c, s, : len(perms)] = base * weights[s] * pref / _eff(shapes[s], perms)
            # copies on the edges touching this node (eq. 1)
            p = n.operands[0]
            cost_in = COPY_LAUNCH_NS + 2 * 4.0 * _vol(x.shape) / BYTES_PER_NS
            if p in pos:
                var_edges.append((pos[p], 0, c, 1, cost_in))
            else:
                const_edges.append((c, 1, _perm_index(layout_of[p]), cost_in))
            if n.opcode == OPCODES["convolution"]:
                k = n.operands[1]
                const_edges.append((c, 2, _perm_index(layout_of[k]), COPY_LAUNCH_NS + 8.0 * _vol(shapes[2]) / BYTES_PER_NS))
            for q in consumers.get(u, []):
                if q in pos and nodes[q].operands[0] == u:
                    continue  # counted as q's input edge
                rq = len(nodes[q].shape)
                want = layout_of[q] if rq == len(n.shape) and nodes[q].element_type != "tuple" else default_layout(len(n.shape))
                const_edges.append((c, 0, _perm_index(want), COPY_LAUNCH_NS + 2 * out_bytes / BYTES_PER_NS))
        self.nperm = np.array([[len(_PERMS[r]) for r in row] for row in self.rank], dtype=np.int64).reshape(C, 3)
        self.nperm[:, 2] = np.where(self.rank[:, 2] > 0, self.nperm[:, 2], 1)
        ce = np.array(const_edges, dtype=np.float64).reshape(-1, 4)
        self.ce_c, self.ce_s, self.ce_val, self.ce_cost = ce[:, 0].astype(int), ce[:, 1].astype(int), ce[:, 2].astype(int), ce[:, 3]
        ve = np.array(var_edges, dtype=np.float64).reshape(-1, 5)
        self.ve = ve[:, :4].astype(int)
        self.ve_cost = ve[:, 4]
        self.is_reshape = np.array([nodes[u].opcode == OPCODES["reshape"] for u in self.config_ids.tolist()], bool)

    @property
    def num_config_nodes(self) -> int:
        return len(self.config_ids)

    def sample_choices(self, rng: np.random.Generator, k: int, search: str, first: bool) -> np.ndarray:
        """(k, C, 3) int64 permutation indices; `first` makes row 0 the default configuration."""
        C = self.num_config_nodes
        rand = np.floor(rng.random((k, C, 3)) * self.nperm[None]).astype(np.int64)
        if search == "random":
            choice = rand
        elif search == "default":
            p = rng.beta(1.0, 30.0, size=(k, 1, 1))  # share of mutated layouts, mean ~3 %
            mutate = rng.random((k, C, 3)) < p
            choice = np.where(mutate, rand, self.default[None])
            # every configuration differs from the default in at least one layout
            same = np.flatnonzero((choice == self.default[None]).all(axis=(1, 2)))
            free = np.argwhere(self.nperm > 1)  # (F, 2) (node, slot) with a choice
            if len(same) and len(free):
                node, slot = free[rng.integers(len(free), size=len(same))].T
                step = 1 + np.floor(rng.random(len(same)) * (self.nperm[node, slot] - 1)).astype(np.int64)
                choice[same, node, slot] = (self.default[node, slot] + step) % self.nperm[node, slot]
        else:
            raise ValueError(f"unknown search {search!r}; expected 'random' or 'default'")
        if first and k:
            choice[0] = self.default
        return choice

    def features(self, choice: np.ndarray) -> np.ndarray:
        """(k, C, 18) float32 layout config features (README layout config table)."""
        idx = _OFFSET[self.rank][None] + choice  # (k, C, 3) rows of _ALL6
        return _ALL6[idx].reshape(choice.shape[0], choice.shape[1], 18)

    def runtime(self, choice: np.ndarray) -> np.ndarray:
        """(k,) noise-free runtime in ns (eq. 1)."""
        k, C, _ = choice.shape
        op = self.op_cost[np.arange(C)[None, :, None], np.arange(3)[None, None, :], choice].sum(axis=(1, 2))
        nondefault = (choice[:, :, :2] != self.default[None, :, :2]).any(axis=2)
        op += (nondefault & self.is_reshape[None]) @ self.reshape_pen
        if len(self.ce_cost):
            op += (choice[:, self.ce_c, self.ce_s] != self.ce_val[None]) @ self.ce_cost
        if len(self.ve_cost):
            a, sa, b, sb = self.ve.T
            op += (choice[:, a, sa] != choice[:, b, sb]) @ self.ve_cost
        return self.fixed_ns + op


def _vol(shape) -> float:
    return float(np.prod(shape)) if len(shape) else 1.0
