"""Fixed-width per-configuration features of one prepared graph: the input of the tree ranker
(`graphcost.models.trees`) and of the tree baselines in `benchmarks/bench_real.py`.

Layout (31 columns). For every configurable node c and layout slot s (output, input, kernel;
TpuGraphs §3), `layers.layout_change_features` says whether the configuration moves the slot off
the compiler's default (row-major) layout and whether it moves the minor-most dimension. With the
node's opcode class k (dot, convolution, anything else: XLA HloOpcode ids 34, 26) and its output
size v_c = log2(max(1, node_feat[c, 28])) (elements of the output tensor):

    moved[k, s]       = Σ_{c of class k} moved_{c,s}                 (9 columns)
    moved_size[k, s]  = Σ_{c of class k} moved_{c,s} · v_c            (9)
    minor[k, s]       = Σ_{c of class k} minor_{c,s}                 (9)
    share             = Σ_{c,s} moved_{c,s} / #(slots with a layout)  (1)
    graph             = log(1 + N), log(1 + Σ_n node_feat[n, 28]), C  (3)

Tile (27 columns): the 24 configuration features, sign(x)·log(1 + |x|), and the 3 graph columns.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from graphcost.data.transforms.compress import decompress_layout_config
from graphcost.models.layers import layout_change_features

OPCODE_CLASS = {34: 0, 26: 1}  # dot, convolution; every other opcode (reshape, ...) is class 2
NUM_CLASSES = 3
LAYOUT_COLUMNS = 3 * NUM_CLASSES * 3 + 1 + 3
MOVED_COLUMNS = NUM_CLASSES * 3  # the first columns of a layout table: moved[k, s]
TILE_COLUMNS = 24 + 3
CHUNK = 4096  # configurations decompressed at a time


def graph_columns(node_feat: np.ndarray, num_config_nodes: int) -> np.ndarray:
    """(3,) graph-size columns shared by every configuration of the graph."""
    return np.array([np.log1p(len(node_feat)), np.log1p(float(np.asarray(node_feat)[:, 28].sum())),
                     float(num_config_nodes)], dtype=np.float32)


def layout_table(cfg: np.ndarray | torch.Tensor, node_feat: np.ndarray, node_opcode: np.ndarray,
                 config_node_index: np.ndarray) -> np.ndarray:
    """(K, 31) float32 from decoded layout configurations cfg (K, C, 18) of one graph."""
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
    return np.hstack([table, graph]).astype(np.float32)


def config_table(prepared, rows: np.ndarray | None = None) -> np.ndarray:
    """(K', F) float32 features of configurations `rows` (default: all) of a PreparedGraph."""
    rows = np.arange(prepared.num_configs) if rows is None else np.asarray(rows, dtype=np.int64)
    if prepared.kind == "tile":
        cf = np.asarray(prepared.config_feat, dtype=np.float32)[rows]
        graph = np.broadcast_to(graph_columns(prepared.node_feat, 0), (len(rows), 3))
        return np.hstack([np.sign(cf) * np.log1p(np.abs(cf)), graph]).astype(np.float32)
    out = np.empty((len(rows), LAYOUT_COLUMNS), dtype=np.float32)
    for at, cfg in decoded_layouts(prepared, rows):
        out[at] = layout_table(cfg, prepared.node_feat, prepared.node_opcode, prepared.config_node_index)
    return out


def decoded_layouts(prepared, rows: np.ndarray) -> Iterator[tuple[slice, torch.Tensor]]:
    """The layout configurations `rows` of a PreparedGraph decoded, CHUNK at a time: (where in
    `rows`, (k, C, 18) float32 minor_to_major entries, -1 = none)."""
    for start in range(0, len(rows), CHUNK):
        part = rows[start:start + CHUNK]
        codes = torch.from_numpy(np.ascontiguousarray(prepared.config_codes[part]))
        yield slice(start, start + len(part)), decompress_layout_config(codes)
