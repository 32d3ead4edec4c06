"""The default flag prior (`graphcost.tuning.kernel_prior`): additive main effects of the single-option
configurations as the kernel model costs them; no effect for an option that left the executable unchanged, a
slow one for an option that failed to compile; the tuner uses it in the flag space when no model is given."""

from __future__ import annotations

from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np
import pytest

import graphcost.kernels.scoring as kernel_scoring
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.kernel_prior import FAILED_EFFECT, LABEL, KernelEffectsPrior
from graphcost.tuning.learners.effects import single_option_configs
from graphcost.tuning.space import make_space
from graphcost.tuning.trial import Evaluator


def _program():
    a = jnp.linspace(-1.0, 1.0, 32 * 32).reshape(32, 32)
    return TuneProgram(lambda a, b: jnp.tanh(a @ b.T).sum(axis=0), (a, a + 1.0), "tiny")


class FakeCosts:
    """A KernelModelScorer stand-in: seconds from a table, inf where a configuration 'failed'."""

    def __init__(self, seconds: dict):
        self.seconds, self.compiled = seconds, []

    def compile(self, batch):
        self.compiled += list(batch)

    def __call__(self, configs):
        return np.array([self.seconds.get(tuple(c), 1.0) for c in configs])


def test_scores_are_the_sum_of_single_option_effects(monkeypatch):
    space = make_space("flags", _program())
    d = space.default()
    singles = single_option_configs(space)
    a, b, broken, same = singles[0], singles[-1], singles[1], singles[2]
    costs = FakeCosts({d: 2.0, a: 1.0, b: 4.0, broken: np.inf, same: 0.5})
    monkeypatch.setattr(kernel_scoring, "KernelModelScorer", lambda *args: costs)
    fingerprints = {d: "x", same: "x", a: "y"}  # `same` compiled to the default's executable
    prior = KernelEffectsPrior(space, SimpleNamespace(program=None, fingerprints=fingerprints, executables=None))
    assert set(costs.compiled) == set(singles) and prior.unscored == 0 and prior.compiled == len(singles) + 1
    both = tuple(x or y for x, y in zip(a, b))  # a's option and b's option together
    scores = prior([d, a, b, broken, same, both])
    assert scores == pytest.approx([0.0, np.log(0.5), np.log(2.0), FAILED_EFFECT, 0.0, np.log(0.5) + np.log(2.0)])
    assert prior.reads_compiled is False


def test_options_left_when_time_runs_out_have_no_effect(monkeypatch):
    space = make_space("flags", _program())
    costs = FakeCosts({single_option_configs(space)[-1]: 9.0})
    monkeypatch.setattr(kernel_scoring, "KernelModelScorer", lambda *args: costs)
    prior = KernelEffectsPrior(space, SimpleNamespace(program=None, fingerprints={}, executables=None), seconds=0.0,
                               chunk=4)
    assert len(costs.compiled) == 4 and prior.unscored == len(single_option_configs(space)) - 4
    assert prior([single_option_configs(space)[-1]]) == pytest.approx([0.0])  # never costed: no effect


def test_a_real_program_gets_finite_scores_from_its_compiles(tmp_path):
    program = _program()
    space = make_space("flags", program)
    evaluator = Evaluator(program, space, cache_dir=tmp_path / "cache")
    prior = KernelEffectsPrior(space, evaluator)
    singles = single_option_configs(space)
    assert all(c in evaluator.fingerprints for c in singles)  # compiled once here: the inert probe reuses them
    rng = np.random.default_rng(0)
    scores = prior([space.default()] + [space.sample(rng) for _ in range(8)])
    assert scores.shape == (9,) and np.isfinite(scores).all() and scores[0] == 0.0
    same = [c for c in singles if evaluator.fingerprints[c] == evaluator.fingerprints[space.default()]]
    assert same and prior(same) == pytest.approx(np.zeros(len(same)))


def test_the_default_flag_prior_is_the_kernel_effects_and_layouts_keep_the_graph_model():
    from graphcost.tuning.tuner import TuneConfig, resolve_models

    program = _program()
    assert resolve_models(TuneConfig(), make_space("flags", program)) == ([], LABEL, ["hedged"])
    runs, label, _ = resolve_models(TuneConfig(), make_space("layout", program))
    assert runs and label == "shipped"
    runs, label, _ = resolve_models(TuneConfig(learner="finetune"), make_space("flags", program))
    assert runs and label == "shipped"  # fine-tuning needs a graph model


def test_a_damaged_kernel_model_falls_back_to_the_shipped_flag_model(monkeypatch, caplog):
    import graphcost.kernels.model as kernel_model
    from graphcost.tuning.tuner import TuneConfig, plan_search

    def damaged(*args, **kwargs):
        raise kernel_model.KernelModelError("kernel_model.json: sum rule a: 1e+300 is out of range")

    monkeypatch.setattr(kernel_model.KernelCostModel, "load", damaged)
    plan = plan_search(_program(), TuneConfig())
    assert plan.model_label == "shipped" and plan.runs and plan.kernel_model is None
    assert "the shipped flag model guides the search instead" in caplog.text
