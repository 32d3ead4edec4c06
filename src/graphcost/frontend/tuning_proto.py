"""TpuGraphs autotuner records (`tpu_graphs/proto/tuning.proto`) decoded from wire bytes.

    TuningData        { repeated ModuleTuningData modules = 1; }
    ModuleTuningData  { xla.HloModuleProto module = 1; uint64 fingerprint = 2;
                        repeated ConfigProfile runs = 3; repeated uint64 config_index_to_node = 4; }
    ConfigProfile     { oneof config { HloOpConfig op_config = 1; HloModuleConfig module_config = 2; }
                        bool error = 3; xla.ExecutionProfile profile = 4; bool is_default = 5; }
    HloOpConfig       { TileSizeConfig tile_size_config = 1; }
    TileSizeConfig    { repeated int64 kernel_bounds = 1, output_bounds = 2, input_bounds = 3,
                        iteration_bounds = 4; }
    HloModuleConfig   { LayoutConfig layout_config = 1; }
    LayoutConfig      { repeated NodeLayoutConfig nodes = 1; }
    NodeLayoutConfig  { repeated TensorLayoutConfig tensors = 1; }  TensorLayoutConfig { repeated int32 dims = 1; }
    xla.ExecutionProfile { ..., int64 compute_time_ns = 4; int64 compute_and_transfer_time_ns = 5; ... }

`ModuleTuningData.module` is decoded lazily (`module` property) because one layout record can
hold a large HLO graph that a caller listing runs does not need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from graphcost.frontend.hlo_proto import HloModule, parse_hlo_module
from graphcost.frontend.protowire import (
    ProtoDecodeError,
    expect_len,
    expect_varint,
    iter_fields,
    to_bool,
    to_int64,
    unpack_varints,
)


@dataclass
class TileSizeConfig:
    kernel_bounds: list[int] = field(default_factory=list)
    output_bounds: list[int] = field(default_factory=list)
    input_bounds: list[int] = field(default_factory=list)
    iteration_bounds: list[int] = field(default_factory=list)


@dataclass
class HloOpConfig:
    tile_size_config: TileSizeConfig | None = None


@dataclass
class LayoutConfig:
    """`nodes[i].tensors[t]` = minor-to-major dims of tensor t (0 output, 1 input0, 2 input1/kernel)."""

    nodes: list[list[list[int]]] = field(default_factory=list)


@dataclass
class HloModuleConfig:
    layout_config: LayoutConfig | None = None


@dataclass
class ExecutionProfile:
    compilation_cache_hit: bool = False  # 1
    compile_time_ms: int = 0  # 2
    compute_cycle_count: int = 0  # 3
    compute_time_ns: int = 0  # 4
    compute_and_transfer_time_ns: int = 0  # 5
    executable_size_in_bytes: int = 0  # 6
    profile_cache_hit: bool = False  # 7


@dataclass
class ConfigProfile:
    op_config: HloOpConfig | None = None
    module_config: HloModuleConfig | None = None
    error: bool = False
    profile: ExecutionProfile | None = None
    is_default: bool = False


@dataclass
class ModuleTuningData:
    module_bytes: bytes | None = None  # serialized xla.HloModuleProto (field 1), decoded on demand
    fingerprint: int = 0
    runs: list[ConfigProfile] = field(default_factory=list)
    config_index_to_node: list[int] = field(default_factory=list)
    label: str = "ModuleTuningData"

    @cached_property
    def module(self) -> HloModule | None:
        if self.module_bytes is None:
            return None
        return parse_hlo_module(self.module_bytes, f"{self.label}.module")


@dataclass
class TuningData:
    modules: list[ModuleTuningData] = field(default_factory=list)


# --- decoders -------------------------------------------------------------------------------

def _repeated(buf, msg: str) -> list[int]:
    out: list[int] = []
    for num, wire, value, _ in iter_fields(buf, msg):
        if num == 1:
            out.extend(unpack_varints(wire, value, msg, num))
    return out


def _parse_tile_size_config(buf, msg: str) -> TileSizeConfig:
    out = TileSizeConfig()
    names = {1: out.kernel_bounds, 2: out.output_bounds, 3: out.input_bounds, 4: out.iteration_bounds}
    for num, wire, value, _ in iter_fields(buf, msg):
        if num in names:
            names[num].extend(unpack_varints(wire, value, msg, num))
    return out


def _parse_op_config(buf, msg: str) -> HloOpConfig:
    out = HloOpConfig()
    for num, _, value, _ in iter_fields(buf, msg):
        if num == 1:
            out.tile_size_config = _parse_tile_size_config(expect_len(value, msg, num), f"{msg}.tile_size_config")
    return out


def _parse_layout_config(buf, msg: str) -> LayoutConfig:
    out = LayoutConfig()
    for num, _, value, _ in iter_fields(buf, msg):
        if num != 1:
            continue
        nmsg = f"{msg}.nodes[{len(out.nodes)}]"
        tensors = [
            _repeated(expect_len(tvalue, nmsg, tnum), f"{nmsg}.tensors")
            for tnum, _, tvalue, _ in iter_fields(expect_len(value, msg, num), nmsg)
            if tnum == 1
        ]
        out.nodes.append(tensors)
    return out


def _parse_module_config(buf, msg: str) -> HloModuleConfig:
    out = HloModuleConfig()
    for num, _, value, _ in iter_fields(buf, msg):
        if num == 1:
            out.layout_config = _parse_layout_config(expect_len(value, msg, num), f"{msg}.layout_config")
    return out


_PROFILE_INTS = {2: "compile_time_ms", 3: "compute_cycle_count", 4: "compute_time_ns",
                 5: "compute_and_transfer_time_ns", 6: "executable_size_in_bytes"}
_PROFILE_BOOLS = {1: "compilation_cache_hit", 7: "profile_cache_hit"}


def _parse_profile(buf, msg: str) -> ExecutionProfile:
    out = ExecutionProfile()
    for num, wire, value, _ in iter_fields(buf, msg):
        if num in _PROFILE_INTS:
            expect_varint(wire, msg, num)
            setattr(out, _PROFILE_INTS[num], to_int64(value))
        elif num in _PROFILE_BOOLS:
            expect_varint(wire, msg, num)
            setattr(out, _PROFILE_BOOLS[num], to_bool(value))
    return out


def parse_config_profile(buf, msg: str = "ConfigProfile") -> ConfigProfile:
    out = ConfigProfile()
    for num, wire, value, _ in iter_fields(buf, msg):
        if num == 1:
            out.op_config = _parse_op_config(expect_len(value, msg, num), f"{msg}.op_config")
            out.module_config = None  # oneof: the last one seen wins
        elif num == 2:
            out.module_config = _parse_module_config(expect_len(value, msg, num), f"{msg}.module_config")
            out.op_config = None
        elif num == 3:
            expect_varint(wire, msg, num)
            out.error = to_bool(value)
        elif num == 4:
            out.profile = _parse_profile(expect_len(value, msg, num), f"{msg}.profile")
        elif num == 5:
            expect_varint(wire, msg, num)
            out.is_default = to_bool(value)
    return out


def parse_module_tuning_data(data, msg: str = "ModuleTuningData") -> ModuleTuningData:
    """Decode serialized `tpu_graphs.ModuleTuningData` bytes (module decoded lazily)."""
    out = ModuleTuningData(label=msg)
    for num, wire, value, _ in iter_fields(data, msg):
        if num == 1:
            out.module_bytes = bytes(expect_len(value, msg, num))
        elif num == 2:
            expect_varint(wire, msg, num)
            out.fingerprint = value  # uint64: keep unsigned
        elif num == 3:
            out.runs.append(parse_config_profile(expect_len(value, msg, num), f"{msg}.runs[{len(out.runs)}]"))
        elif num == 4:
            out.config_index_to_node.extend(unpack_varints(wire, value, msg, num, signed=False))
    return out


def parse_tuning_data(data, msg: str = "TuningData") -> TuningData:
    """Decode serialized `tpu_graphs.TuningData` bytes."""
    out = TuningData()
    for num, _, value, _ in iter_fields(data, msg):
        if num == 1:
            out.modules.append(
                parse_module_tuning_data(expect_len(value, msg, num), f"{msg}.modules[{len(out.modules)}]"))
    return out


def detect_kind(data: bytes) -> str:
    """'layout' for a ModuleTuningData record, 'tile' for a TuningData record.

    A `TuningData` carries only field 1 (repeated sub-messages); a `ModuleTuningData` carries runs
    (3) / config_index_to_node (4) / fingerprint (2) beside its module. Raises ProtoDecodeError when
    neither pattern fits.
    """
    numbers = {num for num, _, _, _ in iter_fields(data, "tuning record")}
    if numbers & {2, 3, 4}:
        return "layout"
    if numbers == {1}:
        return "tile"
    raise ProtoDecodeError("tuning record", None, 0,
                           f"top-level fields {sorted(numbers)} match neither TuningData nor ModuleTuningData")
