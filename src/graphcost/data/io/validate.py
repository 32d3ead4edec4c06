"""Validate a TpuGraphs graph (npz arrays, `LayoutGraph` or `TileGraph`) before anything uses it.

Checks, in order (the first failure raises `SchemaError(path, key, problem)`):

1. every required key is present (tile: node_feat, node_opcode, edge_index, config_feat,
   config_runtime, config_runtime_normalizers; layout: node_feat, node_opcode, edge_index,
   node_config_ids, node_config_feat, config_runtime; optional node_splits);
2. dtype kind (see `schema.KeySpec.kinds`), rank, fixed widths (node_feat 140, tile config 24,
   layout config 18, edge_index 2);
3. shapes agree: n = len(node_feat) = len(node_opcode); layout: node_config_feat is
   (c, nc, 18) with nc = len(node_config_ids) and c = len(config_runtime); tile: config_feat,
   config_runtime and config_runtime_normalizers all have c rows; c >= 1 and n >= 1;
4. values (``check_values=True``): node/edge indices within [0, n), configurable node ids
   unique, node_splits within [0, n] and non-decreasing, opcodes within the hlo_opcode.h table,
   features finite, layout config values integers in {-1, ..., 5} (read in chunks when
   node_config_feat is lazy), tile config values >= 0, runtimes and normalizers finite and > 0,
   and the graph is acyclic (iterative topological sort, O(n + m)).

graphcost's own optional key ``config_compiled_stats`` (what the compiler did to each
configuration, `graphcost.frontend.hlo.compiled_stats`) is checked when present: (c, 7), float,
finite and >= 0.

Unlabelled files (``labelled=False``: test-split files to rank, whose runtimes are hidden,
placeholders or absent) get every check above except the runtime ones: ``config_runtime`` and
``config_runtime_normalizers`` may be absent; when present their dtype, rank and length are
checked but not their values. The number of configurations then comes from ``config_feat`` /
``node_config_feat`` if ``config_runtime`` is absent.

Unknown extra keys are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from graphcost.data.graph import LayoutGraph, TileGraph
from graphcost.data.io.schema import OPCODES, SchemaError, detect_kind, dtype_ok, keys_for_kind

__all__ = ["validate_arrays", "validate_graph", "find_cycle", "graph_arrays"]

MAX_OPCODE = max(OPCODES.values())
RUNTIME_KEYS = ("config_runtime", "config_runtime_normalizers")  # labels: optional when unlabelled
_WIDTH_WHY = {
    "node_feat": "the README node feature table has 140 columns",
    "config_feat": "the README tile config table has 24 columns",
    "node_config_feat": "the README layout config table has 18 columns",
    "edge_index": "each edge is a row [u, v]",
    "config_compiled_stats": "graphcost.frontend.hlo.compiled_stats has 7 statistics",
}


def graph_arrays(graph: LayoutGraph | TileGraph) -> dict[str, Any]:
    """The npz-keyed arrays of an in-memory graph record (None fields left out)."""
    names = ["node_feat", "node_opcode", "edge_index", "config_runtime", "config_compiled_stats"]
    if graph.kind == "layout":
        names += ["node_config_ids", "node_config_feat", "node_splits"]
    else:
        names += ["config_feat", "config_runtime_normalizers"]
    return {k: getattr(graph, k) for k in names if getattr(graph, k, None) is not None}


def validate_graph(graph: LayoutGraph | TileGraph, check_values: bool = True, labelled: bool = True) -> None:
    """Validate an in-memory `LayoutGraph` / `TileGraph`; errors name ``graph.path``."""
    validate_arrays(graph_arrays(graph), path=graph.path, kind=graph.kind, check_values=check_values, labelled=labelled)


def _fmt_shape(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _dtype_shape(arr) -> tuple[np.dtype, tuple[int, ...]]:
    """dtype and shape without materialising lazy arrays (getattr defaults are eager)."""
    if hasattr(arr, "dtype") and hasattr(arr, "shape"):
        return np.dtype(arr.dtype), tuple(arr.shape)
    arr = np.asarray(arr)
    return arr.dtype, arr.shape


def _check_structure(arrays: Mapping[str, Any], path, kind: str, labelled: bool = True) -> None:
    for spec in keys_for_kind(kind):
        if spec.name not in arrays or arrays[spec.name] is None:
            if spec.required and (labelled or spec.name not in RUNTIME_KEYS):
                raise SchemaError(path, spec.name, f"missing (required in a {kind} file: {spec.doc})")
            continue
        arr = arrays[spec.name]
        dtype, shape = _dtype_shape(arr)
        if not dtype_ok(spec, dtype):
            kinds = {"f": "float", "i": "signed int", "u": "unsigned int"}
            accepted = " / ".join(kinds[k] for k in spec.kinds)
            raise SchemaError(
                path, spec.name, f"dtype {dtype} not allowed (README: {spec.readme_dtype}; accepted: {accepted})"
            )
        if len(shape) not in spec.ndim:
            want = " or ".join(str(r) for r in spec.ndim)
            raise SchemaError(path, spec.name, f"rank {len(shape)} (shape {_fmt_shape(shape)}), expected rank {want}: {spec.doc}")
        if spec.width is not None and shape[-1] != spec.width:
            raise SchemaError(
                path, spec.name, f"has {shape[-1]} columns (shape {_fmt_shape(shape)}), expected {spec.width}: "
                f"{_WIDTH_WHY[spec.name]}"
            )


def _check_shapes(arrays: Mapping[str, Any], path, kind: str) -> tuple[int, int]:
    shape = {k: _dtype_shape(v)[1] for k, v in arrays.items() if v is not None}
    n = shape["node_feat"][0]
    if n < 1:
        raise SchemaError(path, "node_feat", "graph has no nodes")
    if shape["node_opcode"][0] != n:
        raise SchemaError(path, "node_opcode", f"length {shape['node_opcode'][0]} != number of nodes {n} (node_feat rows)")
    config_key = "config_feat" if kind == "tile" else "node_config_feat"
    count_key = "config_runtime" if "config_runtime" in shape else config_key  # unlabelled: no config_runtime
    c = shape[count_key][0]
    if c < 1:
        raise SchemaError(path, count_key, "no configurations (length 0)")
    if "config_compiled_stats" in shape and shape["config_compiled_stats"][0] != c:
        raise SchemaError(path, "config_compiled_stats",
                          f"has {shape['config_compiled_stats'][0]} rows but {count_key} has {c} configurations")
    if kind == "tile":
        for key in ("config_feat", "config_runtime_normalizers"):
            if key in shape and shape[key][0] != c:
                raise SchemaError(path, key, f"has {shape[key][0]} rows but {count_key} has {c} configurations")
    else:
        nc = shape["node_config_ids"][0]
        k, nc2, _ = shape["node_config_feat"]
        if k != c:
            raise SchemaError(
                path, "node_config_feat", f"shape {_fmt_shape(shape['node_config_feat'])}: {k} configurations but "
                f"config_runtime has {c}"
            )
        if nc2 != nc:
            raise SchemaError(
                path, "node_config_feat", f"shape {_fmt_shape(shape['node_config_feat'])}: {nc2} configurable nodes but "
                f"node_config_ids has {nc}"
            )
    return n, c


def find_cycle(num_nodes: int, edge_index: np.ndarray) -> list[int] | None:
    """Return the nodes of one directed cycle (first node repeated at the end), or None if acyclic.

    Edges are rows ``[u, v]`` (u consumes v); a cycle is a cycle in either orientation. Fast path:
    TpuGraphs numbers nodes topologically, so ``v < u`` on every edge proves acyclicity. Otherwise
    Kahn's algorithm (iterative, O(n + m)); leftover nodes all lie on or downstream of a cycle,
    and walking producers among them must revisit a node.
    """
    e = np.asarray(edge_index, dtype=np.int64).reshape(-1, 2)
    if e.shape[0] == 0 or bool(np.all(e[:, 1] < e[:, 0])):
        return None
    consumer, producer = e[:, 0], e[:, 1]
    order = np.argsort(producer, kind="stable")
    succ = consumer[order].tolist()  # successors (consumers) of each producer, CSR layout
    start = np.searchsorted(producer[order], np.arange(num_nodes + 1)).tolist()
    indeg = np.bincount(consumer, minlength=num_nodes).tolist()
    stack = [i for i in range(num_nodes) if indeg[i] == 0]
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        for u in succ[start[v] : start[v + 1]]:
            indeg[u] -= 1
            if indeg[u] == 0:
                stack.append(u)
    if seen == num_nodes:
        return None
    # Every leftover node has a leftover producer; walk producers until a node repeats.
    left = np.array(indeg) > 0
    mask = left[consumer] & left[producer]
    pred = dict(zip(consumer[mask].tolist(), producer[mask].tolist()))
    node = int(np.flatnonzero(left)[0])
    pos: dict[int, int] = {}
    path: list[int] = []
    while node not in pos:
        pos[node] = len(path)
        path.append(node)
        node = pred[node]
    cycle = path[pos[node] :][::-1]  # reverse: follow data flow producer -> consumer
    return cycle + [cycle[0]]


def _check_range(path, key: str, values: np.ndarray, lo: int, hi: int, what: str) -> None:
    if values.size == 0:
        return
    bad = (values < lo) | (values >= hi)
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), values.shape)
        raise SchemaError(path, key, f"{what} out of range [{lo}, {hi}): value {values[i]} at index {tuple(int(x) for x in i)}")


def _check_finite(path, key: str, values: np.ndarray, offset: int = 0) -> None:
    if values.dtype.kind != "f":
        return
    bad = ~np.isfinite(values)
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), values.shape)
        where = tuple(int(x) for x in i)
        where = (where[0] + offset,) + where[1:] if where else where
        raise SchemaError(path, key, f"non-finite value {values[i]} at index {where}")


def _check_runtime(path, key: str, values: np.ndarray) -> None:
    _check_finite(path, key, values)
    bad = values <= 0
    if bad.any():
        i = int(np.argmax(bad))
        raise SchemaError(path, key, f"non-positive runtime {values[i]} at configuration {i} (runtimes must be > 0)")


def _check_layout_config_values(path, arr, chunk_rows: int) -> None:
    """Layout config entries are minor-to-major dimension indices in {0..5}, -1 = unset (README)."""
    chunks = arr.iter_chunks(chunk_rows) if hasattr(arr, "iter_chunks") else (
        (s, arr[s : s + chunk_rows]) for s in range(0, arr.shape[0], chunk_rows)
    )
    for start, chunk in chunks:
        chunk = np.asarray(chunk)
        _check_finite(path, "node_config_feat", chunk, offset=start)
        bad = (chunk < -1) | (chunk > 5) | (chunk != np.round(chunk))
        if bad.any():
            i = np.unravel_index(int(np.argmax(bad)), chunk.shape)
            where = (int(i[0]) + start, int(i[1]), int(i[2]))
            raise SchemaError(
                path, "node_config_feat", f"value {chunk[i]} at index {where} is not a layout dimension index in {{-1, ..., 5}}"
            )


def validate_arrays(
    arrays: Mapping[str, Any],
    path: str | Path | None = None,
    kind: str | None = None,
    check_values: bool = True,
    chunk_rows: int = 2048,
    labelled: bool = True,
) -> str:
    """Validate npz-keyed arrays (ndarrays or lazy arrays with shape/dtype/iter_chunks); return the kind.

    ``labelled=False``: every check but the runtime ones (see the module docstring).
    Raises `SchemaError(path, key, problem)` on the first problem found.
    """
    kind = kind or detect_kind([k for k, v in arrays.items() if v is not None], path)
    _check_structure(arrays, path, kind, labelled)
    n, _ = _check_shapes(arrays, path, kind)
    if not check_values:
        return kind
    node_feat = np.asarray(arrays["node_feat"])
    _check_finite(path, "node_feat", node_feat)
    _check_range(path, "node_opcode", np.asarray(arrays["node_opcode"]), 0, MAX_OPCODE + 1, "opcode id (hlo_opcode.h)")
    edges = np.asarray(arrays["edge_index"])
    _check_range(path, "edge_index", edges, 0, n, "node index")
    if arrays.get("config_compiled_stats") is not None:
        stats = np.asarray(arrays["config_compiled_stats"])
        _check_finite(path, "config_compiled_stats", stats)
        if (stats < 0).any():
            i = np.unravel_index(int(np.argmax(stats < 0)), stats.shape)
            raise SchemaError(path, "config_compiled_stats", f"negative value {stats[i]} at index "
                                                             f"{tuple(int(x) for x in i)} (bytes and counts)")
    if kind == "tile":
        cfg = np.asarray(arrays["config_feat"])
        _check_finite(path, "config_feat", cfg)
        if (cfg < 0).any():
            i = np.unravel_index(int(np.argmax(cfg < 0)), cfg.shape)
            raise SchemaError(path, "config_feat", f"negative tile size {cfg[i]} at index {tuple(int(x) for x in i)}")
        if labelled:
            _check_runtime(path, "config_runtime", np.asarray(arrays["config_runtime"]))
            _check_runtime(path, "config_runtime_normalizers", np.asarray(arrays["config_runtime_normalizers"]))
    else:
        ids = np.asarray(arrays["node_config_ids"])
        _check_range(path, "node_config_ids", ids, 0, n, "node index")
        uniq, counts = np.unique(ids, return_counts=True)
        if (counts > 1).any():
            raise SchemaError(path, "node_config_ids", f"node {uniq[np.argmax(counts > 1)]} listed more than once")
        splits = arrays.get("node_splits")
        if splits is not None:
            splits = np.asarray(splits).reshape(-1)
            _check_range(path, "node_splits", splits, 0, n + 1, "node index")
            if (np.diff(splits) < 0).any():
                raise SchemaError(path, "node_splits", "split points are not non-decreasing")
        if labelled:
            _check_runtime(path, "config_runtime", np.asarray(arrays["config_runtime"]))
        _check_layout_config_values(path, arrays["node_config_feat"], chunk_rows)
    cycle = find_cycle(n, edges)
    if cycle is not None:
        shown = cycle if len(cycle) <= 12 else cycle[:6] + ["..."] + cycle[-6:]
        raise SchemaError(path, "edge_index", f"graph has a cycle (data flow through nodes {shown}); it must be a DAG")
    return kind
