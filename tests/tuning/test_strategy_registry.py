"""The strategy registry (`strategies.register_strategy`): a strategy registered by name is accepted by
`TuneConfig`'s checks and run by the tuner like a built-in one; ``kernels`` is an ordinary registered strategy."""

from __future__ import annotations

import pytest
from tune_fakes import FakeEvaluator

from graphcost.frontend.programs.flags import FLAG_COLUMNS
from graphcost.tuning import strategies
from graphcost.tuning.space import FlagSpace
from graphcost.tuning.strategies import RandomSearch, make_strategy, register_strategy, strategy_entry, strategy_names
from graphcost.tuning.tuner import TuneConfig, resolve_models, run_strategy


@pytest.fixture()
def registered(monkeypatch):
    """A strategy named ``mine`` (random search that records what its factory was given), unregistered after."""
    monkeypatch.setattr(strategies, "_REGISTRY", dict(strategies._REGISTRY))
    given: dict = {}

    def factory(space, seed, **context):
        given.update(context, seed=seed)
        return RandomSearch(space, seed)

    register_strategy("mine", factory)
    return given


def test_the_built_in_strategies_are_registered_in_order():
    assert strategy_names()[:6] == ("hedged", "model+online", "model", "tpe", "random", "kernels")
    assert [s for s in strategy_names() if strategy_entry(s).graph_model] == ["hedged", "model+online", "model"]
    assert strategy_entry("kernels").model_label == "kernels:shipped"


def test_a_registered_strategy_is_accepted_by_the_config_and_runs_a_round(registered):
    assert "mine" in strategy_names()
    cfg = TuneConfig(strategies=["mine"], space="flags")  # TuneConfig's checks read the registry
    space = FlagSpace(columns=FLAG_COLUMNS[:7])
    assert resolve_models(cfg, space) == ([], None, ["mine"])  # model-free: no graph model wanted
    ev = FakeEvaluator(space)
    trials = run_strategy("mine", space, ev, 2, None, "registry:flags", None, seed=5, round_size=2)
    assert len(trials) == 2 and {t.strategy for t in trials} == {"mine"}
    assert registered["seed"] == 5 and registered["evaluator"] is ev and registered["scorer"] is None
    with pytest.raises(ValueError, match="strategies entry must be one of .*mine, got 'theirs'"):
        TuneConfig(strategies=["theirs"])


def test_kernels_is_built_by_its_factory_from_the_evaluator(monkeypatch):
    from graphcost.tuning import kernel_search

    with pytest.raises(ValueError, match="strategy 'kernels' compiles its candidates"):
        make_strategy("kernels", FlagSpace())
    monkeypatch.setattr(kernel_search, "KernelSearch", lambda space, evaluator, seed: ("built", evaluator, seed))
    assert strategy_entry("kernels").factory is kernel_search.kernel_strategy  # registered like any other
    ev = FakeEvaluator(FlagSpace(columns=FLAG_COLUMNS[:7]))
    assert make_strategy("kernels", ev.space, 3, evaluator=ev) == ("built", ev, 3)
