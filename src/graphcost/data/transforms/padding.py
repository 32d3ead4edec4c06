"""-1 padding of `layout_minor_to_major` in node_feat[134:140] (TGraph §2.2.4).

TpuGraphs node features are 0-padded beyond a tensor's rank, but 0 is a valid dimension index
in a minor-to-major permutation, and `node_config_feat` is -1 padded. TGraph re-pads
node_feat[134:140] with -1 beyond the rank so both share one embedding table.

Rank per node comes from the node feature table (TpuGraphs README "Node Features"):
columns 21..26 are `shape_dimensions_0..5` (0-padded beyond the rank; a scalar or tuple has
none). Because a genuine dimension may have size 0, the rank is taken as the largest of
  * 1 + the last position i with shape_dimensions_i != 0,
  * 1 + the last position i with minor_to_major_i > 0 (a positive index must be inside the rank),
  * 1 + max(minor_to_major) when positive (a permutation of 0..r-1 implies rank >= max + 1).
An all-zero row (scalar, tuple, or rank 1 with an unknown size) falls back to the dims.
Values already -1 count as padding, so the transform is idempotent.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import numpy as np

SHAPE_DIMS = slice(21, 27)  # shape_dimensions_0..5
MINOR_TO_MAJOR = slice(134, 140)  # layout_minor_to_major_0..5
PAD_VALUE = -1.0


def _last_true_plus_one(mask: np.ndarray) -> np.ndarray:
    """(N, 6) bool -> (N,) 1 + index of the last True per row (0 if none)."""
    width = mask.shape[1]
    rev_first = np.argmax(mask[:, ::-1], axis=1)
    return np.where(mask.any(axis=1), width - rev_first, 0)


def tensor_rank(node_feat: np.ndarray) -> np.ndarray:
    """(N, 140) node features -> (N,) int64 tensor rank of each node's output (see module doc)."""
    node_feat = np.asarray(node_feat)
    dims = node_feat[:, SHAPE_DIMS]  # (N, 6)
    m2m = node_feat[:, MINOR_TO_MAJOR]  # (N, 6)
    rank = _last_true_plus_one(dims != 0)
    rank = np.maximum(rank, _last_true_plus_one(m2m > 0))
    top = np.max(m2m, axis=1, initial=-1).astype(np.int64)
    rank = np.maximum(rank, np.where(top > 0, top + 1, 0))  # an all-zero layout says nothing
    return np.clip(rank, 0, 6).astype(np.int64)


def pad_minor_to_major(node_feat: np.ndarray, rank: np.ndarray | None = None) -> np.ndarray:
    """Return a float32 copy of node_feat with node_feat[:, 134+i] = -1 for i >= rank (TGraph §2.2.4).

    Args:
        node_feat: (N, 140) features, 0-padded as in TpuGraphs (or already -1 padded).
        rank: optional (N,) ranks; computed by `tensor_rank` if omitted.
    Returns:
        (N, 140) float32.
    """
    node_feat = np.asarray(node_feat)
    if node_feat.ndim != 2 or node_feat.shape[1] != 140:
        raise ValueError(f"node_feat: expected shape (N, 140), got {node_feat.shape}")
    out = node_feat.astype(np.float32, copy=True)
    rank = tensor_rank(node_feat) if rank is None else np.asarray(rank, dtype=np.int64)
    beyond = np.arange(6)[None, :] >= rank[:, None]  # (N, 6)
    out[:, MINOR_TO_MAJOR][beyond] = PAD_VALUE
    return out
