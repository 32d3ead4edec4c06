"""Replay (benchmarks/tune/tune_replay.py, for bench_tune): strategies restricted to a measured pool never ask
for an unmeasured configuration."""

from __future__ import annotations

import numpy as np
import pytest
from tune_fakes import FakeEvaluator, fake_scorer
from tune_replay import PoolSpace, ReplayEvaluator, best_known

from graphcost.frontend.programs.flags import FLAG_COLUMNS
from graphcost.tuning.space import FlagSpace
from graphcost.tuning.strategies import strategy_names
from graphcost.tuning.tuner import run_strategy


@pytest.mark.parametrize("strategy", [s for s in strategy_names() if s != "kernels"])  # it compiles
def test_replay_stays_in_the_pool_and_spends_the_budget(strategy):
    base = FlagSpace()
    rng = np.random.default_rng(0)
    pool = list(dict.fromkeys(base.sample(rng) for _ in range(60)))
    pool = [c for c in pool if c != base.default()][:40]
    truth = FakeEvaluator(base)
    table = {t.codes: t for t in truth.evaluate(pool)}
    space = PoolSpace(base, pool)
    ev = ReplayEvaluator(space, table)
    trials = run_strategy(strategy, space, ev, 20, None, "p:flags", scorer=fake_scorer(truth, 0.1), seed=0)
    assert len(trials) == 20 == ev.asked
    assert len({t.codes for t in trials}) == 20 and all(t.codes in table for t in trials)
    assert best_known(table) >= max(1.0, 1.0 / min(t.ratio for t in trials))


def test_pool_space_moves_inside_the_pool():
    base = FlagSpace(columns=FLAG_COLUMNS[:7])  # the 7 columns of the tables measured before issue 25
    pad = (0,) * (len(base.dims) - 7)
    pool = [(1, 0, 0, 0, 0, 0, 0) + pad, (2, 0, 0, 0, 0, 0, 0) + pad, (3, 1, 1, 0, 1, 2, 1) + pad]
    space = PoolSpace(base, pool)
    rng = np.random.default_rng(0)
    assert space.size() == 4 and space.enumerate()[0] == base.default()
    for _ in range(20):
        assert space.sample(rng) in pool
        assert space.mutate(pool[0], rng) in space.enumerate()
    assert space.snap((3, 1, 1, 0, 1, 2, 0) + pad, exclude=set()) == pool[2]
    assert space.snap(base.default(), exclude=set(space.enumerate())) is None
    with pytest.raises(KeyError, match="was not measured"):
        ReplayEvaluator(space, {}).evaluate([pool[0]])
