"""Configuration de-duplication (TGraph §2.2.2).

Many layout configuration sets occur several times with runtimes differing by up to ~0.4%;
training on identical inputs with different targets makes the ranking loss noisy. We keep one
copy of each distinct configuration, the one with the SMALLEST runtime (ties: smallest index),
which makes the result deterministic.

* layout: two configurations are identical when their whole (C, 18) `node_config_feat` blocks
  are — equivalently their (C, 3) base-7 codes (`graphcost.data.transforms.compress`), which is what we hash;
* tile: identical (24,) `config_feat` rows (runtime = config_runtime / normalizer).

Rows are hashed to 64 bits chunk by chunk (`row_hashes`), so a 100k-configuration file never
needs its float features in memory at once; groups of equal hashes are then verified exactly
against the (small) compressed rows, falling back to exact grouping if a collision occurs.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorised SplitMix64 finaliser on uint64 (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def _as_uint_rows(rows: np.ndarray) -> np.ndarray:
    """(k, ...) integer or float rows -> (k, D) uint64 bit patterns (-0.0 folded into 0.0)."""
    rows = np.asarray(rows)
    rows = rows.reshape(rows.shape[0], -1)
    if rows.dtype.kind == "f":
        rows = np.ascontiguousarray(rows.astype(np.float32) + np.float32(0.0))  # -0.0 -> 0.0
        return rows.view(np.uint32).astype(np.uint64)
    if rows.dtype.kind in "iu":
        return rows.astype(np.int64).view(np.uint64)
    raise TypeError(f"cannot hash rows of dtype {rows.dtype}")


def row_hashes(rows: np.ndarray) -> np.ndarray:
    """64-bit hash of each row: h = sum_j splitmix64(x_j + (j+1) * golden) (mod 2**64).

    Args:
        rows: (k, ...) integer codes or float features; all axes after the first form the row.
    Returns:
        (k,) uint64. Equal rows -> equal hashes; different rows collide with prob. ~2**-64.
    """
    x = _as_uint_rows(rows)  # (k, D)
    pos = (np.arange(1, x.shape[1] + 1, dtype=np.uint64) * _GOLDEN)[None, :]  # (1, D)
    with np.errstate(over="ignore"):
        return _splitmix64(x + pos).sum(axis=1, dtype=np.uint64)


def _groups_from_keys(keys: np.ndarray, runtime: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort by (key, runtime, index); return (order, is_group_start) over the sorted order."""
    index = np.arange(keys.shape[0])
    order = np.lexsort((index, runtime, keys))  # primary: key, then runtime, then index
    sk = keys[order]
    start = np.ones(order.shape[0], dtype=bool)
    start[1:] = sk[1:] != sk[:-1]
    return order, start


def _verify_groups(rows: np.ndarray, order: np.ndarray, start: np.ndarray, chunk: int = 65536) -> bool:
    """True iff every row equals the first row of its hash group (no hash collision)."""
    rep = order[np.maximum.accumulate(np.where(start, np.arange(order.size), 0))]  # (K,) representative
    dup = np.flatnonzero(~start)  # positions in sorted order that claim to be duplicates
    for s in range(0, dup.size, chunk):
        d = dup[s : s + chunk]
        if not np.array_equal(rows[order[d]], rows[rep[d]]):
            return False
    return True


def dedup_min_runtime(
    hashes: np.ndarray, runtime: np.ndarray, rows: np.ndarray | None = None
) -> np.ndarray:
    """Indices of the configurations to keep: one per distinct row, the fastest (TGraph §2.2.2).

    Args:
        hashes: (K,) uint64 row hashes (`row_hashes`, possibly computed chunk by chunk).
        runtime: (K,) runtimes; among identical rows the smallest is kept (ties: smallest index).
        rows: (K, ...) the hashed rows (e.g. compressed codes) used to verify hash groups exactly.
            If omitted, rows with equal hashes are trusted to be equal.
    Returns:
        (K',) int64, ascending indices of the kept configurations.
    """
    hashes = np.asarray(hashes)
    runtime = np.asarray(runtime, dtype=np.float64)
    if hashes.shape != runtime.shape or hashes.ndim != 1:
        raise ValueError(f"hashes {hashes.shape} and runtime {runtime.shape} must be equal 1-D shapes")
    order, start = _groups_from_keys(hashes, runtime)
    if rows is not None and not _verify_groups(np.asarray(rows), order, start):
        # Hash collision (astronomically rare): group exactly instead.
        flat = np.ascontiguousarray(np.asarray(rows).reshape(hashes.shape[0], -1))
        _, exact = np.unique(flat, axis=0, return_inverse=True)
        order, start = _groups_from_keys(exact.reshape(-1), runtime)
    return np.sort(order[start]).astype(np.int64)


def dedup_rows(rows: np.ndarray, runtime: np.ndarray) -> np.ndarray:
    """In-memory convenience: keep indices for (K, ...) rows (layout codes or tile config_feat)."""
    return dedup_min_runtime(row_hashes(rows), runtime, rows)
