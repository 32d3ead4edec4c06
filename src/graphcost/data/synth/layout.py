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
    T_copy(e) = 500 ns + 2 * bytes / 900 GB/s: the copy XLA inserts on edge e when the layout a
          producer provides differs from the layout its consumer expects (TpuGraphs Fig. 3).
          Layout propagation: an elementwise op with a default layout adopts its first operand's
          layout, so a configurable node's chosen output layout flows down elementwise chains.
          Provided layout = the chosen output layout of the configurable node the tensor flows
          from, else the tensor's fixed layout (node_feat[134:140]). Expected layout = the chosen
          input (first operand) or kernel (convolution) layout of a configurable consumer; for the
          other operands of a propagating op, the layout of its first operand; otherwise the
          consumer's fixed layout when ranks agree, else the default layout. Edges whose two
          sides are both fixed only add a constant; the rest are summed per distinct comparison
          (config-vs-constant and config-vs-config pairs, the latter couple configurable nodes)
    measured(x) = T(x) * exp(sigma * N(0, 1))  (seeded measurement noise, sigma = 1 %)

Search modes: "random" draws every layout uniformly; "default" starts from the compiler's default
configuration (configuration 0) and mutates a few percent of the layouts (genetic-search-like),
so its runtimes are close to each other, as in the real default collections.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

import itertools
import numpy as np

from graphcost.data.io.schema import OPCODES
from graphcost.data.synth.programs import Program, default_layout

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

    def __init__(self, program: Program):
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
        self.fixed_ns = sum(4.0 * _vol(n.shape) / BYTES_PER_NS + 50.0 for u, n in enumerate(nodes) if u not in pos)
        for c, u in enumerate(self.config_ids.tolist()):
            self._op_costs(c, nodes[u], nodes)
        # Layout propagation: a layout-transparent node carries the layout of its first operand, so
        # src[v] = the configurable node whose chosen output layout v's tensor has (-1: fixed layout).
        src = np.full(len(nodes), -1, np.int64)
        for v, n in enumerate(nodes):
            if v in pos:
                src[v] = pos[v]
            elif _propagates(n, nodes):
                src[v] = src[n.operands[0]]
        flow_default = [int(self.default[src[v], 0]) if src[v] >= 0 else _perm_index(layout_of[v]) for v in range(len(nodes))]
        for c, u in enumerate(self.config_ids.tolist()):
            self.default[c, 1] = flow_default[nodes[u].operands[0]]  # the compiler's default avoids the input copy
        const_cost: dict[tuple[int, int, int], float] = {}  # (c, slot, perm idx) -> copy cost
        var_cost: dict[tuple[int, int, int, int], float] = {}  # (c_a, slot_a, c_b, slot_b) -> copy cost
        for q, nq in enumerate(nodes):
            for j, v in enumerate(nq.operands):
                if j == 0 and q not in pos and _propagates(nq, nodes):
                    continue  # q adopts v's layout: no copy here
                provided = ("var", int(src[v]), 0) if src[v] >= 0 else ("const", flow_default[v])
                if q in pos and j == 0:
                    expected = ("var", pos[q], 1)
                elif q in pos and j == 1 and nq.opcode == OPCODES["convolution"]:
                    expected = ("var", pos[q], 2)
                elif q not in pos and _propagates(nq, nodes):  # other operands must match operand 0's layout
                    o = nq.operands[0]
                    expected = ("var", int(src[o]), 0) if src[o] >= 0 else ("const", flow_default[o])
                elif q not in pos and len(nq.shape) == len(nodes[v].shape) and nq.element_type != "tuple":
                    expected = ("const", _perm_index(layout_of[q]))
                else:
                    expected = ("const", 0)  # default layout of v's rank
                cost = COPY_LAUNCH_NS + 2 * 4.0 * _vol(nodes[v].shape) / BYTES_PER_NS
                if provided[0] == "const" and expected[0] == "const":
                    self.fixed_ns += cost if provided[1] != expected[1] else 0.0
                elif provided[0] == "var" and expected[0] == "var":
                    if provided[1:] != expected[1:]:
                        key = provided[1:] + expected[1:]
                        var_cost[key] = var_cost.get(key, 0.0) + cost
                else:
                    var, const = (provided, expected) if provided[0] == "var" else (expected, provided)
                    key = (var[1], var[2], const[1])
                    const_cost[key] = const_cost.get(key, 0.0) + cost
        self.nperm = np.array([[len(_PERMS[r]) for r in row] for row in self.rank], dtype=np.int64).reshape(C, 3)
        self.nperm[:, 2] = np.where(self.rank[:, 2] > 0, self.nperm[:, 2], 1)
        ce = np.array([k + (v,) for k, v in const_cost.items()], dtype=np.float64).reshape(-1, 4)
        self.ce_c, self.ce_s, self.ce_val, self.ce_cost = ce[:, 0].astype(int), ce[:, 1].astype(int), ce[:, 2].astype(int), ce[:, 3]
        ve = np.array([k + (v,) for k, v in var_cost.items()], dtype=np.float64).reshape(-1, 5)
        self.ve = ve[:, :4].astype(int)
        self.ve_cost = ve[:, 4]
        self.is_reshape = np.array([nodes[u].opcode == OPCODES["reshape"] for u in self.config_ids.tolist()], bool)

    def _op_costs(self, c: int, n, nodes) -> None:
        """Per-slot operator cost tables of configurable node c (eq. 2)."""
        x = nodes[n.operands[0]]
        is_conv = n.opcode == OPCODES["convolution"]
        shapes = [n.shape, x.shape, nodes[n.operands[1]].shape if is_conv else ()]
        self.rank[c] = [len(s) for s in shapes]
        self.default[c] = [_perm_index(n.layout or default_layout(len(n.shape))), 0, 0]
        out_bytes = 4.0 * _vol(n.shape)
        io_time = (out_bytes + 4 * _vol(x.shape)) / BYTES_PER_NS
        if is_conv:
            kh, kw, cin, _ = shapes[2]
            base = max(2.0 * _vol(n.shape) * kh * kw * cin / PEAK_FLOP_PER_NS, io_time)
            weights, prefer, penalty = (0.5, 0.3, 0.2), (None, 3, 3), 1.25
        elif n.opcode == OPCODES["dot"]:
            base = max(2.0 * _vol(n.shape) * x.shape[-1] / PEAK_FLOP_PER_NS, io_time)
            weights, prefer, penalty = (0.6, 0.4, 0.0), (None, len(x.shape) - 1, None), 1.2
        else:  # reshape
            base = 2 * out_bytes / BYTES_PER_NS
            weights, prefer, penalty = (0.6, 0.4, 0.0), (None, None, None), 1.0
            self.reshape_pen[c] = 2 * out_bytes / BYTES_PER_NS
        for s in range(3):
            if s == 2 and not is_conv:
                self.op_cost[c, s, 0] = 0.0
                continue
            perms = _PERMS[self.rank[c, s]]
            pref = np.ones(len(perms))
            if prefer[s] is not None and len(shapes[s]):
                pref = np.where(perms[:, 0] == prefer[s], 1.0, penalty)
            self.op_cost[c, s, : len(perms)] = base * weights[s] * pref / _eff(shapes[s], perms)

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


_TRANSPARENT = {OPCODES[k] for k in (
    "add", "multiply", "maximum", "minimum", "subtract", "divide", "select", "compare", "exponential", "tanh",
    "rsqrt", "negate", "convert", "logistic", "abs", "sqrt",
)}  # fmt: skip


def _propagates(n, nodes) -> bool:
    """Elementwise ops with the default layout take their first operand's layout (layout propagation)."""
    return (
        n.opcode in _TRANSPARENT and n.layout is None and bool(n.operands)
        and len(nodes[n.operands[0]].shape) == len(n.shape)
    )  # fmt: skip


def _vol(shape) -> float:
    return float(np.prod(shape)) if len(shape) else 1.0
