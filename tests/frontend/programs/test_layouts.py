"""Layout configurations: real constraints change the compiled HLO; sampling and features."""

import numpy as np

from graphcost.frontend.programs.jax_program import optimized_hlo_bytes, unoptimized_hlo_bytes
from graphcost.frontend.hlo.hlo_proto import parse_hlo_module
from graphcost.frontend.programs.layouts import (LayoutProgram, Site, config_features, default_config,
                                        default_perm, moved_tensors, sample_configs, sample_mixed_configs)


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


def test_mixed_configs_cover_both_modes_with_equal_moved_counts():
    sites = [Site(0, "dot_general", (2, 2, 2)), Site(1, "conv_general_dilated", (4, 4, 4)), Site(2, "reshape", (3, 2, 0))]
    configs, modes = sample_mixed_configs(sites, 40, seed=1)
    assert len(configs) == 40 and len({tuple(c) for c in configs}) == 40
    assert modes[:20] == ["default"] * 20 and modes[20:] == ["random"] * 20
    assert configs[0] == default_config(sites) and (configs, modes) == sample_mixed_configs(sites, 40, seed=1)
    moved = moved_tensors(config_features(configs))
    assert moved[0] == 0 and all(1 <= m <= 3 for m in moved[1:20])
    counts = np.bincount(moved[20:])
    assert (counts >= 2).sum() >= 4  # several random configurations move the SAME number of tensors
    # a small space: the levels with nothing new left are skipped, the rest still fill the request
    small = [Site(0, "dot_general", (2, 2, 0))]
    configs, modes = sample_mixed_configs(small, 4, seed=0)
    assert len(configs) == 4 and len({tuple(c) for c in configs}) == 4


def test_moved_tensors_counts_slots_off_the_row_major_default():
    feat = np.full((2, 2, 18), -1.0, np.float32)
    feat[:, 0, 0:2], feat[:, 0, 6:8] = (1, 0), (1, 0)  # node 0: output and operand 0 default (rank 2)
    feat[:, 1, 0:3] = (2, 1, 0)  # node 1: output default (rank 3)
    feat[1, 0, 6:8] = (0, 1)  # configuration 1: operand 0 of node 0 transposed
    feat[1, 1, 0:3] = (0, 2, 1)  # ... and node 1's output permuted
    assert moved_tensors(feat).tolist() == [0, 2]
