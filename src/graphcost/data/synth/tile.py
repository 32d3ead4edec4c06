"""Synthetic tile-size configurations and an analytical runtime model for one fused kernel.

SYNTHETIC DATA — the runtimes come from the model below, not from hardware.

A kernel is a small synthetic program (about 40 nodes, TpuGraphs Table 1) whose main output has
shape d (rank <= 4, row-major unless its node_feat layout says otherwise). A tile configuration
(README "Tile Config Features") picks an output tile t (output_bounds) and, for kernels with a
convolution, a tile of the kernel's output features (kernel_bounds = (kh, kw, cin, tc));
input_bounds stay 0 as in the real data. Options per output dimension: the powers of two below
d_i and d_i itself; configurations are all combinations in a random order, truncated (the
autotuner enumerates tile sizes in random order under a timeout, TpuGraphs §3).

    tiles(t)   = prod_i ceil(d_i / t_i) * ceil(cout / tc)
    eff(t)     = t_m / (128 ceil(t_m / 128)) * t_s / (8 ceil(t_s / 8))    m, s = most / second-most
                                                                           minor dims (TPU vreg tiles)
    work(t)    = flops_per_element * prod_i t_i / (100 TFLOP/s * eff(t))
    bytes(t)   = (operands + 1) * 4 * prod_i t_i  (+ the kernel tile for convolutions)
    spill(t)   = max(1, 2 * bytes(t) / 16 MiB)  (double-buffered working set beyond VMEM; the
                 options keep only tiles with 2 * bytes(t) <= 16 MiB, as a compiler would)
    T(t)       = tiles(t) * (350 ns + max(work(t), spill(t) * bytes(t) / 900 GB/s))
    runtime_j  = T(t_j) * exp(0.01 N(0, 1));  normalizer_j = T(t_default) * exp(0.005 N(0, 1))

where t_default is the compiler's heuristic: the largest tile whose working set fits in a quarter
of VMEM. Small tiles pay the per-tile overhead, misaligned tiles waste vector lanes, large tiles
spill: the optimum depends on the shapes, which is what a tile-size model must learn.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

import itertools

import numpy as np

from graphcost.data.io.schema import OPCODES
from graphcost.data.synth.programs import Program, default_layout

__all__ = ["TileSimulator"]

PEAK_FLOP_PER_NS = 100e3
BYTES_PER_NS = 900.0
TILE_OVERHEAD_NS = 350.0
VMEM_BYTES = 16 * 2**20


def _options(d: int, cap: int = 5) -> list[int]:
    opts = sorted({1 << k for k in range(int(np.log2(max(d, 1))) + 1) if (1 << k) < d} | {d})
    return opts[-cap:]


class TileSimulator:
    """Tile options and runtime model (module docstring) for one synthetic kernel."""

    def __init__(self, program: Program):
        nodes = program.nodes
        root = nodes[-1]
        main = root.operands[0] if root.opcode == OPCODES["tuple"] and root.operands else len(nodes) - 1
        self.out_shape = tuple(nodes[main].shape) or (1,)
        layout = nodes[main].layout or default_layout(len(self.out_shape))
        self.minor = layout[0] if layout else 0
        self.second = layout[1] if len(layout) > 1 else None
        convs = [n for n in nodes if n.opcode == OPCODES["convolution"]]
        self.kernel_shape = nodes[convs[-1].operands[1]].shape if convs else None
        flops = float(sum(1 for n in nodes if n.opcode not in (OPCODES["parameter"], OPCODES["constant"])))
        for n in nodes:
            if n.opcode == OPCODES["convolution"]:
                kh, kw, cin, _ = nodes[n.operands[1]].shape
                flops += 2.0 * kh * kw * cin
            elif n.opcode == OPCODES["dot"]:
                flops += 2.0 * nodes[n.operands[0]].shape[-1]
        self.flops_per_element = flops
        self.operands = sum(1 for n in nodes if n.opcode == OPCODES["parameter"])

    def options(self, rng: np.random.Generator, max_configs: int) -> np.ndarray:
        """(c, r + 1) int64 rows: output tile sizes per dim, then the kernel output-feature tile."""
        per_dim = [_options(d) for d in self.out_shape]
        per_dim.append(_options(self.kernel_shape[3], cap=4) if self.kernel_shape else [0])
        total = int(np.prod([len(o) for o in per_dim]))
        if total <= 4 * max_configs:
            combos = np.array(list(itertools.product(*per_dim)), dtype=np.int64)
        else:  # sample without enumerating everything
            pick = np.stack([rng.integers(len(o), size=4 * max_configs) for o in per_dim], 1)
            combos = np.unique(np.stack([np.asarray(o)[pick[:, i]] for i, o in enumerate(per_dim)], 1), axis=0)
        fits = self.working_set(combos) <= VMEM_BYTES  # the compiler only emits tiles that fit VMEM
        combos = combos[fits] if fits.any() else combos[np.argsort(self.working_set(combos))[:1]]
        return combos[rng.permutation(len(combos))[:max_configs]]

    def working_set(self, tiles: np.ndarray) -> np.ndarray:
        """(c,) double-buffered bytes of one tile: operands + output (+ the kernel tile)."""
        vol = np.prod(tiles[:, : len(self.out_shape)].astype(np.float64), axis=1)
        nbytes = (self.operands + 1) * 4.0 * vol
        if self.kernel_shape is not None:
            kh, kw, cin, _ = self.kernel_shape
            nbytes = nbytes + 4.0 * kh * kw * cin * tiles[:, -1]
        return 2.0 * nbytes

    def runtime(self, tiles: np.ndarray) -> np.ndarray:
        """(c,) noise-free runtime in ns of each tile configuration (module docstring)."""
        d = np.asarray(self.out_shape, dtype=np.float64)
        t = tiles[:, : len(d)].astype(np.float64)
        n_tiles = np.prod(np.ceil(d / t), axis=1)
        vol = np.prod(t, axis=1)
        tm = t[:, self.minor]
        eff = tm / (128 * np.ceil(tm / 128))
        if self.second is not None:
            ts = t[:, self.second]
            eff = eff * ts / (8 * np.ceil(ts / 8))
        nbytes = (self.operands + 1) * 4.0 * vol
        if self.kernel_shape is not None:
            kh, kw, cin, cout = self.kernel_shape
            tc = tiles[:, -1].astype(np.float64)
            n_tiles = n_tiles * np.ceil(cout / tc)
            nbytes = nbytes + 4.0 * kh * kw * cin * tc
        work = self.flops_per_element * vol / (PEAK_FLOP_PER_NS * eff)
        spill = np.maximum(1.0, 2.0 * nbytes / VMEM_BYTES)
        return n_tiles * (TILE_OVERHEAD_NS + np.maximum(work, spill * nbytes / BYTES_PER_NS))

    def default_tile(self) -> np.ndarray:
        """The compiler heuristic: largest tile (among all options) whose working set fits VMEM/4."""
        per_dim = [_options(d) for d in self.out_shape]
        per_dim.append(_options(self.kernel_shape[3], cap=4) if self.kernel_shape else [0])
        first, best, best_vol = None, None, -1.0
        for combo in itertools.islice(itertools.product(*per_dim), 20000):
            first = combo if first is None else first  # the smallest tile
            vol = float(np.prod(combo[: len(self.out_shape)]))
            if 2 * (self.operands + 1) * 4.0 * vol <= VMEM_BYTES / 4 and vol > best_vol:
                best, best_vol = combo, vol
        return np.array(best if best is not None else first, dtype=np.int64)

    def features(self, tiles: np.ndarray) -> np.ndarray:
        """(c, 24) float32 tile config features (README tile config table)."""
        c, r = len(tiles), len(self.out_shape)
        feat = np.zeros((c, 24), np.float32)
        if self.kernel_shape is not None:
            kh, kw, cin, _ = self.kernel_shape
            kb = np.stack([np.full(c, kh), np.full(c, kw), np.full(c, cin), tiles[:, -1]], 1).astype(np.float64)
            feat[:, 0:4] = kb
            feat[:, 6] = kb.sum(1)
            feat[:, 7] = kb.prod(1)
        out = tiles[:, :r].astype(np.float64)
        feat[:, 8 : 8 + r] = out
        feat[:, 14] = out.sum(1)
        feat[:, 15] = out.prod(1)
        return feat
