"""Racing (issue 34, item 2): the best configurations so far are timed again with every round and after
the last; they use no budget, are stored, and a configuration's in-search ratio is the geometric mean
of its timings."""

from __future__ import annotations

import numpy as np
import pytest
from tune_fakes import FakeEvaluator, fake_scorer

from graphcost.measure.interleaved import TimingProtocol
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import FlagSpace
from graphcost.tuning.study import Study
from graphcost.tuning.trial import OK, RETIMED, Evaluator, Trial, pooled_ratio
from graphcost.tuning.tuner import contenders, run_strategy


def _run(ev, budget, race, storage=None, strategy="random"):
    return run_strategy(strategy, ev.space, ev, budget, storage, "prog:flags", scorer=fake_scorer(ev), seed=0,
                        round_size=4, race=race)


def test_racing_uses_no_budget_and_pools_the_timings(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    ev = FakeEvaluator(FlagSpace(), noise=0.1)
    trials = _run(ev, 12, race=2, storage=url)
    assert len(trials) == 12 == len(ev.measured) == len(set(ev.measured))  # the budget: new configurations only
    assert ev.retimed and set(ev.retimed) <= set(ev.measured)  # only measured configurations are raced
    raced = [t for t in trials if "ratios" in t.extra]
    assert raced
    for t in raced:  # the in-search ratio is the geometric mean of every timing of the configuration
        assert len(t.extra["ratios"]) == 1 + ev.retimed.count(t.codes)
        assert t.ratio == pytest.approx(float(np.exp(np.mean(np.log(t.extra["ratios"])))))
    # after the last round, the contenders have more than one timing each (the closing race)
    best = sorted((t for t in trials if t.ratio < 1.0), key=lambda t: t.ratio)[:2]
    assert all(len(t.extra.get("ratios", ())) > 1 for t in best)
    # the re-timings are in the storage: a reader of the study sees the same estimates, no new trials
    again = Study(url, "prog:flags:random", ev.space).trials()
    assert [(t.codes, t.ratio) for t in again] == [(t.codes, t.ratio) for t in trials]
    assert len(Study(url, "prog:flags:random", ev.space).used()) == 12


def test_race_zero_times_nothing_twice():
    ev = FakeEvaluator(FlagSpace(), noise=0.1)
    trials = _run(ev, 8, race=0)
    assert not ev.retimed and not any("ratios" in t.extra for t in trials)


def test_racing_brings_the_best_estimate_closer_to_the_truth():
    """With noisy timings, the best in-search figure of a search that races overstates the true speedup
    of that configuration by less than the best single timing does (the winner's curse)."""
    over = {0: [], 3: []}
    for seed in range(12):
        for race in over:
            ev = FakeEvaluator(FlagSpace(), noise=0.15, seed=seed)
            trials = _run(ev, 16, race=race, strategy="random")
            best = min((t for t in trials if t.status == OK), key=lambda t: t.ratio)
            over[race].append(np.log(ev.ratio(best.codes) / best.ratio))  # > 0: in search looked faster than it is
    assert np.mean(over[3]) < np.mean(over[0]) - 0.02


def test_contenders_are_the_best_that_beat_the_default():
    trials = [Trial((i,), OK, ratio=r) for i, r in enumerate([0.9, 1.1, 0.8, 0.95, 0.7])]
    trials.append(Trial((9,), "compile_error"))
    assert contenders(trials, 2, exclude=[]) == [(4,), (2,)]
    assert contenders(trials, 2, exclude=[(4,)]) == [(2,), (0,)]
    trials[4].extra["ratios"] = [0.7, 0.7]
    trials[2].extra["ratios"] = [0.8, 0.8]
    assert contenders(trials, 2, exclude=[], once=True) == []  # each was already timed more than once


def test_pooled_ratio_is_the_geometric_mean():
    assert pooled_ratio([0.5, 2.0]) == pytest.approx(1.0)
    assert pooled_ratio([0.9]) == pytest.approx(0.9)


def test_the_evaluator_times_held_configurations_again_without_compiling(monkeypatch):
    import jax.numpy as jnp

    a = jnp.linspace(-1.0, 1.0, 16 * 16).reshape(16, 16)
    program = TuneProgram(lambda a, b: jnp.tanh(a @ b), (a, a.T), "tiny")
    space = FlagSpace()
    ev = Evaluator(program, space, TimingProtocol(rounds=2, calls=2, warmup=1))
    one = (1,) + (0,) * (len(space.dims) - 1)  # O0 (code 1 of the optimisation level)
    first = ev.evaluate([one])
    assert first[0].status == OK and one in ev.checked
    compiled = []
    monkeypatch.setattr(ev, "compile", lambda codes: compiled.append(codes) or pytest.fail("compiled again"))
    again = ev.evaluate([], [one])
    assert not compiled and [t.status for t in again] == [RETIMED] and again[0].ratio > 0
