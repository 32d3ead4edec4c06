"""`prepare_graph`: one TpuGraphs file -> `PreparedGraph` (TGraph §2.2), cached on disk.

Pipeline: load (-> validate) -> prune (§2.2.1, layout only) -> compress (§2.2.3) -> dedup
(§2.2.2) -> -1 pad node_feat[134:140] (§2.2.4). Scaling (§2.2.5) is NOT applied here: it is
fitted on training graphs only (`graphcost.data.transforms.scaler`) and applied when batching.

Memory. A layout:nlp file holds up to 100k configurations x ~100 configurable nodes x 18 float32
(720 MB). `node_config_feat` is therefore read and compressed `chunk_size` configurations at a
time; only the (K, C, 3) int32 codes (120 MB) and one chunk are ever resident. Row hashes for
de-duplication are computed per chunk from the codes.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import dataclasses
import tokenize
import zipfile
import zlib
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from graphcost.data.transforms.cache import cache_key, cache_path, load_cached, save_cached
from graphcost.data.transforms.compress import compress_layout_config
from graphcost.data.transforms.dedup import dedup_min_runtime, row_hashes
from graphcost.data.graph import LayoutGraph, TileGraph
from graphcost.data.transforms.padding import pad_minor_to_major
from graphcost.data.transforms.prepared import PreparedGraph
from graphcost.data.transforms.prune import identity_prune, prune_around_configurable

# What reading a damaged npz member can raise besides ValueError/OSError: a CRC mismatch, a bad
# deflate stream, an unknown compression method, an unparsable .npy header.
_DAMAGED_ARCHIVE = (zipfile.BadZipFile, zlib.error, NotImplementedError, tokenize.TokenError, SyntaxError, EOFError)

DEFAULT_CHUNK = 2048  # configurations per chunk: 2048 x 100 x 18 float32 = 15 MB (fastest measured)


class _ShapeOnly:
    """Stands in for a lazy node_config_feat during validation: shape/dtype, no value scan.

    The values of node_config_feat are checked in the single streaming compression pass
    (`compress_layout_config` enforces the same README rule: finite integers in -1..5 and raises
    a SchemaError naming file, key and index), so validation does not read 720 MB twice.
    """

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(dtype), len(shape)

    def iter_chunks(self, chunk_rows=None):
        return iter(())


def _load(path: Path, validate: bool, labelled: bool = True) -> LayoutGraph | TileGraph:
    """data-io's loader + validator; a layout file's node_config_feat stays on disk.

    Every key is validated (structure, shapes, dtypes, values, acyclicity) except the VALUES of
    node_config_feat, which the compressor checks while streaming (see `_ShapeOnly`).
    ``labelled=False``: no runtime checks, runtimes replaced by ones (`load_graph`).
    """
    from graphcost.data.io.tpugraphs_io import load_graph
    from graphcost.data.io.validate import graph_arrays, validate_arrays

    # Structure (keys present, shapes, dtypes) is checked before the record is built, so a file
    # missing a key is a SchemaError naming it, not a TypeError from the dataclass constructor.
    graph = load_graph(path, validate=validate, lazy_config_feat=True, check_values=False, labelled=labelled)
    if validate:
        arrays = graph_arrays(graph)
        if graph.kind == "layout" and not isinstance(graph.node_config_feat, np.ndarray):
            arrays["node_config_feat"] = _ShapeOnly(graph.node_config_feat.shape, graph.node_config_feat.dtype)
        validate_arrays(arrays, path=path, kind=graph.kind, check_values=True, labelled=labelled)
    return graph


def iter_config_chunks(graph: LayoutGraph, chunk_size: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (start, (k, C, 18) array) chunks of a layout graph's node_config_feat.

    In-memory arrays (and np.memmap) are sliced; data-io's lazy array (`load_graph(...,
    lazy_config_feat=True)`) is streamed from its npz member, never materialised whole.
    """
    feat = graph.node_config_feat
    if isinstance(feat, np.ndarray):
        for start in range(0, feat.shape[0], chunk_size):
            yield start, feat[start : start + chunk_size]
        return
    if hasattr(feat, "iter_chunks"):  # data-io's LazyNpyArray: streams its own npz member
        for start, chunk in feat.iter_chunks(chunk_size):
            yield start, np.asarray(chunk, dtype=np.float32)
        return
    if graph.path is not None:
        from graphcost.data.io.tpugraphs_io import iter_node_config_feat_chunks

        yield from iter_node_config_feat_chunks(graph.path, chunk_size)
        return
    for start in range(0, len(feat), chunk_size):  # generic sliceable stand-in
        yield start, np.asarray(feat[start : start + chunk_size])


def _num_configs(graph: LayoutGraph) -> int:
    shape = getattr(graph.node_config_feat, "shape", None)
    if shape is not None:
        return int(shape[0])
    return int(np.asarray(graph.config_runtime).shape[0])


def _prepare_layout(graph: LayoutGraph, prune: bool, dedup: bool, chunk_size: int, progress: bool) -> PreparedGraph:
    source = graph.path
    node_feat = np.asarray(graph.node_feat)
    n = node_feat.shape[0]
    c = int(np.asarray(graph.node_config_ids).shape[0])
    # With no configurable node, pruning would leave an empty graph: keep it whole instead.
    do_prune = prune and c > 0
    pr = (prune_around_configurable if do_prune else identity_prune)(n, graph.edge_index, graph.node_config_ids)
    runtime = np.asarray(graph.config_runtime, dtype=np.float64)  # (K,)
    k = _num_configs(graph)
    if runtime.shape != (k,):
        raise ValueError(f"{source}: config_runtime: expected shape ({k},), got {runtime.shape}")

    codes = np.empty((k, c, 3), dtype=np.int32)  # (K, C, 3) base-7 codes, TGraph §2.2.3
    hashes = np.empty(k if dedup else 0, dtype=np.uint64)  # (K,) row hashes for TGraph §2.2.2
    filled = 0
    chunks = iter_config_chunks(graph, chunk_size)
    if progress:
        from tqdm import tqdm

        chunks = tqdm(chunks, total=-(-k // chunk_size), desc=f"compress {graph.path or 'graph'}", unit="chunk")
    for start, chunk in chunks:
        if start != filled or start + chunk.shape[0] > k or chunk.shape[1:] != (c, 18):
            raise ValueError(
                f"{source}: node_config_feat: chunk at {start} of shape {chunk.shape} does not fit ({k}, {c}, 18)"
            )
        block = compress_layout_config(chunk, source=source, offset=start)  # (k_chunk, C, 3)
        codes[start : start + block.shape[0]] = block
        if dedup:
            hashes[start : start + block.shape[0]] = row_hashes(block)
        filled = start + block.shape[0]
    if filled != k:
        raise ValueError(f"{source}: node_config_feat: read {filled} configurations, expected {k}")

    if dedup:
        keep = dedup_min_runtime(hashes, runtime, codes)  # (K',) ascending
        if keep.size < k:
            codes = codes[keep]
    else:
        keep = np.arange(k, dtype=np.int64)
    return PreparedGraph(
        name=Path(source).stem if source is not None else "graph",
        kind="layout",
        node_feat=pad_minor_to_major(node_feat[pr.kept_nodes]),  # TGraph §2.2.4
        node_opcode=np.asarray(graph.node_opcode, dtype=np.int64)[pr.kept_nodes],
        edge_index=pr.edge_index,
        config_node_index=pr.node_config_ids,
        runtime=runtime[keep],
        config_codes=codes,
        source=Path(source) if source is not None else None,
        kept_nodes=pr.kept_nodes,
        config_source_index=keep,
        num_source_configs=k,
        compiled=_compiled_rows(graph, keep),
    )


def _prepare_tile(graph: TileGraph, dedup: bool) -> PreparedGraph:
    """Tile graphs: no pruning (the config applies to the whole kernel); runtime normalised."""
    source = graph.path
    node_feat = np.asarray(graph.node_feat)
    config_feat = np.asarray(graph.config_feat, dtype=np.float32)  # (K, 24)
    normalizers = np.asarray(graph.config_runtime_normalizers, dtype=np.float64)
    if np.any(normalizers <= 0):
        raise ValueError(f"{source}: config_runtime_normalizers: must be positive to normalise runtimes")
    runtime = np.asarray(graph.config_runtime, dtype=np.float64) / normalizers  # (K,) TpuGraphs README
    k = runtime.shape[0]
    keep = dedup_min_runtime(row_hashes(config_feat), runtime, config_feat) if dedup else np.arange(k)
    pr = identity_prune(node_feat.shape[0], graph.edge_index)
    return PreparedGraph(
        name=Path(source).stem if source is not None else "graph",
        kind="tile",
        node_feat=pad_minor_to_major(node_feat),
        node_opcode=np.asarray(graph.node_opcode, dtype=np.int64),
        edge_index=pr.edge_index,
        config_node_index=np.zeros(0, dtype=np.int64),
        runtime=runtime[keep],
        config_feat=config_feat[keep],
        source=Path(source) if source is not None else None,
        kept_nodes=pr.kept_nodes,
        config_source_index=np.asarray(keep, dtype=np.int64),
        num_source_configs=k,
        compiled=_compiled_rows(graph, keep),
    )


def _compiled_rows(graph: LayoutGraph | TileGraph, keep: np.ndarray) -> np.ndarray | None:
    """The kept configurations' rows of the graph's ``config_compiled_stats`` (None without it)."""
    stats = getattr(graph, "config_compiled_stats", None)
    return None if stats is None else np.asarray(stats, dtype=np.float64)[keep]


def prepare_in_memory(
    graph: LayoutGraph | TileGraph,
    prune: bool = True,
    dedup: bool = True,
    chunk_size: int = DEFAULT_CHUNK,
    progress: bool = False,
) -> PreparedGraph:
    """Preprocess an already loaded graph (no cache). See `prepare_graph`."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if getattr(graph, "kind", None) == "layout":
        return _prepare_layout(graph, prune, dedup, chunk_size, progress)
    if getattr(graph, "kind", None) == "tile":
        return _prepare_tile(graph, dedup)
    raise TypeError(f"expected a LayoutGraph or TileGraph, got {type(graph).__name__}")


def prepare_graph(
    path_or_graph: str | Path | LayoutGraph | TileGraph,
    prune: bool = True,
    dedup: bool = True,
    cache_dir: str | Path | None = None,
    *,
    validate: bool = True,
    chunk_size: int = DEFAULT_CHUNK,
    progress: bool = False,
    labelled: bool = True,
) -> PreparedGraph:
    """Load, prune, compress, de-duplicate and pad one graph (TGraph §2.2), with an optional cache.

    Args:
        path_or_graph: a TpuGraphs npz path, or a LayoutGraph / TileGraph already in memory
            (in-memory graphs are never cached).
        prune: keep only configurable nodes and their neighbours (layout; TGraph §2.2.1). Tile
            graphs, and layout graphs without configurable nodes, are never pruned.
        dedup: keep one (the fastest) copy of identical configurations (TGraph §2.2.2). Use
            dedup=False for evaluation on a file's full configuration list.
        cache_dir: if given, reuse / write `<cache_dir>/<stem>-...npz` keyed by the source's
            path, size, mtime, these options and `cache.FORMAT_VERSION`.
        validate: schema checks before any processing (`load_graph` / `validate_graph`).
        chunk_size: configurations compressed at a time (bounds memory; result is identical).
        labelled: False for graphs to rank whose runtimes are hidden (placeholders or absent):
            validated without the runtime checks; the prepared runtimes are all ones.
    Returns:
        PreparedGraph (node_feat unscaled).
    """
    if isinstance(path_or_graph, (LayoutGraph, TileGraph)):
        if validate:
            from graphcost.data.io.validate import validate_graph

            validate_graph(path_or_graph, labelled=labelled)  # SchemaError naming the key and problem
        if not labelled:
            from graphcost.data.io.tpugraphs_io import placeholder_runtimes

            kind = path_or_graph.kind
            configs = path_or_graph.config_feat if kind == "tile" else path_or_graph.node_config_feat
            path_or_graph = dataclasses.replace(path_or_graph, **placeholder_runtimes(kind, int(configs.shape[0])))
        return prepare_in_memory(path_or_graph, prune, dedup, chunk_size, progress)
    path = Path(path_or_graph).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such graph file")
    options = {"prune": bool(prune), "dedup": bool(dedup)}
    if not labelled:  # placeholder runtimes: never shared with a labelled entry (keys of labelled ones unchanged)
        options["labelled"] = False
    if cache_dir is not None:
        key = cache_key(path, options)
        entry = cache_path(cache_dir, path, options, key)
        cached = load_cached(entry, key)
        if cached is not None:
            return cached
    try:
        prepared = prepare_in_memory(_load(path, validate, labelled), prune, dedup, chunk_size, progress)
    except _DAMAGED_ARCHIVE as exc:  # raised by zipfile / zlib / numpy while reading members
        from graphcost.data.io.schema import SchemaError

        raise SchemaError(path, "*", f"damaged npz file ({type(exc).__name__}: {exc})") from None
    if prepared.source is None:
        prepared.source = path
    if cache_dir is not None:
        save_cached(prepared, entry, key)
    return prepared


def prepare_graphs(
    paths: Iterable[str | Path],
    prune: bool = True,
    dedup: bool = True,
    cache_dir: str | Path | None = None,
    *,
    validate: bool = True,
    chunk_size: int = DEFAULT_CHUNK,
    progress: bool = True,
) -> list[PreparedGraph]:
    """`prepare_graph` over many files with a progress bar. With a `cache_dir`, an interrupted
    run resumes where it stopped (finished graphs are cache hits)."""
    from tqdm import tqdm

    paths = list(paths)
    return [
        prepare_graph(p, prune, dedup, cache_dir, validate=validate, chunk_size=chunk_size)
        for p in tqdm(paths, desc="prepare graphs", unit="graph", disable=not progress)
    ]
