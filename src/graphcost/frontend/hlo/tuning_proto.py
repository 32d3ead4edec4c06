"""TpuGraphs autotuner records (`tpu_graphs/proto/tuning.proto`) decoded by protobuf's parser.

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

The bytes are parsed by the `protobuf` package with graphcost's minimal schema
(`protos/hlo_tuning.proto`); damaged bytes become a `ProtoDecodeError` naming the message path,
field and byte offset (`proto_decode`). The runs are copied into the dataclasses below; the HLO
module is converted into an `HloModule` on first use (`ModuleTuningData.module`), because one
layout record can hold a large graph that a caller listing runs does not need.
`config_index_to_node` comes out as a uint64 numpy array, straight from the parsed message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from graphcost.frontend.hlo.hlo_proto import MAX_SHAPE_DEPTH, HloModule, hlo_module_from_proto
from graphcost.frontend.hlo.proto_decode import decode
from graphcost.frontend.hlo.protos import hlo_tuning_pb2 as pb
from graphcost.frontend.hlo.protowire import ProtoDecodeError, iter_fields


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
    module_proto: pb.HloModuleProto | None = None  # the parsed xla.HloModuleProto (field 1), converted on demand
    fingerprint: int = 0
    runs: list[ConfigProfile] = field(default_factory=list)
    config_index_to_node: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))  # (C,) uint64
    label: str = "ModuleTuningData"

    @property
    def has_module(self) -> bool:
        return self.module_proto is not None

    @cached_property
    def module(self) -> HloModule | None:
        if self.module_proto is None:
            return None
        return hlo_module_from_proto(self.module_proto, f"{self.label}.module")


@dataclass
class TuningData:
    modules: list[ModuleTuningData] = field(default_factory=list)


# --- from the parsed protobuf messages --------------------------------------------------------

def _tile_size_config(m: pb.TileSizeConfig) -> TileSizeConfig:
    return TileSizeConfig(list(m.kernel_bounds), list(m.output_bounds), list(m.input_bounds),
                          list(m.iteration_bounds))


def _profile(m: pb.ExecutionProfile) -> ExecutionProfile:
    return ExecutionProfile(m.compilation_cache_hit, m.compile_time_ms, m.compute_cycle_count, m.compute_time_ns,
                            m.compute_and_transfer_time_ns, m.executable_size_in_bytes, m.profile_cache_hit)


def config_profile_from_proto(m: pb.ConfigProfile) -> ConfigProfile:
    out = ConfigProfile(error=m.error, is_default=m.is_default,
                        profile=_profile(m.profile) if m.HasField("profile") else None)
    which = m.WhichOneof("config")
    if which == "op_config":
        cfg = m.op_config
        out.op_config = HloOpConfig(
            _tile_size_config(cfg.tile_size_config) if cfg.HasField("tile_size_config") else None)
    elif which == "module_config":
        cfg = m.module_config
        layout = None
        if cfg.HasField("layout_config"):
            layout = LayoutConfig([[list(t.dims) for t in node.tensors] for node in cfg.layout_config.nodes])
        out.module_config = HloModuleConfig(layout)
    return out


def module_tuning_data_from_proto(m: pb.ModuleTuningData, msg: str = "ModuleTuningData") -> ModuleTuningData:
    return ModuleTuningData(
        module_proto=m.module if m.HasField("module") else None, fingerprint=m.fingerprint,
        runs=[config_profile_from_proto(run) for run in m.runs],
        config_index_to_node=np.array(m.config_index_to_node, dtype=np.uint64), label=msg)


def parse_module_tuning_data(data, msg: str = "ModuleTuningData") -> ModuleTuningData:
    """Decode serialized `tpu_graphs.ModuleTuningData` bytes (the module is converted on first use)."""
    return module_tuning_data_from_proto(decode(pb.ModuleTuningData, data, msg, MAX_SHAPE_DEPTH), msg)


def parse_tuning_data(data, msg: str = "TuningData") -> TuningData:
    """Decode serialized `tpu_graphs.TuningData` bytes."""
    parsed = decode(pb.TuningData, data, msg, MAX_SHAPE_DEPTH)
    return TuningData([module_tuning_data_from_proto(m, f"{msg}.modules[{i}]") for i, m in enumerate(parsed.modules)])


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
