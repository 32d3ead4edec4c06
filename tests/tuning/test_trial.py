"""The evaluator on real JAX programs: a configuration that fails to compile is recorded, one that
changes the outputs is rejected, good ones are timed against the default."""

from __future__ import annotations

import numpy as np
import pytest

from graphcost.measure.interleaved import TimingProtocol
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import Dim, FlagSpace, Space
from graphcost.tuning.trial import Evaluator, compare_outputs

FAST = TimingProtocol(rounds=2, calls=2, warmup=1)


def _program():
    import jax.numpy as jnp

    def fn(a, b):
        return {"y": jnp.tanh(a @ b), "n": jnp.argmax(a, axis=1)}

    a = jnp.linspace(-1.0, 1.0, 8 * 16).reshape(8, 16)
    return TuneProgram(fn, (a, a.T), "tiny")


class TrickSpace(Space):
    """Code 1 of 'opts' passes an option XLA does not know; code 1 of 'prog' compiles another program."""

    name, kinds = "trick", ()

    def __init__(self):
        super().__init__([Dim("opts", ("none", "bogus", "O1")), Dim("prog", ("same", "other"))])

    def lower(self, program, codes):
        if codes[1] == 1:
            import jax

            def other(*flat):
                out = program.flat_fn(*flat)
                return {"y": out["y"] * 1.01, "n": out["n"]}

            return jax.jit(other).lower(*program.flat_args)
        return program.lower(None)

    def compiler_options(self, codes):
        return {0: {}, 1: {"xla_no_such_option_for_graphcost": 1}, 2: {"xla_backend_optimization_level": 1}}[codes[0]]


def test_crash_and_wrong_output_are_recorded_good_ones_timed():
    ev = Evaluator(_program(), TrickSpace(), FAST)
    trials = ev.evaluate([(1, 0), (0, 1), (2, 0)])
    assert [t.status for t in trials] == ["compile_error", "wrong_output", "ok"]
    assert "xla_no_such_option_for_graphcost" in trials[0].error and "\n" not in trials[0].error
    assert "output ['y']" in trials[1].error and trials[1].ratio is None
    good = trials[2]
    assert good.ratio == pytest.approx(good.runtime_ns / good.default_ns) and good.default_ns > 0


def test_compiled_statistics_of_candidates_nan_where_the_compile_fails():
    """`Evaluator.compiled_stats`: what the compiler did to each candidate (nothing run); a candidate
    that does not compile gets a NaN row instead of an error."""
    from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS

    ev = Evaluator(_program(), TrickSpace(), FAST)
    stats = ev.compiled_stats([(0, 0), (1, 0), (2, 0)])
    assert stats.shape == (3, len(COMPILED_STATS))
    assert np.isfinite(stats[[0, 2]]).all() and np.isnan(stats[1]).all()
    assert stats[0, COMPILED_STATS.index("instructions")] > 0


def test_flag_space_compiles_every_dimension_and_keeps_outputs():
    space = FlagSpace()
    ev = Evaluator(_program(), space, FAST)
    one_each = [tuple(1 if j == i else 0 for j in range(len(space.dims))) for i, d in enumerate(space.dims)
                if len(d.choices) > 1]
    trials = ev.evaluate(one_each)
    assert all(t.status == "ok" for t in trials), [t.error for t in trials]


def test_fast_math_only_when_allowed():
    assert len(FlagSpace().dims[3].choices) == 1 and FlagSpace().dims[3].name == "fast_math"
    assert FlagSpace(allow_fast_math=True).dims[3].choices == (0, 1)


def test_compare_outputs_rule():
    ref = [np.array([1.0, 100.0, np.nan], np.float32), np.array([1, 2])]
    assert compare_outputs([ref[0].copy(), ref[1].copy()], ref, 1e-3, 1e-5) == ""
    assert compare_outputs([np.array([1.0005, 100.05, np.nan], np.float32), ref[1]], ref, 1e-3, 1e-5) == ""
    assert "values differ" in compare_outputs([np.array([1.01, 100.0, np.nan], np.float32), ref[1]], ref, 1e-3, 1e-5)
    assert "values differ" in compare_outputs([np.array([1.0, 100.0, 0.0], np.float32), ref[1]], ref, 1e-3, 1e-5)
    assert "values differ" in compare_outputs([ref[0], np.array([1, 3])], ref, 1e-3, 1e-5)
    assert "float64" in compare_outputs([ref[0].astype(np.float64), ref[1]], ref, 1e-3, 1e-5)
    assert "1 outputs" in compare_outputs([ref[0]], ref, 1e-3, 1e-5)


def test_equal_infinities_and_nans_are_equal_outputs():
    """issue 26: |inf - inf| is NaN; equal infinities (and NaN where the default has NaN) still match."""
    ref = [np.array([-np.inf, 1.0, np.inf, np.nan], np.float32)]
    assert compare_outputs([ref[0].copy()], ref, 1e-3, 1e-5) == ""
    for got in ([-np.inf, 1.0, 3e38, np.nan], [-np.inf, 1.0, -np.inf, np.nan], [np.inf, 1.0, np.inf, np.nan],
                [-np.inf, 1.0, np.nan, np.nan], [-np.inf, np.inf, np.inf, np.nan], [-np.inf, 1.0, np.inf, 0.0]):
        assert "1 of 4 values differ" in compare_outputs([np.array(got, np.float32)], ref, 1e-3, 1e-5), got


def test_a_program_with_log_zero_in_its_output_is_tuned():
    """issue 26: every configuration of a program whose output holds -inf was rejected as wrong_output."""
    import jax.numpy as jnp

    a = jnp.linspace(0.0, 1.0, 32 * 32).reshape(32, 32)  # a[0, 0] == 0: log gives -inf
    ev = Evaluator(TuneProgram(lambda x: jnp.log(x) + jnp.log(x @ x.T).sum(), (a,), "logzero"), FlagSpace(), FAST)
    assert np.isneginf(ev.reference[0]).any()
    trials = ev.evaluate([(1,) + (0,) * (len(ev.space.dims) - 1)])
    assert [t.status for t in trials] == ["ok"], trials[0].error


def _cancelling(args):
    """[(a + b) - b: rounding noise of the size of an ulp of b, well-conditioned 2b, argmax over a near-tie]."""
    a, b = (np.asarray(x, np.float32) for x in args)
    return [(a + b) - b, 2.0 * b, np.array([np.argmax(np.stack([b[0], np.float32(1.0)]))])]


def test_noise_floor_lets_rounding_noise_through_but_not_a_wrong_value():
    """A value that is rounding noise in the default itself (Adam's update of a parameter whose gradient
    is zero in exact arithmetic; here (a + b) - b with a << b) may differ by its noise; a well-conditioned
    value off by 1% still fails, and an integer that a rounding-sized change flips is not compared."""
    from graphcost.tuning.trial import noise_floor

    args = [np.full(4, 1e-6, np.float32), np.ones(4, np.float32)]
    ref = _cancelling(args)
    floor = noise_floor(_cancelling, args, ref)
    assert (floor[0] > 0).all() and (floor[1] < 1e-5).all() and np.isinf(floor[2]).all()
    exact = [np.full(4, 1e-6, np.float32), ref[1], 1 - ref[2]]  # the cancellation done in another order
    assert "values differ" in compare_outputs(exact, ref, 1e-3, 0.0)  # held to rtol, it fails
    assert compare_outputs(exact, ref, 1e-3, 0.0, floor=floor) == ""
    wrong = [ref[0], ref[1] * np.float32(1.01), ref[2]]
    assert "output 1: 4 of 4 values differ" in compare_outputs(wrong, ref, 1e-3, 0.0, floor=floor)


def test_low_precision_outputs_are_compared_to_their_own_resolution():
    """bfloat16 outputs were compared bit for bit (numpy does not know it is a float); now within 2 ulps."""
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    ref = [np.array([1.0, 3.0], bf16)]
    assert compare_outputs([np.array([1.0078125, 3.0], bf16)], ref, 1e-3, 0.0) == ""  # 1 ulp
    assert "1 of 2 values differ" in compare_outputs([np.array([1.0625, 3.0], bf16)], ref, 1e-3, 0.0)
