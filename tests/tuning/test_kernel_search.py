"""The ``kernels`` strategy: compiled candidates costed by the shipped kernel model, corrected on profiled trials."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from graphcost.measure.interleaved import TimingProtocol
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import make_space
from graphcost.tuning.trial import Evaluator


def _program():
    a = jnp.linspace(-1.0, 1.0, 32 * 32).reshape(32, 32)
    return TuneProgram(lambda a, b: jnp.tanh(a @ b).sum(axis=0), (a, a.T), "tiny")


def test_pool_is_compiled_costed_and_learns_from_profiled_trials():
    from graphcost.tuning.kernel_search import KernelSearch

    program = _program()
    space = make_space("flags", program)
    evaluator = Evaluator(program, space, TimingProtocol(rounds=1, calls=2, warmup=1), profile_kernels=True)
    search = KernelSearch(space, evaluator, seed=0, pool=8, grow=2)
    info = search.describe()
    assert info["costed"] >= 6 and 1 <= info["distinct_modules"] <= info["costed"]
    assert np.isfinite([search.cost(c) for c, k in search.scorer.costed.items() if k]).all()
    first = search.propose([], 4)
    assert len(first) == 4 and len(set(first)) == 4 and space.default() not in first
    trials = evaluator.evaluate(first)
    measured = [t for t in trials if t.status == "ok"]
    assert measured and all(t.extra["kernels"] for t in measured)  # profiled trials
    assert search.observe(trials) == len(measured) and search.learner.observations > 0
    again = search.propose(trials, 2)
    assert len(again) == 2 and not set(again) & {t.codes for t in trials}


def test_tune_with_the_kernels_strategy(tmp_path):
    import graphcost

    program = _program()
    result = graphcost.tune(program.fn, *program.args, space="flags", budget=4, strategies=["kernels"], processes=1,
                            protocol=TimingProtocol(rounds=1, calls=1, warmup=1), progress=False, ablation=False)
    assert len(result.trials) == 4 and {t.strategy for t in result.trials} == {"kernels"}
    assert result.model == "kernels:shipped" and result.kernels["default"]["top"]


def test_one_candidate_per_executable_and_none_of_the_defaults():
    """Configurations that compile to one executable are proposed once, and never the default's executable
    (the evaluator would only copy those timings: 7 of 16 trials on the suite's SSM before)."""
    from graphcost.tuning.kernel_search import KernelSearch

    program = _program()
    space = make_space("flags", program)
    evaluator = Evaluator(program, space, TimingProtocol(rounds=1, calls=1, warmup=1))
    search = KernelSearch(space, evaluator, seed=0, pool=8, grow=0)
    pool = [c for c, k in search.scorer.costed.items() if k]
    evaluator.fingerprints = {space.default(): "d", **{c: "ab"[i % 2] for i, c in enumerate(pool)}}
    evaluator.fingerprints[pool[0]] = "d"  # the default's executable
    chosen = search.propose([], 4)
    known = [evaluator.fingerprints[c] for c in chosen if c in evaluator.fingerprints]
    assert len(chosen) == 4 and pool[0] not in chosen  # the pool was refilled with new candidates
    assert "d" not in known and len(set(known)) == len(known) <= 2  # one per executable
