"""`compiled_stats`: the data movement of an optimized HLO module (copies, transposing copies,
transposes, kernels), on hand-built modules and on a real compiled JAX program."""

import numpy as np
import pytest

from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS, compiled_stats, shape_bytes
from graphcost.frontend.hlo.hlo_proto import HloComputation, HloInstruction, HloModule, Layout, Shape

F32, BF16 = 11, 16


def _arr(dims, m2m, etype=F32):
    return Shape(element_type=etype, dimensions=list(dims), layout=Layout(minor_to_major=list(m2m)))


def _module():
    p = HloInstruction(name="p", opcode="parameter", shape=_arr((8, 16), (1, 0)), id=1)
    t = HloInstruction(name="t", opcode="copy", shape=_arr((8, 16), (0, 1)), id=2, operand_ids=[1])  # transposing
    c = HloInstruction(name="c", opcode="copy", shape=_arr((8, 16), (1, 0), BF16), id=3, operand_ids=[1])  # not
    tr = HloInstruction(name="tr", opcode="transpose", shape=_arr((16, 8), (1, 0)), id=4, operand_ids=[1])
    f = HloInstruction(name="f", opcode="fusion", shape=_arr((8, 16), (1, 0)), id=5, operand_ids=[2],
                       called_computation_ids=[2])
    entry = HloComputation(name="main", instructions=[p, t, c, tr, f], id=1, root_id=5)
    fp = HloInstruction(name="fp", opcode="parameter", shape=_arr((8, 16), (0, 1)), id=6)
    fc = HloInstruction(name="fc", opcode="copy", shape=_arr((8, 16), (1, 0)), id=7, operand_ids=[6])  # fused, transposing
    inner = HloInstruction(name="g", opcode="fusion", shape=_arr((8, 16), (1, 0)), id=8, operand_ids=[7],
                           called_computation_ids=[3])  # a fusion inside a fused computation is no kernel of its own
    fused = HloComputation(name="fused", instructions=[fp, fc, inner], id=2, root_id=8)
    leaf = HloComputation(name="leaf", instructions=[HloInstruction(name="lp", opcode="parameter",
                                                                    shape=_arr((8, 16), (1, 0)), id=9)], id=3, root_id=9)
    return HloModule(name="m", entry_computation_name="main", entry_computation_id=1, computations=[entry, fused, leaf])


def test_copies_transposes_and_kernels_are_counted_in_every_computation():
    stats = dict(zip(COMPILED_STATS, compiled_stats(_module())))
    assert stats["copy_bytes"] == 8 * 16 * 4 + 8 * 16 * 2 + 8 * 16 * 4  # f32 + bf16 + the fused f32 copy
    assert stats["strided_copy_bytes"] == 2 * 8 * 16 * 4  # the two copies that move the minor-most dimension
    assert stats["copies"] == 3
    assert stats["transpose_bytes"] == 16 * 8 * 4 and stats["transposes"] == 1
    assert stats["fusions"] == 1  # the entry's fusion; the one inside a fused computation is part of it
    assert stats["instructions"] == 9


def test_shape_bytes_of_tuples_and_scalars():
    assert shape_bytes(Shape(element_type=F32)) == 4  # a scalar: one element
    assert shape_bytes(Shape(element_type=13, tuple_shapes=[_arr((2, 3), (1, 0)), _arr((4,), (0,), BF16)])) == 24 + 8


def test_a_real_program_moved_off_its_default_layout_copies_more():
    pytest.importorskip("jax")
    import jax.numpy as jnp

    from graphcost.frontend.programs.jax_program import executable_stats
    from graphcost.frontend.programs.layouts import LayoutProgram, locate_sites

    def f(x, w):
        return jnp.tanh(x @ w) @ w

    lp = LayoutProgram(f, (jnp.ones((64, 32)), jnp.ones((32, 32))))
    _, active, _ = locate_sites(lp)
    default = [(None, None, None)] * len(lp.sites)
    moved = list(default)
    site = active[0]
    moved[site.index] = ((0, 1), None, None)  # the first dot's output column-major
    base, other = (executable_stats(lp.lowered(c).compile()) for c in (default, moved))
    names = list(COMPILED_STATS)
    assert other[names.index("copy_bytes")] > base[names.index("copy_bytes")]
    assert other[names.index("strided_copy_bytes")] > 0 and np.all(base >= 0)
