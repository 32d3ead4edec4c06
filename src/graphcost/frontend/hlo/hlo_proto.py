"""XLA `HloModuleProto` decoded by protobuf's parser into small dataclasses.

Only the fields graphcost needs are kept (the TpuGraphs 140 node features, graph structure,
layouts and the attributes a cost model may want). The bytes are parsed by the `protobuf` package
with graphcost's minimal schema (`protos/hlo_tuning.proto`: the public field numbers of XLA's
`service/hlo.proto` and `xla_data.proto`); damaged bytes become a `ProtoDecodeError` naming the
message path, field and byte offset (`proto_decode`). Unknown fields are skipped, as protobuf
parsers do. The parsed messages are then copied into the dataclasses below, holding hostile sizes
to the bounds documented beside them.

Entry point: `parse_hlo_module(data) -> HloModule` (or `hlo_module_from_proto` for a parsed message).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from graphcost.frontend.hlo.proto_decode import PARSE_ERRORS, decode, locate_damage, nested_name, nesting_problem
from graphcost.frontend.hlo.protos import hlo_tuning_pb2 as pb
from graphcost.frontend.hlo.protowire import LEN, ProtoDecodeError, scan_fields

# xla_data.proto PrimitiveType enum values.
PRIMITIVE_TYPE_NAMES = {
    0: "invalid", 1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32",
    9: "u64", 10: "f16", 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64", 16: "bf16",
    17: "token", 18: "c128",
}
TUPLE_TYPE = 13
# Deepest tuple_shapes nesting accepted. XLA's real tuples nest a few levels (a while loop's state
# tuple holding a tuple, ...); the bound keeps hostile files from exhausting Python's stack.
MAX_SHAPE_DEPTH = 64
# Most dimensions a shape may have: TensorFlow's TensorShape limit (kMaxDims = 254); real HLO
# shapes have a handful. Every per-dimension list (shape dimensions, an instruction's dimensions,
# dynamic slice sizes, window / slice / padding dimensions) is held to it before it is copied out
# of the parsed message (protobuf's C parser reads megabytes of packed values in milliseconds), so
# megabytes of dimensions fail at once instead of feeding the featurizer's products.
MAX_SHAPE_RANK = 254


@dataclass(slots=True)
class Layout:
    """xla.LayoutProto: minor_to_major (1), tiles (6, each TileProto.dimensions = 1), ..."""

    minor_to_major: list[int] = field(default_factory=list)
    tiles: list[list[int]] = field(default_factory=list)
    element_size_in_bits: int = 0  # 7
    memory_space: int = 0  # 8


@dataclass(slots=True)
class Shape:
    """xla.ShapeProto: element_type (2), dimensions (3), tuple_shapes (4), layout (5), is_dynamic_dimension (6)."""

    element_type: int = 0
    dimensions: list[int] = field(default_factory=list)
    tuple_shapes: list["Shape"] = field(default_factory=list)
    layout: Layout | None = None
    is_dynamic_dimension: list[bool] = field(default_factory=list)

    @property
    def element_type_name(self) -> str:
        return PRIMITIVE_TYPE_NAMES.get(self.element_type, f"type{self.element_type}")

    @property
    def rank(self) -> int:
        return len(self.dimensions)


@dataclass(slots=True)
class WindowDimension:
    """xla.WindowDimension (fields 1-7). Defaults are proto3 zero values, as serialized."""

    size: int = 0
    stride: int = 0
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 0
    base_dilation: int = 0
    window_reversal: bool = False


@dataclass(slots=True)
class ConvolutionDimensionNumbers:
    """xla.ConvolutionDimensionNumbers (field numbers in `_CONV_FIELDS`)."""

    input_batch_dimension: int = 0
    input_feature_dimension: int = 0
    input_spatial_dimensions: list[int] = field(default_factory=list)
    kernel_input_feature_dimension: int = 0
    kernel_output_feature_dimension: int = 0
    kernel_spatial_dimensions: list[int] = field(default_factory=list)
    output_batch_dimension: int = 0
    output_feature_dimension: int = 0
    output_spatial_dimensions: list[int] = field(default_factory=list)


@dataclass(slots=True)
class DotDimensionNumbers:
    lhs_contracting_dimensions: list[int] = field(default_factory=list)
    rhs_contracting_dimensions: list[int] = field(default_factory=list)
    lhs_batch_dimensions: list[int] = field(default_factory=list)
    rhs_batch_dimensions: list[int] = field(default_factory=list)


@dataclass(slots=True)
class SliceDimensions:
    start: int = 0
    limit: int = 0
    stride: int = 0


@dataclass(slots=True)
class PaddingDimension:
    edge_padding_low: int = 0
    edge_padding_high: int = 0
    interior_padding: int = 0


@dataclass(slots=True)
class HloInstruction:
    """xla.HloInstructionProto (subset). Field numbers in comments."""

    name: str = ""  # 1
    opcode: str = ""  # 2
    shape: Shape = field(default_factory=Shape)  # 3
    parameter_number: int = 0  # 9
    fusion_kind: str = ""  # 11
    tuple_index: int = 0  # 13
    dimensions: list[int] = field(default_factory=list)  # 14
    window: list[WindowDimension] = field(default_factory=list)  # 15 (Window.dimensions = 1)
    convolution_dimension_numbers: ConvolutionDimensionNumbers | None = None  # 16
    slice_dimensions: list[SliceDimensions] = field(default_factory=list)  # 17
    exponent_bits: int = 0  # 18
    mantissa_bits: int = 0  # 19
    dynamic_slice_sizes: list[int] = field(default_factory=list)  # 20
    padding_config: list[PaddingDimension] = field(default_factory=list)  # 21 (PaddingConfig.dimensions = 1)
    custom_call_target: str = ""  # 28
    dot_dimension_numbers: DotDimensionNumbers | None = None  # 30
    id: int = 0  # 35
    operand_ids: list[int] = field(default_factory=list)  # 36
    control_predecessor_ids: list[int] = field(default_factory=list)  # 37
    called_computation_ids: list[int] = field(default_factory=list)  # 38
    feature_group_count: int = 0  # 50
    batch_group_count: int = 0  # 58
    is_stable: bool = False  # 60
    comparison_direction: str = ""  # 63


@dataclass(slots=True)
class HloComputation:
    """xla.HloComputationProto: name (1), instructions (2), id (5), root_id (6)."""

    name: str = ""
    instructions: list[HloInstruction] = field(default_factory=list)
    id: int = 0
    root_id: int = 0


@dataclass(slots=True)
class HloModule:
    """xla.HloModuleProto: name (1), entry_computation_name (2), computations (3), id (5), entry_computation_id (6)."""

    name: str = ""
    entry_computation_name: str = ""
    entry_computation_id: int = 0
    computations: list[HloComputation] = field(default_factory=list)
    id: int = 0

    @property
    def num_instructions(self) -> int:
        return sum(len(c.instructions) for c in self.computations)

    def computation_by_id(self, comp_id: int) -> HloComputation:
        for comp in self.computations:
            if comp.id == comp_id:
                return comp
        raise KeyError(f"module {self.name!r} has no computation with id {comp_id}")

    @property
    def entry_computation(self) -> HloComputation:
        return self.computation_by_id(self.entry_computation_id)


# --- from the parsed protobuf messages --------------------------------------------------------

def _rank_error(msg: str, num: int, what: str = "dimensions") -> ProtoDecodeError:
    """A per-dimension list longer than MAX_SHAPE_RANK (the bytes parsed, so no offset is known)."""
    return ProtoDecodeError(msg, num, None, f"more than {MAX_SHAPE_RANK} {what} (the most a shape may have)")


# The copies below read each field once and pass the dataclasses' fields positionally: a 100k-
# instruction module spends most of its decoding time here, not in protobuf's parser.

def _layout(m: pb.LayoutProto) -> Layout:
    tiles = m.tiles
    return Layout(list(m.minor_to_major), [list(t.dimensions) for t in tiles] if tiles else [],
                  m.element_size_in_bits, m.memory_space)


def shape_from_proto(m: pb.ShapeProto, msg: str = "ShapeProto", depth: int = 0) -> Shape:
    """An xla.ShapeProto; tuple_shapes nested deeper than `MAX_SHAPE_DEPTH` is a ProtoDecodeError."""
    dims = m.dimensions
    if len(dims) > MAX_SHAPE_RANK:
        raise _rank_error(msg, 3)
    tuples = m.tuple_shapes
    if tuples:
        if depth >= MAX_SHAPE_DEPTH:
            raise ProtoDecodeError(msg, 4, None, nesting_problem("tuple_shapes", MAX_SHAPE_DEPTH))
        inner = nested_name(msg, "tuple_shapes", depth)
        tuples = [shape_from_proto(t, inner, depth + 1) for t in tuples]
    return Shape(m.element_type, list(dims), list(tuples), _layout(m.layout) if m.HasField("layout") else None,
                 list(m.is_dynamic_dimension))


def _window(m: pb.Window, msg: str) -> list[WindowDimension]:
    if len(m.dimensions) > MAX_SHAPE_RANK:
        raise _rank_error(f"{msg}.window", 1, "window dimensions")
    return [WindowDimension(d.size, d.stride, d.padding_low, d.padding_high, d.window_dilation, d.base_dilation,
                            d.window_reversal) for d in m.dimensions]


def _conv_dims(m: pb.ConvolutionDimensionNumbers) -> ConvolutionDimensionNumbers:
    return ConvolutionDimensionNumbers(
        m.input_batch_dimension, m.input_feature_dimension, list(m.input_spatial_dimensions),
        m.kernel_input_feature_dimension, m.kernel_output_feature_dimension, list(m.kernel_spatial_dimensions),
        m.output_batch_dimension, m.output_feature_dimension, list(m.output_spatial_dimensions))


def _dot_dims(m: pb.DotDimensionNumbers) -> DotDimensionNumbers:
    return DotDimensionNumbers(list(m.lhs_contracting_dimensions), list(m.rhs_contracting_dimensions),
                               list(m.lhs_batch_dimensions), list(m.rhs_batch_dimensions))


def _padding(m: pb.PaddingConfig, msg: str) -> list[PaddingDimension]:
    if len(m.dimensions) > MAX_SHAPE_RANK:
        raise _rank_error(f"{msg}.padding_config", 1, "padding dimensions")
    return [PaddingDimension(d.edge_padding_low, d.edge_padding_high, d.interior_padding) for d in m.dimensions]


def instruction_from_proto(m: pb.HloInstructionProto, msg: str = "HloInstructionProto") -> HloInstruction:
    """An xla.HloInstructionProto; every per-dimension list is held to MAX_SHAPE_RANK entries."""
    dims, sizes, slices = m.dimensions, m.dynamic_slice_sizes, m.slice_dimensions
    if len(dims) > MAX_SHAPE_RANK or len(sizes) > MAX_SHAPE_RANK or len(slices) > MAX_SHAPE_RANK:
        num, what = next((n, w) for n, w, v in ((14, "dimensions", dims), (20, "dynamic_slice_sizes", sizes),
                                                (17, "slice dimensions", slices)) if len(v) > MAX_SHAPE_RANK)
        raise _rank_error(msg, num, what)
    has = m.HasField
    return HloInstruction(
        m.name, m.opcode, shape_from_proto(m.shape, msg + ".shape"), m.parameter_number, m.fusion_kind,
        m.tuple_index, list(dims), _window(m.window, msg) if has("window") else [],
        _conv_dims(m.convolution_dimension_numbers) if has("convolution_dimension_numbers") else None,
        [SliceDimensions(d.start, d.limit, d.stride) for d in slices] if slices else [],
        m.exponent_bits, m.mantissa_bits, list(sizes), _padding(m.padding_config, msg) if has("padding_config") else [],
        m.custom_call_target, _dot_dims(m.dot_dimension_numbers) if has("dot_dimension_numbers") else None,
        m.id, list(m.operand_ids), list(m.control_predecessor_ids), list(m.called_computation_ids),
        m.feature_group_count, m.batch_group_count, m.is_stable, m.comparison_direction,
    )


def computation_from_proto(m: pb.HloComputationProto, msg: str = "HloComputationProto") -> HloComputation:
    instructions = [instruction_from_proto(inst, f"{msg}.instructions[{i}]") for i, inst in enumerate(m.instructions)]
    return HloComputation(m.name, instructions, m.id, m.root_id)


# From this many instructions on, the copy runs with the cyclic garbage collector paused.
GC_PAUSE_MIN_INSTRUCTIONS = 10_000
_BYTES_PER_INSTRUCTION = 150  # about, serialized (the shared TpuGraphs module: 147)


@contextmanager
def _collect_once_after(instructions: int) -> Iterator[None]:
    """For a large module, pause Python's cyclic garbage collector while it is copied, then collect once.

    A 100k-instruction module becomes ~1.5 million dataclasses and lists, none in a reference
    cycle. With the collector running, the growing heap is rescanned by several full collections
    during the copy and again while the featurizer runs (measured: half the copying time, a
    quarter of featurizing). One full collection afterwards moves them all to the oldest
    generation at the cost of a single scan. Small modules are copied with the collector as is:
    for them a full collection would cost more than it saves.
    """
    if instructions < GC_PAUSE_MIN_INSTRUCTIONS or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def _module(header: pb.HloModuleProto, computations: list[HloComputation], msg: str) -> HloModule:
    """The `HloModule` of a module's scalar fields and its copied computations."""
    if not computations:
        raise ProtoDecodeError(msg, 3, None, "module has no computations (not an HloModuleProto?)")
    module = HloModule(header.name, header.entry_computation_name, header.entry_computation_id, computations,
                       header.id)
    if wire_entry_missing(module):
        # Older protos may only carry the entry computation's name.
        for comp in module.computations:
            if comp.name == module.entry_computation_name:
                module.entry_computation_id = comp.id
                break
    return module


def hlo_module_from_proto(m: pb.HloModuleProto, msg: str = "HloModuleProto") -> HloModule:
    """A parsed xla.HloModuleProto as an `HloModule`; a ProtoDecodeError when it has no computations."""
    with _collect_once_after(sum(len(c.instructions) for c in m.computations)):
        computations = [computation_from_proto(c, f"{msg}.computations[{i}]") for i, c in enumerate(m.computations)]
    return _module(m, computations, msg)


def parse_hlo_module(data: bytes | memoryview, msg: str = "HloModuleProto") -> HloModule:
    """Decode serialized `xla.HloModuleProto` bytes.

    Each computation is parsed by protobuf and copied into dataclasses on its own, so the parsed
    messages of only one computation are alive beside the dataclasses at any time (a module
    parsed whole would hold all of them: +40% peak memory on a 100k-instruction module). The
    module's top-level fields are split with the wire walker.

    Raises `ProtoDecodeError` (a ValueError) naming the message path, field and offset when the
    bytes are truncated or corrupt, and when the module is structurally unusable (no computations)
    or breaks a size bound (`MAX_SHAPE_DEPTH`, `MAX_SHAPE_RANK`).
    """
    view = memoryview(data)
    fields = list(scan_fields(view, msg))
    header = bytearray()  # every top-level field but the computations, parsed as one HloModuleProto
    parts: list[tuple[int, int]] = []  # the computations' (start, end) in `view`
    for k, (num, wire, value, key_pos, payload) in enumerate(fields):
        if num == 3 and wire == LEN:
            parts.append((payload, payload + len(value)))  # type: ignore[arg-type]
        else:
            header += view[key_pos:fields[k + 1][3] if k + 1 < len(fields) else len(view)]
    if not parts:
        raise ProtoDecodeError(msg, 3, None, "module has no computations (not an HloModuleProto?)")
    try:
        top = pb.HloModuleProto.FromString(bytes(header))
    except PARSE_ERRORS as exc:  # e.g. a name that is not UTF-8: walk the whole module for the offset
        raise locate_damage(view, pb.HloModuleProto.DESCRIPTOR, msg, MAX_SHAPE_DEPTH, str(exc)) from None
    computations = []
    with _collect_once_after(len(view) // _BYTES_PER_INSTRUCTION):
        for i, (start, end) in enumerate(parts):
            label = f"{msg}.computations[{i}]"
            comp = decode(pb.HloComputationProto, view[start:end], label, MAX_SHAPE_DEPTH, view, start)
            computations.append(computation_from_proto(comp, label))
    return _module(top, computations, msg)


def wire_entry_missing(module: HloModule) -> bool:
    """True when entry_computation_id does not name one of the module's computations."""
    return all(comp.id != module.entry_computation_id for comp in module.computations)


__all__ = [
    "ConvolutionDimensionNumbers", "DotDimensionNumbers", "HloComputation", "HloInstruction", "HloModule",
    "Layout", "PaddingDimension", "PRIMITIVE_TYPE_NAMES", "Shape", "SliceDimensions", "WindowDimension",
    "computation_from_proto", "hlo_module_from_proto", "instruction_from_proto", "parse_hlo_module",
    "shape_from_proto",
]
