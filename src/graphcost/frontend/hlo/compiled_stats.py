"""What the compiler did to one configuration: data-movement statistics of an OPTIMIZED HLO module.

A layout configuration (TpuGraphs §3) asks for tensors in non-default layouts; XLA's layout
assignment meets the request by materialising values in the asked layout, and every consumer
that needs another layout gets another ``copy`` (or ``transpose``). Which of those copies the
compiler actually inserts depends on the whole graph (two moved neighbours that agree need no copy
between them; a moved tensor read by a row-major dot needs two), so it cannot be read off the
configuration alone, but it can be read off the compiled module. On the shipped `cpu_layout`
programs the bytes copied rank a program's configurations better than counting the moved tensors,
on every family, with nothing learned (the guide's "Cost models" page, "What the compiler did").

Columns of `compiled_stats` (`COMPILED_STATS`), over every computation of the module (fused
computations included, so a copy fused into a loop kernel still counts):

    copy_bytes           Σ bytes of the outputs of ``copy`` instructions
    strided_copy_bytes   the same, for copies whose operand's minor-most dimension is not the
                         output's (a transposing copy: strided reads or writes)
    copies               number of ``copy`` instructions
    transpose_bytes      Σ bytes of the outputs of ``transpose`` instructions
    transposes           number of ``transpose`` instructions
    fusions              number of ``fusion`` instructions outside fused computations (kernels)
    instructions         number of instructions in the module

Bytes are elements x the element type's size (`ELEMENT_BYTES`; 4 for a type it does not know).

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

import math

import numpy as np

from graphcost.frontend.hlo.hlo_proto import HloInstruction, HloModule, Shape

COMPILED_STATS = ("copy_bytes", "strided_copy_bytes", "copies", "transpose_bytes", "transposes", "fusions",
                  "instructions")
# xla_data.proto PrimitiveType -> bytes per element (pred, s8, s16, s32, s64, u8, u16, u32, u64,
# f16, f32, f64, c64, bf16, c128)
ELEMENT_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 2, 8: 4, 9: 8, 10: 2, 11: 4, 12: 8, 15: 8, 16: 2, 18: 16}


def shape_bytes(shape: Shape) -> float:
    """Bytes of an array shape (a tuple: the sum of its parts)."""
    if shape.tuple_shapes:
        return float(sum(shape_bytes(s) for s in shape.tuple_shapes))
    return float(math.prod(shape.dimensions)) * ELEMENT_BYTES.get(shape.element_type, 4)


def _minor_dim(shape: Shape) -> int | None:
    """The minor-most dimension of an array shape's layout, or None (no layout, rank 0, a tuple)."""
    if shape.tuple_shapes or shape.layout is None or not shape.layout.minor_to_major:
        return None
    return shape.layout.minor_to_major[0]


def compiled_stats(module: HloModule) -> np.ndarray:
    """(len(COMPILED_STATS),) float64 statistics of an optimized module (module docstring)."""
    fused = {cid for comp in module.computations for inst in comp.instructions if inst.opcode == "fusion"
             for cid in inst.called_computation_ids}
    out = np.zeros(len(COMPILED_STATS), dtype=np.float64)
    for comp in module.computations:
        by_id: dict[int, HloInstruction] = {inst.id: inst for inst in comp.instructions}
        for inst in comp.instructions:
            out[6] += 1
            if inst.opcode == "copy":
                size = shape_bytes(inst.shape)
                out[0] += size
                out[2] += 1
                operand = by_id.get(inst.operand_ids[0]) if inst.operand_ids else None
                if operand is not None and _minor_dim(operand.shape) != _minor_dim(inst.shape):
                    out[1] += size
            elif inst.opcode == "transpose":
                out[3] += shape_bytes(inst.shape)
                out[4] += 1
            elif inst.opcode == "fusion" and comp.id not in fused:
                out[5] += 1
    return out
