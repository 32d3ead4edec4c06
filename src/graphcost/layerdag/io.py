"""Flat npz format for collections of DAGs (the format of ../shared/data/tpu_tile_graphs/val.npz).

Keys: `node_offsets` (G+1,) int64, `edge_offsets` (G+1,) int64, `node_cat` (N,) int64,
`src`/`dst` (E,) int64 with ids local to each graph, `y` (G,) float32 (NaN where unlabelled).
Graph g owns `node_cat[node_offsets[g]:node_offsets[g+1]]` and `src/dst[edge_offsets[g]:edge_offsets[g+1]]`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphcost.guards.atomic import atomic_write
from graphcost.data.io.npz_stream import DAMAGED_ARCHIVE_ERRORS
from graphcost.errors import GraphcostError
from graphcost.layerdag.dag_record import DAG

FLAT_KEYS = ("node_offsets", "edge_offsets", "node_cat", "src", "dst", "y")


class DAGFileError(GraphcostError, ValueError):
    """A flat DAG npz file is malformed; the message names the file, the key and the problem."""

    def __init__(self, path: Path | str, key: str, problem: str):
        super().__init__(f"{path}: key '{key}': {problem}")
        self.path, self.key, self.problem = Path(path), key, problem


def _check_offsets(path: Path, key: str, offsets: np.ndarray, total: int) -> None:
    if offsets.ndim != 1 or offsets.shape[0] < 1:
        raise DAGFileError(path, key, f"expected a 1-d array of G+1 offsets, got shape {offsets.shape}")
    if offsets[0] != 0 or offsets[-1] != total:
        raise DAGFileError(path, key, f"offsets must start at 0 and end at {total}, got {offsets[0]}..{offsets[-1]}")
    if np.any(np.diff(offsets) < 0):
        raise DAGFileError(path, key, "offsets must be non-decreasing")


def _acyclic(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> bool:
    """Kahn's algorithm: True when repeatedly removing nodes without predecessors removes all."""
    indeg = np.bincount(dst, minlength=num_nodes)
    order = np.argsort(src, kind="stable")
    succ_of = np.split(dst[order], np.searchsorted(src[order], np.arange(1, num_nodes)))
    frontier = list(np.flatnonzero(indeg == 0))
    removed = 0
    while frontier:
        u = frontier.pop()
        removed += 1
        for v in succ_of[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                frontier.append(v)
    return removed == num_nodes


def load_dags(path: str | Path) -> list[DAG]:
    """Read and validate a flat DAG npz file; returns one `DAG` per graph."""
    path = Path(path)
    if path.is_dir():
        raise DAGFileError(path, "*", "is a directory, expected a flat DAG .npz file")
    try:
        data = np.load(path, allow_pickle=False)
    except DAMAGED_ARCHIVE_ERRORS as exc:
        raise DAGFileError(path, "*", f"not a readable npz file ({exc})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):  # a bare .npy array
        raise DAGFileError(path, "*", f"expected an npz archive of {', '.join(FLAT_KEYS)}, got a single .npy array")
    with data:
        missing = [k for k in FLAT_KEYS if k not in data.files]
        if missing:
            raise DAGFileError(path, missing[0], "missing key")
        arrays = {}
        for k in FLAT_KEYS:
            try:
                arrays[k] = data[k]
            except DAMAGED_ARCHIVE_ERRORS as exc:  # corrupt member
                raise DAGFileError(path, k, f"cannot read the array ({exc})") from None
    for key in ("node_offsets", "edge_offsets", "node_cat", "src", "dst"):
        if arrays[key].dtype.kind not in "iu":
            raise DAGFileError(path, key, f"expected an integer dtype, got {arrays[key].dtype}")
        if arrays[key].ndim != 1:
            raise DAGFileError(path, key, f"expected rank 1, got shape {arrays[key].shape}")
    node_off, edge_off = arrays["node_offsets"].astype(np.int64), arrays["edge_offsets"].astype(np.int64)
    _check_offsets(path, "node_offsets", node_off, arrays["node_cat"].shape[0])
    _check_offsets(path, "edge_offsets", edge_off, arrays["src"].shape[0])
    if arrays["dst"].shape != arrays["src"].shape:
        raise DAGFileError(path, "dst", f"shape {arrays['dst'].shape} differs from src {arrays['src'].shape}")
    num_graphs = node_off.shape[0] - 1
    if edge_off.shape[0] - 1 != num_graphs:
        raise DAGFileError(path, "edge_offsets", f"{edge_off.shape[0] - 1} graphs, node_offsets has {num_graphs}")
    y = arrays["y"]
    if y.dtype.kind not in "fiu":
        raise DAGFileError(path, "y", f"expected a float dtype (NaN = unlabelled), got {y.dtype}")
    y = y.astype(np.float64)
    if y.shape != (num_graphs,):
        raise DAGFileError(path, "y", f"expected shape ({num_graphs},), got {y.shape}")
    if np.any(arrays["node_cat"] < 0):
        raise DAGFileError(path, "node_cat", "negative category")
    dags = []
    for g in range(num_graphs):
        n = int(node_off[g + 1] - node_off[g])
        src = arrays["src"][edge_off[g] : edge_off[g + 1]].astype(np.int64)
        dst = arrays["dst"][edge_off[g] : edge_off[g + 1]].astype(np.int64)
        for key, ids in (("src", src), ("dst", dst)):
            if ids.size and (ids.min() < 0 or ids.max() >= n):
                raise DAGFileError(path, key, f"graph {g}: node id out of range [0, {n})")
        if src.size and np.any(src >= dst) and not _acyclic(n, src, dst):  # src < dst everywhere: topological
            raise DAGFileError(path, "src", f"graph {g}: edges form a cycle (or a self-loop); expected a DAG")
        label = float(y[g]) if np.isfinite(y[g]) else None
        dags.append(DAG(arrays["node_cat"][node_off[g] : node_off[g + 1]].astype(np.int64), src, dst, label))
    return dags


def dags_to_arrays(dags: list[DAG]) -> dict[str, np.ndarray]:
    """Pack DAGs into the flat arrays of the on-disk format."""
    node_off = np.zeros(len(dags) + 1, dtype=np.int64)
    edge_off = np.zeros(len(dags) + 1, dtype=np.int64)
    node_off[1:] = np.cumsum([d.num_nodes for d in dags])
    edge_off[1:] = np.cumsum([d.num_edges for d in dags])
    cat = lambda xs: np.concatenate(xs).astype(np.int64) if xs else np.zeros(0, np.int64)  # noqa: E731
    return {
        "node_offsets": node_off,
        "edge_offsets": edge_off,
        "node_cat": cat([d.node_attr for d in dags]),
        "src": cat([d.src for d in dags]),
        "dst": cat([d.dst for d in dags]),
        "y": np.array([np.nan if d.label is None else d.label for d in dags], dtype=np.float32),
    }


def save_dags(dags: list[DAG], path: str | Path) -> Path:
    """Write DAGs to a flat npz file atomically (temp file in the same directory, then rename)."""
    path = Path(path)
    if path.is_dir():
        raise DAGFileError(path, "*", "is a directory; give the .npz file to write")
    with atomic_write(path) as handle:
        np.savez_compressed(handle, **dags_to_arrays(dags))
    return path
