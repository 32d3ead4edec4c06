"""Load and save TpuGraphs npz files (schema: `graphcost.data.io.schema`).

* `load_graph(path)` -> `LayoutGraph` or `TileGraph` (kind from the keys), validated by default.
  ``lazy_config_feat=True`` keeps a layout file's ``node_config_feat`` on disk as a
  `LazyNpyArray` (shape, dtype, row indexing, ``iter_chunks``), so a 100,000-configuration NLP
  file (720 MB of float32) is validated and processed chunk by chunk in bounded memory.
* `iter_node_config_feat_chunks(path, chunk_size)` streams ``(start, (k, nc, 18) float32)``
  straight from the zip member (np.savez or np.savez_compressed files).
* `save_graph(graph, path)` writes the official keys atomically (temporary file + os.replace),
  streaming a lazy ``node_config_feat``.

Index arrays are returned as int64 and feature arrays as float32 (the dtypes graphcost computes
with); runtimes and opcodes keep the dtype stored in the file. Unknown extra keys are ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from graphcost.data.graph import LAYOUT_CONFIG_DIM, LayoutGraph, TileGraph
from graphcost.data.io.npz_stream import (
    LazyNpyArray, NpzWriter, check_declared_memory, check_zip_magic, damaged_npz, header_from_zip, iter_rows,
    read_member_header,
)  # fmt: skip
from graphcost.data.io.schema import SchemaError, detect_kind, keys_for_kind
from graphcost.data.io.validate import graph_arrays, validate_arrays

__all__ = [
    "load_graph", "save_graph", "iter_node_config_feat_chunks", "placeholder_runtimes", "LazyNpyArray", "FILE_KEY",
]  # fmt: skip

FILE_KEY = "*"  # the `key` of a SchemaError about the file as a whole
_INDEX_KEYS = ("edge_index", "node_config_ids", "node_splits")
_FLOAT_KEYS = ("node_feat", "config_feat", "node_config_feat")


def _open_npz(path: Path):
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such TpuGraphs npz file")
    check_zip_magic(path, FILE_KEY)  # np.load would try to unpickle anything else ("pickled data")
    with damaged_npz(path, FILE_KEY):
        return np.load(path, allow_pickle=False)


def _read_key(npz, path: Path, key: str) -> np.ndarray:
    """``npz[key]`` after checking its header fits the member (no huge allocation from a bad header)."""
    header_from_zip(npz.zip, path, key)
    with damaged_npz(path, key):
        return npz[key]


def placeholder_runtimes(kind: str, num_configs: int) -> dict[str, np.ndarray]:
    """Runtimes of an unlabelled graph: ones for config_runtime (tile: and the normalizers), (c,) float64."""
    ones = np.ones(num_configs, dtype=np.float64)
    if kind == "tile":
        return {"config_runtime": ones, "config_runtime_normalizers": ones.copy()}
    return {"config_runtime": ones}


def load_graph(
    path: str | Path,
    validate: bool = True,
    lazy_config_feat: bool = False,
    check_values: bool = True,
    labelled: bool = True,
) -> LayoutGraph | TileGraph:
    """Read one TpuGraphs npz file into a `LayoutGraph` / `TileGraph`.

    Args:
        path: the ``.npz`` file.
        validate: run `graphcost.data.io.validate.validate_arrays` (raises `SchemaError`).
        lazy_config_feat: layout files only: leave ``node_config_feat`` on disk as a
            `LazyNpyArray` instead of reading it (bounded memory for the NLP files).
        check_values: with `validate`, also check values (ranges, finiteness, acyclicity);
            the lazy ``node_config_feat`` is then scanned in chunks.
        labelled: False for files to rank, whose runtimes are hidden (placeholders or absent):
            validated without the runtime checks, and ``config_runtime`` (tile: and
            ``config_runtime_normalizers``) come back as ones, never the file's placeholders.
    """
    path = Path(path)
    with _open_npz(path) as npz:
        kind = detect_kind(npz.files, path)
        eager = [s.name for s in keys_for_kind(kind) if s.name in npz.files
                 and not (s.name == "node_config_feat" and lazy_config_feat)]
        check_declared_memory(npz.zip, path, eager)
        arrays: dict = {}
        for spec in keys_for_kind(kind):
            if spec.name not in npz.files:
                continue
            if spec.name == "node_config_feat" and lazy_config_feat:
                arrays[spec.name] = LazyNpyArray(path, spec.name)
            else:
                arrays[spec.name] = _read_key(npz, path, spec.name)
    if validate:
        validate_arrays(arrays, path=path, kind=kind, check_values=check_values, labelled=labelled)
    if not labelled:
        configs = arrays["config_feat" if kind == "tile" else "node_config_feat"]
        arrays.update(placeholder_runtimes(kind, int(configs.shape[0])))
    for key in _INDEX_KEYS:
        if key in arrays:
            arrays[key] = _as_int64(arrays[key], path, key)
    for key in _FLOAT_KEYS:
        if key in arrays and isinstance(arrays[key], np.ndarray):
            arrays[key] = arrays[key].astype(np.float32, copy=False)
    if kind == "tile":
        return TileGraph(path=path, **arrays)
    return LayoutGraph(path=path, **arrays)


def _as_int64(values: np.ndarray, path: Path, key: str) -> np.ndarray:
    """`values` as int64; SchemaError naming `key` and the value when an unsigned one does not fit
    (a uint64 2**64 - 1 would otherwise become -1 and be reported as such)."""
    if values.dtype.kind == "u" and values.size and values.dtype.itemsize >= 8:
        big = values > np.iinfo(np.int64).max
        if big.any():
            i = np.unravel_index(int(np.argmax(big)), values.shape)
            raise SchemaError(path, key, f"index value {int(values[i])} at index {tuple(int(x) for x in i)} "
                                         "is out of range (above 2**63 - 1)")
    return values.astype(np.int64, copy=False)


def iter_node_config_feat_chunks(path: str | Path, chunk_size: int = 1024) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(start, node_config_feat[start:start + k])`` as float32 (k, nc, 18) chunks.

    Reads the ``node_config_feat.npy`` member of the zip stream directly; memory is
    O(chunk_size x nc x 18), never the whole (c, nc, 18) array.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such TpuGraphs npz file")
    header = read_member_header(path, "node_config_feat")
    if len(header.shape) != 3 or header.shape[2] != LAYOUT_CONFIG_DIM:
        raise SchemaError(path, "node_config_feat", f"shape {header.shape}, expected (c, nc, {LAYOUT_CONFIG_DIM})")
    if header.dtype.kind != "f":
        raise SchemaError(path, "node_config_feat", f"dtype {header.dtype} not allowed (README: float32)")
    for start, chunk in iter_rows(path, "node_config_feat", chunk_size):
        yield start, chunk.astype(np.float32, copy=False)


def save_graph(
    graph: LayoutGraph | TileGraph,
    path: str | Path,
    compressed: bool = True,
    validate: bool = True,
    chunk_rows: int = 2048,
    extra: dict[str, np.ndarray] | None = None,
) -> Path:
    """Write `graph` with the official npz keys, atomically (temp file in the same dir + os.replace).

    Arrays keep their dtypes; a lazy ``node_config_feat`` is streamed in `chunk_rows` chunks.
    `extra`: further keys written after the official ones and not validated (e.g. the per-process
    runtimes of `graphcost collect`; the loaders ignore them). Returns the written path.
    """
    path = Path(path)
    arrays = graph_arrays(graph)
    if validate:
        validate_arrays(arrays, path=graph.path or path, kind=graph.kind)
    clash = sorted(set(arrays) & set(extra or {}))
    if clash:
        raise ValueError(f"{path}: extra keys {clash} would overwrite official TpuGraphs keys")
    with NpzWriter(path, compressed=compressed) as writer:
        for key, value in {**arrays, **(extra or {})}.items():
            if isinstance(value, LazyNpyArray):
                with writer.stream(key, value.shape, value.dtype) as stream:
                    for _, chunk in value.iter_chunks(chunk_rows):
                        stream.write(chunk)
            else:
                writer.write(key, np.asarray(value))
    return path
