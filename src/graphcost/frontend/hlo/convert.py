"""TpuGraphs autotuner protobufs -> TpuGraphs npz graphs (`LayoutGraph` / `TileGraph`).

Layout (`ModuleTuningData`, one HLO program, node-level configs), following tpu_graphs
`ModuleTuningDataIterator`:
  * a run is kept when it has a module (layout) config, no error, a profile and a positive
    ``compute_time_ns``; the others are skipped and counted;
  * a default run must be among the kept ones (the official pipeline drops the graph otherwise);
  * ``node_config_ids`` = ``config_index_to_node`` (positions in the flattened node order);
  * ``node_config_feat[k, i]`` = 18 values: output / input0 / input1(kernel) layouts of node i in
    run k, 6 minor-to-major dims each, -1 where a tensor or dimension is absent
    (README "Layout Config Features");
  * ``config_runtime[k]`` = ``profile.compute_time_ns`` (int64 nanoseconds).

Tile (`TuningData`, one record per fused kernel, graph-level configs), following
`OpTuningDataIterator`:
  * kernels with <= 1 run, without a module, or with a run lacking a tile-size config are skipped;
  * a run is kept when it has no error and ``compute_time_ns > 1``;
  * ``config_feat[k]`` = kernel/output/input bounds, each as 6 values + sum + product, the product
    of an empty list being 0 here (README "Tile Config Features");
  * ``config_runtime_normalizers[k]`` = runtime of the kernel's default run (same for all k).

Opcode names TpuGraphs does not know (e.g. a flipped byte) become opcode 0 and are counted per
module in `ConversionStats.unknown_opcodes`; ``strict=True`` refuses such a module instead.
Tile bounds whose product overflows int64 are a `ConversionError` naming the run and the field.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from graphcost.data.graph import LayoutGraph, TileGraph
from graphcost.data.io.tpugraphs_io import save_graph
from graphcost.errors import GraphcostError
from graphcost.frontend.hlo.featurizer import (
    FeatureOverflow, FeaturizedModule, HloGraphError, featurize_module, int64_product,
)  # fmt: skip
from graphcost.frontend.hlo.opcodes import CONFIGURABLE_LAYOUT_OPCODES
from graphcost.frontend.hlo.protowire import ProtoDecodeError
from graphcost.frontend.hlo.tuning_proto import (
    ConfigProfile,
    ModuleTuningData,
    TileSizeConfig,
    detect_kind,
    parse_module_tuning_data,
    parse_tuning_data,
)

LAYOUT_MAX_DIMS = 6
LAYOUT_MAX_TENSORS = 3


class ConversionError(GraphcostError, ValueError):
    """The tuning record cannot be converted; the message names the file/record and the problem."""


@dataclass
class ConversionStats:
    """What a conversion kept and skipped (the numbers the CLI prints)."""

    runs_total: int = 0
    runs_kept: int = 0
    runs_skipped: dict[str, int] = field(default_factory=dict)
    modules_skipped: dict[str, str] = field(default_factory=dict)  # module name -> reason
    unknown_opcodes: list[tuple[str, dict[str, int]]] = field(default_factory=list)  # (module, {name: nodes})

    def skip_run(self, reason: str) -> None:
        self.runs_skipped[reason] = self.runs_skipped.get(reason, 0) + 1


def describe_unknown_opcodes(counts: dict[str, int], limit: int = 3) -> str:
    """'2 node(s) with unknown opcode names ('dou' x1, 'ad' x1)', the first `limit` names shown."""
    names = sorted(counts, key=lambda name: (-counts[name], name))
    shown = ", ".join(f"{name[:40]!r} x{counts[name]}" for name in names[:limit])
    shown += ", ..." if len(names) > limit else ""
    return f"{sum(counts.values())} node(s) with unknown opcode names ({shown})"


def _check_opcodes(feat: FeaturizedModule, where: str, stats: ConversionStats, strict: bool) -> None:
    """Record a module's unknown opcode names; with `strict`, refuse the module."""
    if not feat.unknown_opcodes:
        return
    if strict:
        raise ConversionError(
            f"{where}: module {feat.name[:80]!r}: {describe_unknown_opcodes(feat.unknown_opcodes)}; "
            "--strict refuses them (they would become opcode 0)")
    stats.unknown_opcodes.append((feat.name, feat.unknown_opcodes))


# --- layout ---------------------------------------------------------------------------------

def layout_config_features(nodes: list[list[list[int]]], where: str) -> np.ndarray:
    """(C, 18) float32 layout features of one run (FeaturizeLayoutConfig semantics)."""
    out = np.full((len(nodes), LAYOUT_MAX_DIMS * LAYOUT_MAX_TENSORS), -1.0, dtype=np.float32)
    for i, tensors in enumerate(nodes):
        if len(tensors) > LAYOUT_MAX_TENSORS:
            raise ConversionError(f"{where}: node {i} has {len(tensors)} tensor layouts, at most 3 expected")
        for t, dims in enumerate(tensors):
            head = dims[:LAYOUT_MAX_DIMS]
            bad = [d for d in head if not 0 <= d < LAYOUT_MAX_DIMS]
            if bad:  # the npz schema allows minor_to_major entries 0..5 (-1 = padding) only
                raise ConversionError(
                    f"{where}: node {i} tensor {t}: layout dimension {bad[0]} outside 0..{LAYOUT_MAX_DIMS - 1}")
            out[i, t * LAYOUT_MAX_DIMS:t * LAYOUT_MAX_DIMS + len(head)] = head
    return out


def _layout_run_ok(run: ConfigProfile, stats: ConversionStats) -> bool:
    if run.module_config is None or run.module_config.layout_config is None:
        stats.skip_run("no layout config")
    elif run.error:
        stats.skip_run("error")
    elif run.profile is None:
        stats.skip_run("no profile")
    elif run.profile.compute_time_ns <= 0:
        stats.skip_run("non-positive runtime")
    else:
        return True
    return False


def convert_layout(record: ModuleTuningData, source: str = "<bytes>", layout_pad: float = 0.0, strict: bool = False
                   ) -> tuple[LayoutGraph, ConversionStats]:
    """One `ModuleTuningData` -> a `LayoutGraph` (arrays in the official npz schema)."""
    stats = ConversionStats(runs_total=len(record.runs))
    module = record.module
    if module is None:
        raise ConversionError(f"{source}: ModuleTuningData has no HLO module (field 1)")
    feat = featurize_module(module, layout_pad=layout_pad)
    _check_opcodes(feat, source, stats, strict)
    node_ids = record.config_index_to_node  # (C,) uint64
    if node_ids.size == 0:
        raise ConversionError(f"{source}: config_index_to_node (field 4) is empty: no configurable nodes")
    if int(node_ids.max()) >= feat.num_nodes:  # checked before int64 (uint64 values may not fit)
        raise ConversionError(
            f"{source}: config_index_to_node holds node {int(node_ids.max())} but the module has "
            f"{feat.num_nodes} nodes")
    config_ids = node_ids.astype(np.int64)
    if len(np.unique(config_ids)) != len(config_ids):
        raise ConversionError(f"{source}: config_index_to_node repeats a node id")
    kept_at = [i for i, run in enumerate(record.runs) if _layout_run_ok(run, stats)]  # run indices, for messages
    kept = [record.runs[i] for i in kept_at]
    if not any(run.is_default for run in kept):
        raise ConversionError(
            f"{source}: no default run among the {len(kept)} valid runs; the official pipeline drops such graphs")
    for k, run in enumerate(kept):  # before allocating (K, C, 18): the file must hold every run's C nodes
        nodes = run.module_config.layout_config.nodes  # type: ignore[union-attr]
        if len(nodes) != len(config_ids):
            raise ConversionError(f"{source}: run {kept_at[k]}: layout config has {len(nodes)} nodes but "
                                  f"config_index_to_node has {len(config_ids)}")
    config_feat = np.empty((len(kept), len(config_ids), 18), dtype=np.float32)
    runtime = np.empty(len(kept), dtype=np.int64)
    for k, run in enumerate(kept):
        nodes = run.module_config.layout_config.nodes  # type: ignore[union-attr]
        config_feat[k] = layout_config_features(nodes, f"{source}: run {kept_at[k]}")
        runtime[k] = run.profile.compute_time_ns  # type: ignore[union-attr]
    stats.runs_kept = len(kept)
    graph = LayoutGraph(
        path=None, node_feat=feat.node_feat, node_opcode=feat.node_opcode, edge_index=feat.edge_index,
        node_config_ids=config_ids, node_config_feat=config_feat, config_runtime=runtime,
        node_splits=feat.node_splits,
    )
    return graph, stats


# --- tile -----------------------------------------------------------------------------------

def _bounds(out: list[float], values: list[int], what: str) -> None:
    """6 values (zero-padded) + sum + product; product 0 for an empty list (zero_product_on_empty_source)."""
    values = [int(v) for v in values]
    head = [float(v) for v in values[:LAYOUT_MAX_DIMS]]
    out.extend(head + [0.0] * (LAYOUT_MAX_DIMS - len(head)))
    out.append(float(sum(values)))
    out.append(float(int64_product(values, what)) if values else 0.0)  # FeatureOverflow past int64


def tile_config_features(cfg: TileSizeConfig, where: str = "tile_size_config") -> np.ndarray:
    """(24,) float32 tile config features (README "Tile Config Features"); FeatureOverflow names `where`."""
    out: list[float] = []
    _bounds(out, cfg.kernel_bounds, f"{where}.kernel_bounds")  # 0-7
    _bounds(out, cfg.output_bounds, f"{where}.output_bounds")  # 8-15
    _bounds(out, cfg.input_bounds, f"{where}.input_bounds")  # 16-23
    return np.asarray(out, dtype=np.float32)


def _tile_skip_reason(record: ModuleTuningData) -> str | None:
    if len(record.runs) <= 1:
        return f"only {len(record.runs)} run(s)"
    if not record.has_module:
        return "no HLO module"
    if any(r.op_config is None or r.op_config.tile_size_config is None for r in record.runs):
        return "a run has no tile-size config"
    return None


def convert_tile(record: ModuleTuningData, source: str = "<bytes>", layout_pad: float = 0.0,
                 stats: ConversionStats | None = None, strict: bool = False) -> TileGraph | None:
    """One kernel's `ModuleTuningData` -> a `TileGraph`, or None when the kernel is skipped (reason in `stats`)."""
    stats = stats if stats is not None else ConversionStats()
    stats.runs_total += len(record.runs)
    reason = _tile_skip_reason(record)
    module = record.module if reason is None else None
    name = module.name if module is not None else source
    if reason is None:
        kept, kept_at = [], []  # kept runs and their indices in record.runs
        for i, run in enumerate(record.runs):
            if run.error:
                stats.skip_run("error")
            elif run.profile is None or run.profile.compute_time_ns <= 1:
                stats.skip_run("runtime <= 1 ns or no profile")
            else:
                kept.append(run)
                kept_at.append(i)
        default = next((r for r in kept if r.is_default), None)
        if default is None:
            reason = "no default run among the valid runs"
    if reason is not None:
        stats.modules_skipped[name] = reason
        return None
    feat = featurize_module(module, layout_pad=layout_pad)  # type: ignore[arg-type]
    _check_opcodes(feat, source, stats, strict)
    try:
        config_feat = np.stack([
            tile_config_features(r.op_config.tile_size_config,  # type: ignore[union-attr]
                                 f"runs[{i}].op_config.tile_size_config")
            for i, r in zip(kept_at, kept)
        ])
    except FeatureOverflow as exc:
        raise ConversionError(f"{source}: {exc}") from None
    runtime = np.asarray([r.profile.compute_time_ns for r in kept], dtype=np.int64)  # type: ignore[union-attr]
    normalizers = np.full(len(kept), default.profile.compute_time_ns, dtype=np.int64)  # type: ignore[union-attr]
    stats.runs_kept += len(kept)
    return TileGraph(
        path=None, node_feat=feat.node_feat, node_opcode=feat.node_opcode, edge_index=feat.edge_index,
        config_feat=config_feat, config_runtime=runtime, config_runtime_normalizers=normalizers,
    )


# --- files ----------------------------------------------------------------------------------

def graph_arrays(graph: LayoutGraph | TileGraph) -> dict[str, np.ndarray]:
    """The official npz keys of a graph."""
    common = {"node_feat": graph.node_feat, "node_opcode": graph.node_opcode, "edge_index": graph.edge_index}
    if isinstance(graph, LayoutGraph):
        out = dict(common, node_config_ids=graph.node_config_ids, node_config_feat=graph.node_config_feat,
                   config_runtime=graph.config_runtime)
        if graph.node_splits is not None:
            out["node_splits"] = graph.node_splits
        return out
    return dict(common, config_feat=graph.config_feat, config_runtime=graph.config_runtime,
                config_runtime_normalizers=graph.config_runtime_normalizers)


def safe_name(name: str) -> str:
    """A file-name-safe version of an HLO module name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "module"


@dataclass
class ProtoConversion:
    """Result of `convert_file`: written paths and statistics."""

    kind: str
    written: list[Path] = field(default_factory=list)
    existing: list[Path] = field(default_factory=list)
    stats: ConversionStats = field(default_factory=ConversionStats)
    configurable_opcodes_ok: bool = True


def read_proto(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConversionError(f"{path}: cannot read file ({exc.strerror})") from None


def convert_file(path: Path, out_dir: Path, kind: str = "auto", layout_pad: float = 0.0, overwrite: bool = False,
                 progress: Callable[[Iterator], Iterator] | None = None, strict: bool = False, *,
                 option: str = "out_dir", input_name: str = "path", inputs: Iterable[Path] = ()) -> ProtoConversion:
    """Convert one tuning protobuf file into npz files under `out_dir`.

    kind: "layout" (ModuleTuningData -> `<stem>.npz`), "tile" (TuningData -> one
    `<kernel>_<fingerprint>.npz` per kernel) or "auto" (decided from the top-level fields).
    Existing outputs are kept unless `overwrite` (so an interrupted run resumes).
    strict: a module with an opcode name TpuGraphs does not know is a ConversionError (default:
    counted in ``result.stats.unknown_opcodes`` and converted with opcode 0).
    `out_dir` is checked before the file is read: a file, a device, a virtual or read-only file system is an
    OutputPathError (a ValueError) naming `option` (the CLI passes ``--out``). An output file that would be
    `path` itself or one of `inputs` (the other files of the same command) is an OutputPathError naming it
    (`graphcost.guards.outputs.check_outside_inputs`; `input_name` names them, ``INPUTS`` for the CLI): an
    input is never replaced.
    """
    from graphcost.guards.atomic import check_dir_option
    from graphcost.guards.outputs import check_outside_inputs

    path, out_dir = Path(path), Path(out_dir)
    check_dir_option(out_dir, option, is_file="{path}: {option} exists and is not a directory", blocked=None)
    sources = [(input_name, p) for p in dict.fromkeys([path, *map(Path, inputs)])]

    def guarded(target: Path) -> Path:
        return check_outside_inputs(target, option, data=sources)
    data = read_proto(path)
    progress = progress or (lambda it: it)
    try:
        if kind not in ("auto", "layout", "tile"):
            raise ConversionError(f"unknown kind {kind!r}; expected auto, layout or tile")
        detected = detect_kind(data)
        if kind == "auto":
            kind = detected
        elif kind != detected:
            record_type = {"layout": "ModuleTuningData (layout)", "tile": "TuningData (tile)"}[detected]
            raise ConversionError(
                f"{path}: --kind {kind} was given but the file looks like a {record_type} record; "
                f"use --kind {detected} or --kind auto")
        result = ProtoConversion(kind=kind)
        if kind == "layout":
            target = guarded(out_dir / f"{safe_name(path.stem)}.npz")
            if target.exists() and not overwrite:
                result.existing.append(target)
                return result
            record = parse_module_tuning_data(data, f"{path.name}: ModuleTuningData")
            graph, result.stats = convert_layout(record, source=str(path), layout_pad=layout_pad, strict=strict)
            result.configurable_opcodes_ok = _configurable_ok(record, graph)
            save_graph(graph, target)
            result.written.append(target)
            return result
        tuning = parse_tuning_data(data, f"{path.name}: TuningData")
        used: set[str] = set()
        for record in progress(iter(tuning.modules)):
            stem = safe_name(f"{_module_name(record)}_{record.fingerprint:016x}")
            while stem in used:
                stem += "_dup"
            used.add(stem)
            target = guarded(out_dir / f"{stem}.npz")
            if target.exists() and not overwrite:
                result.existing.append(target)
                continue
            graph = convert_tile(record, source=f"{path}: {stem}", layout_pad=layout_pad, stats=result.stats,
                                 strict=strict)
            if graph is not None:
                save_graph(graph, target)
                result.written.append(target)
        return result
    except (ProtoDecodeError, HloGraphError) as exc:  # corrupt bytes, or an HLO graph we cannot featurize
        raise ConversionError(f"{path}: {exc}") from None
    except OSError as exc:  # output directory not writable, disk full, ...
        raise ConversionError(f"{exc.filename or out_dir}: cannot write output ({exc.strerror or exc})") from None


def _module_name(record: ModuleTuningData) -> str:
    return record.module.name if record.has_module and record.module is not None else "kernel"


def _configurable_ok(record: ModuleTuningData, graph: LayoutGraph) -> bool:
    """True when every configurable node is a convolution/dot/reshape (TpuGraphs §3.1)."""
    module = record.module
    ops = [inst.opcode for comp in module.computations for inst in comp.instructions]  # type: ignore[union-attr]
    return all(ops[i] in CONFIGURABLE_LAYOUT_OPCODES for i in graph.node_config_ids)
