"""Layout configurations: real constraints change the compiled HLO; sampling and features."""

import numpy as np

from graphcost.frontend.jax_program import optimized_hlo_bytes, unoptimized_hlo_bytes
from graphcost.frontend.hlo_proto import parse_hlo_module
from graphcost.frontend.layouts import (LayoutProgram, Site, config_features, default_config,
                                        default_perm, sample_configs)


def _layouts(data: bytes) -> list:
    module = parse_hlo_module(data)
    return [tuple(i.shape.layout.minor_to_major) for c in module.computations for i in c.instructions
            if i.shape.layout is not None and len(i.shape.dimensions) == 2]


def test_sites_found_and_mapped(tiny_dot_program):
    fn, args = tiny_dot_program
    lp = LayoutProgram(fn, args)
    assert [s.primitive for s in lp.sites] == ["dot_general", "dot_general", "reshape"]
    assert lp.sites[0].ranks == (2, 2, 2) and lp.sites[2].ranks == (2, 2, 0)
    ids = lp.site_instruction_ids(unoptimized_hlo_bytes(lp.lowered(None)))
    assert all(i is not None for i in ids) and len(set(ids)) == 3


def test_layout_constraint_changes_hlo_and_keeps_result(tiny_dot_program):
    fn, args = tiny_dot_program
    lp = LayoutProgram(fn, args)
    base = default_config(lp.sites)
    col_major = [((0, 1), None, None), (None, None, None), (None, None, None)]
    exe_default = lp.lowered(base).compile()
    exe_cfg = lp.lowered(col_major).compile()
    # the default configuration is the unconstrained program; the constrained one materialises
    # more {0,1} (column-major) arrays (XLA may already use {0,1} for the transpose of w)
    default_layouts = _layouts(optimized_hlo_bytes(exe_default))
    cfg_layouts = _layouts(optimized_hlo_bytes(exe_cfg))
    assert cfg_layouts.count((0, 1)) > default_layouts.count((0, 1))
    assert optimized_hlo_bytes(exe_cfg) != optimized_hlo_bytes(exe_default)
    assert "LayoutConstraint" in lp.lowered(col_major).as_text(dialect="hlo")
    np.testing.assert_allclose(exe_cfg(*lp.flat_args)[0], fn(*args), rtol=1e-5)


def test_sample_configs_modes_and_features():
    sites = [Site(0, "dot_general", (2, 2, 2)), Site(1, "conv_general_dilated", (4, 4, 4)), Site(2, "reshape", (3, 2, 0))]
    rnd = sample_configs(sites, 10, "random", seed=3)
    assert len(rnd) == 10 and len({tuple(c) for c in rnd}) == 10
    assert rnd == sample_configs(sites, 10, "random", seed=3)  # deterministic
    dft = sample_configs(sites, 6, "default", seed=0)
    assert dft[0] == default_config(sites)
    for cfg in dft[1:]:
        changed = sum(p != d for c, b in zip(cfg, dft[0]) for p, d in zip(c, b))
        assert 1 <= changed <= 3
    feat = config_features(dft)
    assert feat.shape == (6, 3, 18)
    np.testing.assert_array_equal(feat[0, 1, :6], [3, 2, 1, 0, -1, -1])
    np.testing.assert_array_equal(feat[0, 2, 12:], -1)  # reshape has no operand 1
    assert set(np.unique(feat)) <= set(range(-1, 6))
    assert default_perm(3) == (2, 1, 0)
