"""KernelModelScorer: configurations of any space costed through their compiled kernels by the shipped kernel model,
given the evaluator's executables and the space's flag vectors."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from graphcost.frontend.programs.flags import default_flag_vector
from graphcost.kernels.scoring import KernelModelScorer
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import make_space
from graphcost.tuning.trial import Evaluator


def _program():
    a = jnp.linspace(-1.0, 1.0, 32 * 32).reshape(32, 32)
    return TuneProgram(lambda a, b: jnp.tanh(a @ b.T).sum(axis=0), (a, a + 1.0), "tiny")


@pytest.mark.parametrize("space_name", ["flags", "layout", "both"])
def test_costs_are_finite_cached_and_per_configuration(space_name):
    program = _program()
    space = make_space(space_name, program)
    evaluator = Evaluator(program, space)
    calls = []
    compile_many = evaluator.compile_many
    evaluator.compile_many = lambda batch: calls.append(len(batch)) or compile_many(batch)
    scorer = KernelModelScorer(evaluator.executables, space.flag_vector)
    rng = np.random.default_rng(0)
    configs = [space.default()] + [space.sample(rng) for _ in range(4)]
    seconds = scorer(configs)
    assert seconds.shape == (len(configs),) and np.isfinite(seconds).all() and (seconds > 0).all()
    assert calls == [len(set(configs))]
    again = scorer(configs[::-1])  # nothing compiled twice, the same costs
    assert calls == [len(set(configs))] and np.array_equal(again, seconds[::-1])
    assert 1 <= scorer.distinct_modules <= len(set(configs))
    kernels = scorer.kernels(configs[0])
    assert kernels and all(len(k) == 4 and k[3] >= 0 for k in kernels)
    if space_name == "layout":  # a layout-only space: the kernels run under the default flags
        assert np.array_equal(scorer.flags(configs[1]), default_flag_vector())


def test_a_configuration_that_fails_to_compile_costs_inf():
    from graphcost.tuning.trial import Trial

    program = _program()
    space = make_space("flags", program)
    evaluator = Evaluator(program, space)
    scorer = KernelModelScorer(evaluator.executables, space.flag_vector)
    bad = space.sample(np.random.default_rng(1))
    evaluator.compile_many = lambda batch: [Trial(c, "compile_error", error="boom") if c == bad
                                            else Evaluator.compile_many(evaluator, [c])[0] for c in batch]
    seconds = scorer([space.default(), bad])
    assert np.isfinite(seconds[0]) and seconds[1] == np.inf and scorer.kernels(bad) is None
