"""XLA `HloModuleProto` decoded from protobuf wire bytes into small dataclasses.

Only the fields graphcost needs are kept (the TpuGraphs 140 node features, graph structure,
layouts and the attributes a cost model may want). Field numbers are those of XLA's
`service/hlo.proto` and `xla_data.proto` (the TensorFlow r2.10-era schema that TpuGraphs used;
the numbers have been stable since). Unknown fields are skipped, as protobuf parsers do.

Entry point: `parse_hlo_module(data) -> HloModule`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graphcost.frontend.protowire import (
    LEN,
    ProtoDecodeError,
    expect_len,
    expect_varint,
    iter_fields,
    to_bool,
    to_int64,
    to_str,
    unpack_varints,
)

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
# dynamic slice sizes, window / slice / padding dimensions) is held to it, and a packed field
# longer than 10 bytes per allowed varint is refused before it is decoded, so megabytes of
# dimensions fail at once instead of feeding the featurizer's products.
MAX_SHAPE_RANK = 254
_PER_DIMENSION_LISTS = {14, 20}  # HloInstructionProto.dimensions, dynamic_slice_sizes


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


# --- decoders -------------------------------------------------------------------------------

def _int(wire: int, value, msg: str, num: int) -> int:
    expect_varint(wire, msg, num)
    return to_int64(value)


def _ints(wire: int, value, msg: str, num: int) -> list[int]:
    return unpack_varints(wire, value, msg, num)


def _check_rank(count: int, msg: str, num: int, offset: int, what: str = "dimensions") -> None:
    """A per-dimension list (or a packed field that would decode to `count` values) longer than MAX_SHAPE_RANK."""
    if count > MAX_SHAPE_RANK:
        raise ProtoDecodeError(msg, num, offset, f"more than {MAX_SHAPE_RANK} {what} (the most a shape may have)")


def _rank_ints(out: list[int], wire: int, value, msg: str, num: int, offset: int, what: str = "dimensions") -> None:
    """Extend `out` with a repeated int field occurrence, held to MAX_SHAPE_RANK values in all."""
    if wire == LEN:  # a packed varint takes at most 10 bytes: refuse a long field before decoding it
        _check_rank(len(out) + (len(value) + 9) // 10, msg, num, offset, what)
    out.extend(_ints(wire, value, msg, num))
    _check_rank(len(out), msg, num, offset, what)


def _parse_layout(buf, msg: str) -> Layout:
    out = Layout()
    for num, wire, value, _ in iter_fields(buf, msg):
        if num == 1:
            out.minor_to_major.extend(_ints(wire, value, msg, num))
        elif num == 6:
            tile: list[int] = []
            for tnum, twire, tvalue, _ in iter_fields(expect_len(value, msg, num), f"{msg}.tiles"):
                if tnum == 1:
                    tile.extend(_ints(twire, tvalue, f"{msg}.tiles", tnum))
            out.tiles.append(tile)
        elif num == 7:
            out.element_size_in_bits = _int(wire, value, msg, num)
        elif num == 8:
            out.memory_space = _int(wire, value, msg, num)
    return out


def _tuple_msg(msg: str, depth: int) -> str:
    """Name of a nested tuple shape, of bounded length: ``X.tuple_shapes``, then ``X.tuple_shapes[depth 2]``, ..."""
    if depth == 0:
        return f"{msg}.tuple_shapes"
    return f"{msg.rsplit('.tuple_shapes', 1)[0]}.tuple_shapes[depth {depth + 1}]"


def parse_shape(buf, msg: str = "ShapeProto", depth: int = 0) -> Shape:
    """Decode an xla.ShapeProto; tuple_shapes nested deeper than `MAX_SHAPE_DEPTH` is a ProtoDecodeError."""
    out = Shape()
    for num, wire, value, offset in iter_fields(buf, msg):
        if num == 2:
            out.element_type = _int(wire, value, msg, num)
        elif num == 3:
            _rank_ints(out.dimensions, wire, value, msg, num, offset)
        elif num == 4:
            if depth >= MAX_SHAPE_DEPTH:
                raise ProtoDecodeError(msg, num, offset, f"tuple_shapes nested deeper than {MAX_SHAPE_DEPTH} levels "
                                       "(XLA tuples nest a few levels; corrupt or hostile input)")
            out.tuple_shapes.append(parse_shape(expect_len(value, msg, num), _tuple_msg(msg, depth), depth + 1))
        elif num == 5:
            out.layout = _parse_layout(expect_len(value, msg, num), f"{msg}.layout")
        elif num == 6:
            out.is_dynamic_dimension.extend(bool(v) for v in _ints(wire, value, msg, num))
    return out


_WINDOW_FIELDS = {1: "size", 2: "stride", 3: "padding_low", 4: "padding_high", 5: "window_dilation", 6: "base_dilation"}


def _parse_window(buf, msg: str) -> list[WindowDimension]:
    dims: list[WindowDimension] = []
    for num, _, value, offset in iter_fields(buf, msg):
        if num != 1:
            continue
        _check_rank(len(dims) + 1, msg, num, offset, "window dimensions")
        dmsg = f"{msg}.dimensions[{len(dims)}]"
        dim = WindowDimension()
        for dnum, dwire, dvalue, _ in iter_fields(expect_len(value, msg, num), dmsg):
            if dnum in _WINDOW_FIELDS:
                setattr(dim, _WINDOW_FIELDS[dnum], _int(dwire, dvalue, dmsg, dnum))
            elif dnum == 7:
                expect_varint(dwire, dmsg, dnum)
                dim.window_reversal = to_bool(dvalue)
        dims.append(dim)
    return dims


_CONV_SCALARS = {7: "input_batch_dimension", 8: "input_feature_dimension", 3: "kernel_input_feature_dimension",
                 4: "kernel_output_feature_dimension", 9: "output_batch_dimension", 10: "output_feature_dimension"}
_CONV_LISTS = {11: "input_spatial_dimensions", 6: "kernel_spatial_dimensions", 12: "output_spatial_dimensions"}


def _parse_conv_dims(buf, msg: str) -> ConvolutionDimensionNumbers:
    out = ConvolutionDimensionNumbers()
    for num, wire, value, _ in iter_fields(buf, msg):
        if num in _CONV_SCALARS:
            setattr(out, _CONV_SCALARS[num], _int(wire, value, msg, num))
        elif num in _CONV_LISTS:
            getattr(out, _CONV_LISTS[num]).extend(_ints(wire, value, msg, num))
    return out


_DOT_LISTS = {1: "lhs_contracting_dimensions", 2: "rhs_contracting_dimensions",
              3: "lhs_batch_dimensions", 4: "rhs_batch_dimensions"}


def _parse_dot_dims(buf, msg: str) -> DotDimensionNumbers:
    out = DotDimensionNumbers()
    for num, wire, value, _ in iter_fields(buf, msg):
        if num in _DOT_LISTS:
            getattr(out, _DOT_LISTS[num]).extend(_ints(wire, value, msg, num))
    return out


def _parse_small(buf, msg: str, cls, names: dict[int, str]):
    out = cls()
    for num, wire, value, _ in iter_fields(buf, msg):
        if num in names:
            setattr(out, names[num], _int(wire, value, msg, num))
    return out


_SLICE_FIELDS = {1: "start", 2: "limit", 3: "stride"}
_PAD_FIELDS = {1: "edge_padding_low", 2: "edge_padding_high", 3: "interior_padding"}


def _parse_padding(buf, msg: str) -> list[PaddingDimension]:
    dims: list[PaddingDimension] = []
    for num, _, value, offset in iter_fields(buf, msg):
        if num == 1:
            _check_rank(len(dims) + 1, msg, num, offset, "padding dimensions")
            dims.append(_parse_small(expect_len(value, msg, num), f"{msg}.dimensions", PaddingDimension, _PAD_FIELDS))
    return dims


_INST_SCALARS = {9: "parameter_number", 13: "tuple_index", 18: "exponent_bits", 19: "mantissa_bits",
                 35: "id", 50: "feature_group_count", 58: "batch_group_count"}
_INST_LISTS = {14: "dimensions", 20: "dynamic_slice_sizes", 36: "operand_ids", 37: "control_predecessor_ids",
               38: "called_computation_ids"}
_INST_STRINGS = {1: "name", 2: "opcode", 11: "fusion_kind", 28: "custom_call_target", 63: "comparison_direction"}


def parse_instruction(buf, msg: str = "HloInstructionProto") -> HloInstruction:
    inst = HloInstruction()
    for num, wire, value, offset in iter_fields(buf, msg):
        if num in _INST_SCALARS:
            setattr(inst, _INST_SCALARS[num], _int(wire, value, msg, num))
        elif num in _PER_DIMENSION_LISTS:
            _rank_ints(getattr(inst, _INST_LISTS[num]), wire, value, msg, num, offset, _INST_LISTS[num])
        elif num in _INST_LISTS:
            getattr(inst, _INST_LISTS[num]).extend(_ints(wire, value, msg, num))
        elif num in _INST_STRINGS:
            setattr(inst, _INST_STRINGS[num], to_str(value, msg, num))
        elif num == 3:
            inst.shape = parse_shape(expect_len(value, msg, num), f"{msg}.shape")
        elif num == 15:
            inst.window = _parse_window(expect_len(value, msg, num), f"{msg}.window")
        elif num == 16:
            inst.convolution_dimension_numbers = _parse_conv_dims(
                expect_len(value, msg, num), f"{msg}.convolution_dimension_numbers")
        elif num == 17:
            _check_rank(len(inst.slice_dimensions) + 1, msg, num, offset, "slice dimensions")
            inst.slice_dimensions.append(
                _parse_small(expect_len(value, msg, num), f"{msg}.slice_dimensions", SliceDimensions, _SLICE_FIELDS))
        elif num == 21:
            inst.padding_config = _parse_padding(expect_len(value, msg, num), f"{msg}.padding_config")
        elif num == 30:
            inst.dot_dimension_numbers = _parse_dot_dims(expect_len(value, msg, num), f"{msg}.dot_dimension_numbers")
        elif num == 60:
            expect_varint(wire, msg, num)
            inst.is_stable = to_bool(value)
    return inst


def parse_computation(buf, msg: str = "HloComputationProto") -> HloComputation:
    comp = HloComputation()
    for num, wire, value, _ in iter_fields(buf, msg):
        if num == 1:
            comp.name = to_str(value, msg, num)
        elif num == 2:
            comp.instructions.append(
                parse_instruction(expect_len(value, msg, num), f"{msg}.instructions[{len(comp.instructions)}]"))
        elif num == 5:
            comp.id = _int(wire, value, msg, num)
        elif num == 6:
            comp.root_id = _int(wire, value, msg, num)
    return comp


def parse_hlo_module(data: bytes | memoryview, msg: str = "HloModuleProto") -> HloModule:
    """Decode serialized `xla.HloModuleProto` bytes.

    Raises `ProtoDecodeError` (a ValueError) naming the message path, field and offset when the
    bytes are truncated or corrupt, and when the module is structurally unusable (no computations).
    """
    module = HloModule()
    for num, wire, value, _ in iter_fields(data, msg):
        if num == 1:
            module.name = to_str(value, msg, num)
        elif num == 2:
            module.entry_computation_name = to_str(value, msg, num)
        elif num == 3:
            module.computations.append(
                parse_computation(expect_len(value, msg, num), f"{msg}.computations[{len(module.computations)}]"))
        elif num == 5:
            module.id = _int(wire, value, msg, num)
        elif num == 6:
            module.entry_computation_id = _int(wire, value, msg, num)
    if not module.computations:
        raise ProtoDecodeError(msg, 3, 0, "module has no computations (not an HloModuleProto?)")
    if wire_entry_missing(module):
        # Older protos may only carry the entry computation's name.
        for comp in module.computations:
            if comp.name == module.entry_computation_name:
                module.entry_computation_id = comp.id
                break
    return module


def wire_entry_missing(module: HloModule) -> bool:
    """True when entry_computation_id does not name one of the module's computations."""
    return all(comp.id != module.entry_computation_id for comp in module.computations)


__all__ = [
    "ConvolutionDimensionNumbers", "DotDimensionNumbers", "HloComputation", "HloInstruction", "HloModule",
    "Layout", "PaddingDimension", "PRIMITIVE_TYPE_NAMES", "Shape", "SliceDimensions", "WindowDimension",
    "parse_computation", "parse_hlo_module", "parse_instruction", "parse_shape",
]
