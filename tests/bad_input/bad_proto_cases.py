"""Adversarial TpuGraphs tuning protobufs for `graphcost data from-proto` (issue 19).

The test encoder (tests/proto_encode.py, written independently of the decoder) builds one valid layout record (`ModuleTuningData`) and one
valid tile record (`TuningData`); the generators below put a hostile value into one field.
Field numbers: XLA `hlo.proto` / `xla_data.proto`, tpu_graphs `tuning.proto`.
"""

from __future__ import annotations

from proto_encode import ld, packed, text, vint

BIG = 1 << 62  # a dimension / tile bound near the int64 limit
F32, TUPLE = 11, 13  # xla PrimitiveType


def shape(dims=(2, 3), etype: int = F32, tuple_shapes=(), layout: bool = True) -> bytes:
    """xla.ShapeProto: element_type 2, dimensions 3, tuple_shapes 4, layout 5 (minor_to_major 1)."""
    out = vint(2, etype) + packed(3, dims) + b"".join(ld(4, t) for t in tuple_shapes)
    return out + ld(5, packed(1, list(range(len(dims)))[::-1])) if layout else out


def nested_tuple_shape(depth: int) -> bytes:
    """A tuple shape nested `depth` levels deep (built bottom-up, no recursion)."""
    inner = shape()
    for _ in range(depth):
        inner = vint(2, TUPLE) + ld(4, inner)
    return inner


def module(param_shape: bytes | None = None, dot_opcode: str = "dot", dot_extra: bytes = b"") -> bytes:
    """xla.HloModuleProto: p0, p1 -> dot (id 3, the configurable node, plus `dot_extra` fields) -> root add."""
    def inst(name, opcode, inst_id, shp, operands=(), extra=b""):
        return text(1, name) + text(2, opcode) + ld(3, shp) + vint(35, inst_id) + packed(36, operands) + extra

    insts = [
        inst("p0", "parameter", 1, param_shape or shape(), extra=vint(9, 0)),
        inst("p1", "parameter", 2, shape((3, 2)), extra=vint(9, 1)),
        inst("d", dot_opcode, 3, shape((2, 2)), (1, 2), dot_extra),
        inst("r", "add", 4, shape((2, 2)), (3, 3)),
    ]
    comp = text(1, "cluster_0") + b"".join(ld(2, i) for i in insts) + vint(5, 0) + vint(6, 4)
    return text(1, "m") + text(2, "cluster_0") + ld(3, comp) + vint(6, 0)


def _profile(ns: int) -> bytes:
    return ld(4, vint(4, ns))


def layout_record(hlo: bytes | None = None, config_ids=(2,)) -> bytes:
    """tpu_graphs.ModuleTuningData with 2 layout runs (one default) over configurable node 2 (the dot)."""
    node = b"".join(ld(1, packed(1, dims)) for dims in ([1, 0], [1, 0], [0, 1]))  # 3 tensors' minor_to_major
    layout_cfg = ld(1, ld(1, node))  # HloModuleConfig.layout_config.nodes[0]
    runs = [ld(2, layout_cfg) + _profile(100) + vint(5, 1), ld(2, layout_cfg) + _profile(120)]
    return ld(1, hlo or module()) + vint(2, 7) + b"".join(ld(3, r) for r in runs) + packed(4, config_ids)


def tile_record(kernel_bounds=(8, 8), hlo: bytes | None = None) -> bytes:
    """tpu_graphs.TuningData holding one kernel with 2 tile runs (one default)."""
    def run(bounds, ns, default):
        tile = packed(1, bounds) + packed(2, [4, 4]) + packed(3, [2, 2])  # kernel / output / input bounds
        return ld(1, ld(1, tile)) + _profile(ns) + (vint(5, 1) if default else b"")

    kernel = ld(1, hlo or module()) + vint(2, 9) + ld(3, run((8, 8), 200, True)) + ld(3, run(kernel_bounds, 150, False))
    return ld(1, kernel)


# --- the hostile cases -----------------------------------------------------------------------

def deep_tuple(depth: int = 1000) -> bytes:
    """parameter p0 with tuple_shapes nested `depth` deep (RecursionError before issue 19)."""
    return layout_record(module(nested_tuple_shape(depth)))


def huge_dims(count: int = 20) -> bytes:
    """p0 with `count` dimensions of 2^62: their product overflows a float (OverflowError before)."""
    return layout_record(module(shape([BIG] * count)))


def many_huge_dims(size_bytes: int) -> bytes:
    """About `size_bytes` of 2^62 dimensions: a quadratic big-integer product before (minutes at 2.4 MB)."""
    return layout_record(module(shape([BIG] * (size_bytes // 9), layout=False)))  # 9 bytes per varint of 2^62


# HloInstructionProto fields with one entry per dimension, each given `n` entries.
PER_DIMENSION_FIELDS = {
    "dimensions": lambda n: packed(14, [1] * n),
    "dynamic_slice_sizes": lambda n: packed(20, [1] * n),
    "window dimensions": lambda n: ld(15, b"".join(ld(1, vint(1, 1)) for _ in range(n))),
    "slice dimensions": lambda n: b"".join(ld(17, vint(2, 1) + vint(3, 1)) for _ in range(n)),
    "padding dimensions": lambda n: ld(21, b"".join(ld(1, vint(1, 0)) for _ in range(n))),
}


def per_dimension_list(field: str, n: int) -> bytes:
    """The dot instruction with `n` entries in one per-dimension field (`PER_DIMENSION_FIELDS`)."""
    return layout_record(module(dot_extra=PER_DIMENSION_FIELDS[field](n)))


def huge_tile_bounds(count: int = 20) -> bytes:
    """A tile run whose kernel_bounds are `count` values of 2^62 (OverflowError before)."""
    return tile_record(kernel_bounds=[BIG] * count)


def unknown_opcode(layout: bool = True) -> bytes:
    """The dot's opcode name with one flipped byte ("dou"): silently opcode 0 before."""
    hlo = module(dot_opcode="dou")
    return layout_record(hlo) if layout else tile_record(hlo=hlo)
