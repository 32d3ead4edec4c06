"""Fixed-width per-configuration features of one prepared graph: the input of the tree ranker
(`graphcost.models.trees`) and of the tree baselines of the documentation's benchmarks.

Layout (59 columns). For every configurable node c and layout slot s (output, input, kernel;
TpuGraphs §3), `layers.layout_change_features` says whether the configuration moves the slot off
the compiler's default (row-major) layout and whether it moves the minor-most dimension. With the
node's opcode class k (dot, convolution, anything else: XLA HloOpcode ids 34, 26) and its output
size v_c = log2(max(1, node_feat[c, 28])) (elements of the output tensor):

    moved[k, s]       = Σ_{c of class k} moved_{c,s}                 (9 columns)
    moved_size[k, s]  = Σ_{c of class k} moved_{c,s} · v_c            (9)
    minor[k, s]       = Σ_{c of class k} minor_{c,s}                 (9)
    share             = Σ_{c,s} moved_{c,s} / #(slots with a layout)  (1)
    graph             = log(1 + N), log(1 + Σ_n node_feat[n, 28]), C  (3)

then the same moves weighted by the SHARE of the program's data each slot's tensor holds,
f_{c,s} = e_{c,s} / Σ_n e_n, with e the elements of the slot's tensor (output: the node's output;
input: its largest operand; kernel: its smallest, when it has two or more), so that moving a tensor
that holds 10% of a program's data counts the same in a small and in a large program (the size
columns above are log2 of absolute element counts, which differ between families by orders of
magnitude):

    moved_frac[k, s]  = Σ_{c of class k} moved_{c,s} · f_{c,s}        (9)
    minor_frac[k, s]  = Σ_{c of class k} minor_{c,s} · f_{c,s}        (9)
    totals            = Σ_{c,s} moved·f, Σ_{c, s ≠ output} moved·f, Σ_{c,s} minor·f   (3)

On leave-one-family-out these 21 columns lifted LightGBM and ridge on the table by 0.015-0.05
Kendall τ (documentation: Cost models). They come last: trees fitted
on the first 31 columns alone (before they existed) still score (`LEGACY_LAYOUT_COLUMNS`).

Tile (34 columns): the 24 configuration features, sign(x)·log(1 + |x|), and the 3 graph columns.

Both kinds end with the 7 columns of what the compiler did to the configuration
(`graphcost.data.transforms.compiled.compiled_columns`: copy and transpose bytes over the program's
bytes, counts over its nodes). A graph without ``config_compiled_stats`` (a TpuGraphs file, an older
collection) gets NaN there: LightGBM sends missing values down the branch it learnt for them
(`graphcost.models.trees`). Trees fitted before these columns existed read the first 52
(`SHARE_LAYOUT_COLUMNS`) or 27 (`PLAIN_TILE_COLUMNS`).

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from graphcost.data.transforms.compiled import COMPILED_COLUMNS, compiled_columns
from graphcost.data.transforms.compress import decompress_layout_config
from graphcost.models.layers import layout_change_features

OPCODE_CLASS = {34: 0, 26: 1}  # dot, convolution; every other opcode (reshape, ...) is class 2
NUM_CLASSES = 3
LEGACY_LAYOUT_COLUMNS = 3 * NUM_CLASSES * 3 + 1 + 3  # 31: the table before the data-share columns
SHARE_LAYOUT_COLUMNS = LEGACY_LAYOUT_COLUMNS + 2 * NUM_CLASSES * 3 + 3  # 52: before the compiled columns
LAYOUT_COLUMNS = SHARE_LAYOUT_COLUMNS + COMPILED_COLUMNS
PLAIN_TILE_COLUMNS = 24 + 3  # 27: before the compiled columns
TILE_COLUMNS = PLAIN_TILE_COLUMNS + COMPILED_COLUMNS
READABLE_WIDTHS = {"layout": (LEGACY_LAYOUT_COLUMNS, SHARE_LAYOUT_COLUMNS, LAYOUT_COLUMNS),
                   "tile": (PLAIN_TILE_COLUMNS, TILE_COLUMNS)}  # table widths that trees may have been fitted on
COMPILED_SLICE = {"layout": slice(SHARE_LAYOUT_COLUMNS, LAYOUT_COLUMNS),
                  "tile": slice(PLAIN_TILE_COLUMNS, TILE_COLUMNS)}  # where each kind's table holds the compiled columns
MOVED_COLUMNS = NUM_CLASSES * 3  # the first columns of a layout table: moved[k, s]
CHUNK = 4096  # configurations decompressed at a time


def graph_columns(node_feat: np.ndarray, num_config_nodes: int) -> np.ndarray:
    """(3,) graph-size columns shared by every configuration of the graph."""
    return np.array([np.log1p(len(node_feat)), np.log1p(float(np.asarray(node_feat)[:, 28].sum())),
                     float(num_config_nodes)], dtype=np.float32)


def data_shares(node_feat: np.ndarray, edge_index: np.ndarray, config_node_index: np.ndarray) -> np.ndarray:
    """(C, 3) float64 f_{c,s}: the share of all nodes' output elements that each configurable node's
    output, largest operand and smallest operand (of two or more) hold (module docstring)."""
    elems = np.maximum(np.asarray(node_feat, dtype=np.float64)[:, 28], 1.0)  # (N,)
    edges = np.asarray(edge_index, dtype=np.int64).reshape(-1, 2)  # [u, v]: u consumes v
    ids = np.asarray(config_node_index, dtype=np.int64)
    out = np.zeros((len(ids), 3), dtype=np.float64)
    out[:, 0] = elems[ids]
    order = np.argsort(edges[:, 0], kind="stable")
    users, operands = edges[order, 0], edges[order, 1]
    for j, c in enumerate(ids):
        lo, hi = np.searchsorted(users, c), np.searchsorted(users, c, side="right")
        sizes = elems[operands[lo:hi]]
        if len(sizes):
            out[j, 1] = sizes.max()
        if len(sizes) > 1:
            out[j, 2] = sizes.min()
    return out / elems.sum()


def layout_table(cfg: np.ndarray | torch.Tensor, node_feat: np.ndarray, node_opcode: np.ndarray,
                 config_node_index: np.ndarray, shares: np.ndarray | None = None) -> np.ndarray:
    """(K, 52) float32 (the columns before the compiled ones) from decoded layout configurations cfg
    (K, C, 18) of one graph; `shares`: its (C, 3) `data_shares` (None: the data-share columns are zeros)."""
    cfg = torch.as_tensor(np.asarray(cfg, dtype=np.float32))
    k, c = cfg.shape[0], cfg.shape[1]
    change = layout_change_features(cfg).numpy()  # (K, C, 6): moved (3 slots), minor (3 slots)
    moved, minor = change[..., :3], change[..., 3:]  # (K, C, 3)
    ids = np.asarray(config_node_index, dtype=np.int64)
    cls = np.array([OPCODE_CLASS.get(int(o), 2) for o in np.asarray(node_opcode)[ids]], dtype=np.int64)  # (C,)
    size = np.log2(np.maximum(np.asarray(node_feat, dtype=np.float64)[ids, 28], 1.0)).astype(np.float32)  # (C,)
    onehot = np.eye(NUM_CLASSES, dtype=np.float32)[cls]  # (C, 3)
    per_class = [np.einsum("kcs,cj->kjs", x, w) for x, w in ((moved, onehot), (moved, onehot * size[:, None]),
                                                              (minor, onehot))]  # 3 x (K, 3 classes, 3 slots)
    slots = float(max(1, int((cfg[0].reshape(c, 3, 6) >= 0).any(-1).sum()))) if c else 1.0
    share = moved.sum((1, 2)) / slots  # (K,)
    table = np.concatenate([p.reshape(k, -1) for p in per_class] + [share[:, None]], axis=1)
    graph = np.broadcast_to(graph_columns(node_feat, c), (k, 3))
    f = np.zeros((c, 3)) if shares is None else np.asarray(shares, dtype=np.float64)  # (C, 3)
    weighted = [np.einsum("kcs,cs,cj->kjs", x, f, onehot).reshape(k, -1) for x in (moved, minor)]  # 2 x (K, 9)
    mf = moved * f  # (K, C, 3)
    totals = np.stack([mf.sum((1, 2)), mf[..., 1:].sum((1, 2)), (minor * f).sum((1, 2))], axis=1)  # (K, 3)
    return np.hstack([table, graph, *weighted, totals]).astype(np.float32)


def config_table(prepared, rows: np.ndarray | None = None) -> np.ndarray:
    """(K', F) float32 features of configurations `rows` (default: all) of a PreparedGraph
    (F = LAYOUT_COLUMNS or TILE_COLUMNS; the compiled columns are NaN when it has no statistics)."""
    rows = np.arange(prepared.num_configs) if rows is None else np.asarray(rows, dtype=np.int64)
    stats = getattr(prepared, "compiled", None)
    compiled = compiled_columns(None if stats is None else np.asarray(stats)[rows], prepared.node_feat, len(rows))
    if prepared.kind == "tile":
        cf = np.asarray(prepared.config_feat, dtype=np.float32)[rows]
        graph = np.broadcast_to(graph_columns(prepared.node_feat, 0), (len(rows), 3))
        return np.hstack([np.sign(cf) * np.log1p(np.abs(cf)), graph, compiled]).astype(np.float32)
    out = np.empty((len(rows), LAYOUT_COLUMNS), dtype=np.float32)
    shares = data_shares(prepared.node_feat, prepared.edge_index, prepared.config_node_index)
    for at, cfg in decoded_layouts(prepared, rows):
        out[at, :SHARE_LAYOUT_COLUMNS] = layout_table(cfg, prepared.node_feat, prepared.node_opcode,
                                                      prepared.config_node_index, shares)
    out[:, COMPILED_SLICE["layout"]] = compiled
    return out


def decoded_layouts(prepared, rows: np.ndarray) -> Iterator[tuple[slice, torch.Tensor]]:
    """The layout configurations `rows` of a PreparedGraph decoded, CHUNK at a time: (where in
    `rows`, (k, C, 18) float32 minor_to_major entries, -1 = none)."""
    for start in range(0, len(rows), CHUNK):
        part = rows[start:start + CHUNK]
        codes = torch.from_numpy(np.ascontiguousarray(prepared.config_codes[part]))
        yield slice(start, start + len(part)), decompress_layout_config(codes)
