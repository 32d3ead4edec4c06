"""JAX program -> HLO proto -> features; layout constraints; zoo registry."""

import numpy as np
import pytest

from graphcost.frontend.hlo.hlo_proto import parse_hlo_module
from graphcost.frontend.programs.jax_program import (featurize_hlo_bytes, featurize_jax, hlo_module_bytes,
                                            instruction_op_names)


@pytest.mark.parametrize("stage", ["optimized", "unoptimized"])
def test_featurize_tiny_function(tiny_dot_program, stage):
    fn, args = tiny_dot_program
    data = hlo_module_bytes(fn, args, stage=stage)
    module = parse_hlo_module(data)
    fm = featurize_hlo_bytes(data)
    assert fm.node_feat.shape == (module.num_instructions, 140)
    assert fm.node_feat.dtype == np.float32 and np.isfinite(fm.node_feat).all()
    assert len(fm.node_opcode) == module.num_instructions
    # every edge is [consumer, producer] within range; the two dots are present
    assert fm.edge_index.min() >= 0 and fm.edge_index.max() < module.num_instructions
    assert "dot" in fm.opcode_names or "fusion" in fm.opcode_names
    assert len(instruction_op_names(data)) == module.num_instructions
    if stage == "unoptimized":
        assert fm.opcode_names.count("dot") == 2 and "reshape" in fm.opcode_names


def test_featurize_jax_matches_bytes(tiny_dot_program):
    fn, args = tiny_dot_program
    fm = featurize_jax(fn, *args)
    assert fm.node_feat.shape[1] == 140 and fm.num_nodes == len(fm.node_opcode)
