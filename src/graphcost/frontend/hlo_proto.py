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

from dataclasses import dataclass, field

from graphcost.frontend.proto_decode import decode, nested_name, nesting_problem
from graphcost.frontend.protos import hlo_tuning_pb2 as pb
from graphcost.frontend.protowire import ProtoDecodeError

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


@dataclass
class Layout:
    """xla.LayoutProto: minor_to_major (1), tiles (6, each TileProto.dimensions = 1), ..."""

    minor_to_major: list[int] = field(default_factory=list)
    tiles: list[list[int]] = field(default_factory=list)
    element_size_in_bits: int = 0  # 7
    memory_space: int = 0  # 8


@dataclass
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


@dataclass
class WindowDimension:
    """xla.WindowDimension (fields 1-7). Defaults are proto3 zero values, as serialized."""

    size: int = 0
    stride: int = 0
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 0
    base_dilation: int = 0
    window_reversal: bool = False


@dataclass
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


@dataclass
class DotDimensionNumbers:
    lhs_contracting_dimensions: list[int] = field(default_factory=list)
    rhs_contracting_dimensions: list[int] = field(default_factory=list)
    lhs_batch_dimensions: list[int] = field(default_factory=list)
    rhs_batch_dimensions: list[int] = field(default_factory=list)


@dataclass
class SliceDimensions:
    start: int = 0
    limit: int = 0
    stride: int = 0


@dataclass
class PaddingDimension:
    edge_padding_low: int = 0
    edge_padding_high: int = 0
    interior_padding: int = 0


@dataclass
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


@dataclass
class HloComputation:
    """xla.HloComputationProto: name (1), instructions (2), id (5), root_id (6)."""

    name: str = ""
    instructions: list[HloInstruction] = field(default_factory=list)
    id: int = 0
    root_id: int = 0


@dataclass
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

def _check_rank(count: int, msg: str, num: int, what: str = "dimensions") -> None:
    """A per-dimension list longer than MAX_SHAPE_RANK (the bytes parsed, so no offset is known)."""
    if count > MAX_SHAPE_RANK:
        raise ProtoDecodeError(msg, num, None, f"more than {MAX_SHAPE_RANK} {what} (the most a shape may have)")


def _layout(m: pb.LayoutProto) -> Layout:
    return Layout(minor_to_major=list(m.minor_to_major), tiles=[list(t.dimensions) for t in m.tiles],
                  element_size_in_bits=m.element_size_in_bits, memory_space=m.memory_space)


def shape_from_proto(m: pb.ShapeProto, msg: str = "ShapeProto", depth: int = 0) -> Shape:
    """An xla.ShapeProto; tuple_shapes nested deeper than `MAX_SHAPE_DEPTH` is a ProtoDecodeError."""
    _check_rank(len(m.dimensions), msg, 3)
    tuples: list[Shape] = []
    if m.tuple_shapes:
        if depth >= MAX_SHAPE_DEPTH:
            raise ProtoDecodeError(msg, 4, None, nesting_problem("tuple_shapes", MAX_SHAPE_DEPTH))
        inner = nested_name(msg, "tuple_shapes", depth)
        tuples = [shape_from_proto(t, inner, depth + 1) for t in m.tuple_shapes]
    return Shape(element_type=m.element_type, dimensions=list(m.dimensions), tuple_shapes=tuples,
                 layout=_layout(m.layout) if m.HasField("layout") else None,
                 is_dynamic_dimension=list(m.is_dynamic_dimension))


def _window(m: pb.Window, msg: str) -> list[WindowDimension]:
    _check_rank(len(m.dimensions), f"{msg}.window", 1, "window dimensions")
    return [WindowDimension(d.size, d.stride, d.padding_low, d.padding_high, d.window_dilation, d.base_dilation,
                            d.window_reversal) for d in m.dimensions]


def _conv_dims(m: pb.ConvolutionDimensionNumbers) -> ConvolutionDimensionNumbers:
    return ConvolutionDimensionNumbers(
        input_batch_dimension=m.input_batch_dimension, input_feature_dimension=m.input_feature_dimension,
        input_spatial_dimensions=list(m.input_spatial_dimensions),
        kernel_input_feature_dimension=m.kernel_input_feature_dimension,
        kernel_output_feature_dimension=m.kernel_output_feature_dimension,
        kernel_spatial_dimensions=list(m.kernel_spatial_dimensions),
        output_batch_dimension=m.output_batch_dimension, output_feature_dimension=m.output_feature_dimension,
        output_spatial_dimensions=list(m.output_spatial_dimensions))


def _dot_dims(m: pb.DotDimensionNumbers) -> DotDimensionNumbers:
    return DotDimensionNumbers(list(m.lhs_contracting_dimensions), list(m.rhs_contracting_dimensions),
                               list(m.lhs_batch_dimensions), list(m.rhs_batch_dimensions))


def _padding(m: pb.PaddingConfig, msg: str) -> list[PaddingDimension]:
    _check_rank(len(m.dimensions), f"{msg}.padding_config", 1, "padding dimensions")
    return [PaddingDimension(d.edge_padding_low, d.edge_padding_high, d.interior_padding) for d in m.dimensions]


def instruction_from_proto(m: pb.HloInstructionProto, msg: str = "HloInstructionProto") -> HloInstruction:
    """An xla.HloInstructionProto; every per-dimension list is held to MAX_SHAPE_RANK entries."""
    _check_rank(len(m.dimensions), msg, 14, "dimensions")
    _check_rank(len(m.dynamic_slice_sizes), msg, 20, "dynamic_slice_sizes")
    _check_rank(len(m.slice_dimensions), msg, 17, "slice dimensions")
    has = m.HasField
    return HloInstruction(
        name=m.name, opcode=m.opcode, shape=shape_from_proto(m.shape, f"{msg}.shape"),
        parameter_number=m.parameter_number, fusion_kind=m.fusion_kind, tuple_index=m.tuple_index,
        dimensions=list(m.dimensions), window=_window(m.window, msg) if has("window") else [],
        convolution_dimension_numbers=(
            _conv_dims(m.convolution_dimension_numbers) if has("convolution_dimension_numbers") else None),
        slice_dimensions=[SliceDimensions(d.start, d.limit, d.stride) for d in m.slice_dimensions],
        exponent_bits=m.exponent_bits, mantissa_bits=m.mantissa_bits,
        dynamic_slice_sizes=list(m.dynamic_slice_sizes),
        padding_config=_padding(m.padding_config, msg) if has("padding_config") else [],
        custom_call_target=m.custom_call_target,
        dot_dimension_numbers=_dot_dims(m.dot_dimension_numbers) if has("dot_dimension_numbers") else None,
        id=m.id, operand_ids=list(m.operand_ids), control_predecessor_ids=list(m.control_predecessor_ids),
        called_computation_ids=list(m.called_computation_ids), feature_group_count=m.feature_group_count,
        batch_group_count=m.batch_group_count, is_stable=m.is_stable, comparison_direction=m.comparison_direction,
    )


def computation_from_proto(m: pb.HloComputationProto, msg: str = "HloComputationProto") -> HloComputation:
    return HloComputation(
        name=m.name, id=m.id, root_id=m.root_id,
        instructions=[instruction_from_proto(inst, f"{msg}.instructions[{i}]")
                      for i, inst in enumerate(m.instructions)])


def hlo_module_from_proto(m: pb.HloModuleProto, msg: str = "HloModuleProto") -> HloModule:
    """A parsed xla.HloModuleProto as an `HloModule`; a ProtoDecodeError when it has no computations."""
    if not m.computations:
        raise ProtoDecodeError(msg, 3, None, "module has no computations (not an HloModuleProto?)")
    module = HloModule(
        name=m.name, entry_computation_name=m.entry_computation_name, entry_computation_id=m.entry_computation_id,
        id=m.id, computations=[computation_from_proto(c, f"{msg}.computations[{i}]")
                               for i, c in enumerate(m.computations)])
    if wire_entry_missing(module):
        # Older protos may only carry the entry computation's name.
        for comp in module.computations:
            if comp.name == module.entry_computation_name:
                module.entry_computation_id = comp.id
                break
    return module


def parse_hlo_module(data: bytes | memoryview, msg: str = "HloModuleProto") -> HloModule:
    """Decode serialized `xla.HloModuleProto` bytes.

    Raises `ProtoDecodeError` (a ValueError) naming the message path, field and offset when the
    bytes are truncated or corrupt, and when the module is structurally unusable (no computations)
    or breaks a size bound (`MAX_SHAPE_DEPTH`, `MAX_SHAPE_RANK`).
    """
    return hlo_module_from_proto(decode(pb.HloModuleProto, data, msg, MAX_SHAPE_DEPTH), msg)


def wire_entry_missing(module: HloModule) -> bool:
    """True when entry_computation_id does not name one of the module's computations."""
    return all(comp.id != module.entry_computation_id for comp in module.computations)


__all__ = [
    "ConvolutionDimensionNumbers", "DotDimensionNumbers", "HloComputation", "HloInstruction", "HloModule",
    "Layout", "PaddingDimension", "PRIMITIVE_TYPE_NAMES", "Shape", "SliceDimensions", "WindowDimension",
    "computation_from_proto", "hlo_module_from_proto", "instruction_from_proto", "parse_hlo_module",
    "shape_from_proto",
]
