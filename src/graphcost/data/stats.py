"""Summary statistics of TpuGraphs files, collections and data roots (`graphcost data stats`).

Per group of files (a file, a split of a collection, or a directory): graphs, nodes, edges,
configurations, unique configurations (identical config rows counted once; TpuGraphs Table 1
notes repeats), runtime range and nodes after pruning (configurable nodes plus their direct
producers and consumers, TGraph §2.2.1). Layout files are read with a lazy
``node_config_feat`` so memory stays bounded on the NLP collections.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphcost.data.io.discover import SPLITS, DataNotFoundError, available_collections, collection_dir, find_npz_files
from graphcost.data.graph import LayoutGraph, TileGraph
from graphcost.data.io.tpugraphs_io import load_graph

__all__ = ["GraphStats", "pruned_node_count", "graph_stats", "stats_for_path", "check_stats_json", "summarize"]


def _pruned_node_count_local(num_nodes: int, edge_index: np.ndarray, node_config_ids: np.ndarray) -> int:
    """|configurable nodes ∪ their direct producers ∪ their direct consumers| (TGraph §2.2.1)."""
    keep = np.zeros(num_nodes, dtype=bool)
    ids = np.asarray(node_config_ids, dtype=np.int64).reshape(-1)
    keep[ids] = True
    e = np.asarray(edge_index, dtype=np.int64).reshape(-1, 2)
    is_conf = np.zeros(num_nodes, dtype=bool)
    is_conf[ids] = True
    keep[e[is_conf[e[:, 0]], 1]] = True  # producers of configurable consumers
    keep[e[is_conf[e[:, 1]], 0]] = True  # consumers of configurable producers
    return int(keep.sum())


def pruned_node_count(num_nodes: int, edge_index: np.ndarray, node_config_ids: np.ndarray | None) -> int:
    """Nodes left after pruning around configurable nodes; all nodes when there are none (tile).

    Uses the data-prep pruning transform (`graphcost.data.transforms.prune`) when available, else the
    same definition computed here.
    """
    if node_config_ids is None:
        return int(num_nodes)
    try:
        from graphcost.data.transforms.prune import prune_around_configurable
    except ImportError:  # pragma: no cover - data-prep module absent
        return _pruned_node_count_local(num_nodes, edge_index, node_config_ids)
    return prune_around_configurable(num_nodes, edge_index, node_config_ids).num_nodes


@dataclass
class GraphStats:
    """Statistics of one npz file."""

    path: str
    kind: str
    nodes: int
    edges: int
    configs: int
    unique_configs: int
    config_nodes: int  # layout: configurable nodes; tile: 0
    runtime_min: float
    runtime_max: float
    pruned_nodes: int


def _unique_layout_configs(graph: LayoutGraph, chunk_rows: int = 2048) -> int:
    feat = graph.node_config_feat
    chunks = feat.iter_chunks(chunk_rows) if hasattr(feat, "iter_chunks") else (
        (s, feat[s : s + chunk_rows]) for s in range(0, feat.shape[0], chunk_rows)
    )
    digests: set[bytes] = set()
    for _, chunk in chunks:
        rows = np.ascontiguousarray(np.asarray(chunk).reshape(len(chunk), -1).astype(np.int8))  # values in -1..5
        digests.update(hashlib.blake2b(r.tobytes(), digest_size=16).digest() for r in rows)
    return len(digests)


def graph_stats(path: str | Path, validate: bool = True) -> GraphStats:
    """Statistics of one TpuGraphs npz file (validated unless `validate` is False)."""
    graph = load_graph(path, validate=validate, lazy_config_feat=True)
    n = int(graph.node_feat.shape[0])
    runtime = np.asarray(graph.config_runtime, dtype=np.float64)
    if isinstance(graph, TileGraph):
        unique = int(np.unique(np.asarray(graph.config_feat), axis=0).shape[0])
        conf_ids = None
    else:
        unique = _unique_layout_configs(graph)
        conf_ids = graph.node_config_ids
    return GraphStats(
        path=str(path),
        kind=graph.kind,
        nodes=n,
        edges=int(graph.edge_index.shape[0]),
        configs=int(runtime.shape[0]),
        unique_configs=unique,
        config_nodes=0 if conf_ids is None else int(len(conf_ids)),
        runtime_min=float(runtime.min()),
        runtime_max=float(runtime.max()),
        pruned_nodes=pruned_node_count(n, graph.edge_index, conf_ids),
    )


def summarize(label: str, stats: list[GraphStats]) -> dict:
    """One table row for a group of files."""
    nodes = np.array([s.nodes for s in stats])
    return {
        "group": label,
        "graphs": len(stats),
        "nodes_mean": float(nodes.mean()),
        "nodes_min": int(nodes.min()),
        "nodes_max": int(nodes.max()),
        "edges_mean": float(np.mean([s.edges for s in stats])),
        "config_nodes_mean": float(np.mean([s.config_nodes for s in stats])),
        "configs": int(sum(s.configs for s in stats)),
        "configs_per_graph": float(np.mean([s.configs for s in stats])),
        "unique_configs": int(sum(s.unique_configs for s in stats)),
        "runtime_min": float(min(s.runtime_min for s in stats)),
        "runtime_max": float(max(s.runtime_max for s in stats)),
        "pruned_nodes_mean": float(np.mean([s.pruned_nodes for s in stats])),
    }


def _official_groups(path: Path) -> list[tuple[str, list[Path]]] | None:
    """Groups labelled ``collection/split`` when `path` lies in the official layout, else None.

    `path` may be the data root, ``<root>/npz`` or any directory below it: ``.../npz/layout``,
    a collection directory ``.../npz/layout/xla/random`` or a split ``.../npz/layout/xla/random/train``.
    """
    parts = path.resolve().parts
    if (path / "npz").is_dir():
        root = path
    elif "npz" in parts:
        k = len(parts) - 1 - parts[::-1].index("npz")  # the innermost "npz" component
        root = Path(*parts[:k]) if k else Path(parts[0])
    else:
        return None
    here = path.resolve()
    groups = []
    for collection, splits in available_collections(root).items():
        base = collection_dir(root, collection).resolve()
        for split, files in splits.items():
            split_dir = base / split
            if split_dir == here or here in split_dir.parents:  # path is the split, its collection, or above
                groups.append((f"{collection}/{split}", files))
    return groups or None


def _groups(path: Path) -> list[tuple[str, list[Path]]]:
    """(label, files) groups for a file, a data root, a collection / split dir or any npz directory."""
    if path.is_file():
        return [(path.name, [path])]
    if not path.is_dir():
        raise DataNotFoundError(f"{path}: no such file or directory (expected an .npz file or a directory of them)")
    official = _official_groups(path)
    if official:
        return official
    name = path.resolve().name or str(path)  # `graphcost data stats .` is labelled by the directory's name
    split_dirs = [s for s in SPLITS if (path / s).is_dir() and any((path / s).glob("*.npz"))]
    groups = [(f"{name}/{s}", sorted((path / s).glob("*.npz"))) for s in split_dirs]
    direct = sorted(path.glob("*.npz"))
    if direct or not groups:
        groups.insert(0, (name, direct or find_npz_files(path)))
    return groups


def _by_kind(label: str, stats: list[GraphStats]) -> list[tuple[str, list[GraphStats]]]:
    """Split a group mixing tile and layout files into ``label [tile]`` / ``label [layout]``."""
    kinds = sorted({s.kind for s in stats})
    if len(kinds) <= 1:
        return [(label, stats)]
    return [(f"{label} [{k}]", [s for s in stats if s.kind == k]) for k in kinds]


def stats_for_path(path: str | Path, per_file: bool = False, validate: bool = True, progress: bool = False,
                   json_out: str | Path | None = None, overwrite: bool = False, *, option: str = "json_out",
                   input_name: str = "path") -> list[dict]:
    """Table rows for `path` (file, collection dir, data root or npz directory).

    Tile and layout files are never summarised together: a directory holding both gives one
    row per kind.

    `json_out`: also write the rows there as JSON. It is checked before any file is read (`check_stats_json`):
    an existing file without `overwrite` is an OutputExistsError, a directory, a device, a virtual or read-only
    file system or a file of the input `path` an OutputPathError, each naming `option` (the CLI passes
    ``--json``; `input_name` names `path`, ``PATH`` for the CLI). A failed write is a `graphcost.guards.atomic.WriteError`
    naming the file; nothing half-written is left.
    """
    from tqdm import tqdm

    if json_out is not None:
        json_out = check_stats_json(json_out, path, overwrite, option=option, input_name=input_name)
    rows = []
    for label, files in _groups(Path(path).expanduser()):
        # `with` closes the bar even on error, so an error message gets its own line
        with tqdm(files, desc=label, disable=not progress) as bar:
            stats = [graph_stats(f, validate=validate) for f in bar]
        for sub_label, sub in _by_kind(label, stats):
            if per_file and len(files) > 1:
                rows += [summarize(f"{sub_label}/{Path(s.path).name}", [s]) for s in sub]
            rows.append(summarize(sub_label, sub))
    if json_out is not None:
        _write_rows(rows, json_out)
    return rows


def check_stats_json(json_out: str | Path, path: str | Path, overwrite: bool = False, *, option: str = "json_out",
                     input_name: str = "path") -> Path:
    """The JSON output of `stats_for_path`, checked before any work (`graphcost.guards.atomic.check_output_path`, then
    `graphcost.guards.outputs.check_outside_inputs` against the input `path`: nothing inside a data directory,
    not the input file itself); returns it as a Path. A directory is refused with the file name to give instead."""
    from graphcost.guards.atomic import OutputPathError, check_output_path
    from graphcost.guards.outputs import check_outside_inputs

    json_out = Path(json_out)
    try:
        check_output_path(json_out, option, overwrite, blocked=None)
    except OutputPathError as exc:  # a directory, a device, /proc
        if json_out.is_dir():
            raise OutputPathError(f"{option} {json_out}: is a directory; give a file path such as "
                                  f"{json_out / 'stats.json'}", json_out) from None
        raise
    source = Path(path).expanduser()
    inside = [(input_name, source)] if source.is_dir() else []  # nothing written into a data directory
    return check_outside_inputs(json_out, option, data=inside, files=[(input_name, source)])


def _write_rows(rows: list[dict], json_out: Path) -> None:
    """`rows` as JSON at `json_out` (parents created), atomically; any OSError as a WriteError naming the file."""
    from graphcost.guards.atomic import WriteError, atomic_write_json

    try:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(rows, json_out)  # temp file removed on failure
    except WriteError:
        raise
    except OSError as exc:
        raise WriteError(json_out, exc) from exc
