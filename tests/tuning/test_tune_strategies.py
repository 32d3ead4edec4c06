"""Strategies: the budget is exact, failures are recorded and skipped, a killed study resumes
without re-measuring anything (fake evaluator: no compilation, no timing)."""

from __future__ import annotations

import pytest
from tune_fakes import FakeEvaluator, fake_scorer

from graphcost.tuning.space import FlagSpace
from graphcost.tuning.strategies import STRATEGIES, diverse_top
from graphcost.tuning.study import Study
from graphcost.tuning.tuner import run_strategy


def _run(strategy, ev, budget, storage=None, name="prog:flags", round_size=4, noise=0.3):
    return run_strategy(strategy, ev.space, ev, budget, storage, name, scorer=fake_scorer(ev, noise), seed=0,
                        round_size=round_size)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("budget", [1, 7, 12])
def test_budget_is_exact_and_configs_are_new(strategy, budget):
    ev = FakeEvaluator(FlagSpace())
    trials = _run(strategy, ev, budget)
    assert len(trials) == budget == len(ev.measured)
    assert len(set(ev.measured)) == budget  # nothing measured twice
    assert FlagSpace().default() not in ev.measured  # the default is the reference, never a trial
    assert [t.number for t in trials] == list(range(budget))


def test_failed_configuration_is_recorded_counted_and_skipped(tmp_path):
    space = FlagSpace()
    first = FakeEvaluator(space)
    order = [t.codes for t in _run("random", first, 6)]
    ev = FakeEvaluator(space, crash={order[1], order[4]})
    trials = _run("random", ev, 6, storage=f"sqlite:///{tmp_path / 's.db'}")
    assert [t.status for t in trials].count("compile_error") == 2
    assert trials[1].status == "compile_error" and "boom" in trials[1].error and trials[1].ratio is None
    stored = Study(f"sqlite:///{tmp_path / 's.db'}", "prog:flags:random", space).trials()
    assert [t.status for t in stored] == [t.status for t in trials]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_killed_study_resumes_without_remeasuring(tmp_path, strategy):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    space = FlagSpace()
    ev = FakeEvaluator(space, stop_after=2)  # killed while measuring the third round
    with pytest.raises(KeyboardInterrupt):
        _run(strategy, ev, 12, storage=url)
    done = list(ev.measured)
    assert len(done) == 8
    ev2 = FakeEvaluator(space)
    trials = _run(strategy, ev2, 12, storage=url)
    assert len(trials) == 12 and len(ev2.measured) == 4
    assert not set(ev2.measured) & set(done)  # the finished rounds were not measured again
    assert [t.codes for t in trials[:8]] == done


def test_study_refuses_another_space(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    ev = FakeEvaluator(FlagSpace())
    _run("random", ev, 2, storage=url)
    with pytest.raises(ValueError, match="another program or space"):
        Study(url, "prog:flags:random", FlagSpace(allow_fast_math=True))


def test_model_strategies_find_the_best_with_an_informative_model():
    """With a good cost model, model search reaches the optimum far sooner than random search."""
    space = FlagSpace()
    best = {}
    for strategy in ("model", "model+online", "random"):
        ev = FakeEvaluator(space)
        trials = _run(strategy, ev, 8, noise=0.02)
        best[strategy] = min(t.ratio for t in trials)
    true_best = min(FakeEvaluator(space).ratio(c) for c in space.enumerate())
    assert best["model"] == pytest.approx(true_best, rel=0.02)
    assert best["model+online"] <= best["random"]


def test_diverse_top_keeps_distance_then_relaxes():
    pool = [(0, 0, 1), (0, 0, 2), (1, 1, 1), (0, 1, 1)]
    assert diverse_top([0, 1, 2, 3], pool, 2, exclude=set()) == [(0, 0, 1), (1, 1, 1)]
    assert diverse_top([0, 1, 2, 3], pool, 4, exclude={(1, 1, 1)}) == [(0, 0, 1), (0, 0, 2), (0, 1, 1)]
