"""The graph cost model inside the tuner: tiny TGraph runs (trained for 1 epoch on SYNTHETIC
collections) score flag and layout candidates of a real JAX program; model, model+online with
trees and with fine-tuning spend the budget exactly; the end-to-end API returns a result."""

from __future__ import annotations

import numpy as np
import pytest
from tune_fakes import FakeEvaluator
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.synth.collection import write_synthetic_collection
from graphcost.frontend.measure.interleaved import Protocol
from graphcost.tuning.scoring import FineTunedModel, GraphModelScorer
from graphcost.tuning.space import TuneProgram, make_space
from graphcost.tuning.tuner import run_strategy

TINY = ["--model", "tgraph", "--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "layout_dim=2",
        "--model-opt", "num_blocks=1", "--epochs", "1", "--batch-configs", "8", "--no-progress", "--device", "cpu"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    out = {}
    for collection, kind in (("layout:xla:random", "layout"), ("tile:xla", "tile")):
        write_synthetic_collection(root, collection, num_graphs=3, seed=0, split_fractions=(0.34, 0.33, 0.33),
                                   max_nodes=20, max_configs=16, progress=False)
        run = root / f"run-{kind}"
        res = CliRunner().invoke(app, ["train", "--collection", collection, "--data-dir", str(root), *TINY,
                                       "--out", str(run)])
        assert res.exit_code == 0, res.output
        out[kind] = run
    return out


def _program():
    import jax.numpy as jnp

    a = jnp.linspace(-1.0, 1.0, 8 * 16 * 4).reshape(8, 16, 4)
    return TuneProgram(lambda a, b: jnp.tanh(jnp.einsum("ijk,kl->ijl", a, b)).reshape(8, -1), (a, a[0, :4].T), "p")


@pytest.mark.parametrize("space_name", ["flags", "layout", "both"])
def test_scorer_scores_every_candidate(runs, space_name):
    program = _program()
    space = make_space(space_name, program)
    scorer = GraphModelScorer([runs[k] for k in space.kinds], program, space)
    rng = np.random.default_rng(0)
    configs = [space.default()] + [space.sample(rng) for _ in range(20)]
    scores = scorer(configs)
    assert scores.shape == (21,) and np.isfinite(scores).all() and np.ptp(scores) > 0


def test_wrong_kind_of_model_is_refused(runs):
    program = _program()
    with pytest.raises(ValueError, match="a layout model cannot score the flags space"):
        GraphModelScorer([runs["layout"]], program, make_space("flags", program))


@pytest.mark.parametrize("strategy, learner", [("model", "tree"), ("model+online", "tree"), ("model+online", "finetune")])
def test_model_strategies_with_a_real_graph_model(runs, strategy, learner):
    program = _program()
    space = make_space("layout", program)
    scorer = GraphModelScorer([runs["layout"]], program, space)
    ev = FakeEvaluator(space)
    trials = run_strategy(strategy, space, ev, 10, None, "p:layout", scorer, seed=0, round_size=4, learner=learner,
                          pool_kwargs={"initial": 64, "generations": 1, "elite": 8, "children": 32})
    assert len(trials) == 10 == len(set(ev.measured))


def test_finetuning_learns_the_measured_order(runs):
    program = _program()
    space = make_space("layout", program)
    scorer = GraphModelScorer([runs["layout"]], program, space)
    truth = FakeEvaluator(space)
    rng = np.random.default_rng(1)
    codes = list(dict.fromkeys(space.sample(rng) for _ in range(24)))
    ratio = np.array([truth.ratio(c) for c in codes])
    model = FineTunedModel(scorer, lr=3e-3)
    model.steps = lambda n: 40  # a short run is enough to learn 24 configurations' order
    assert model.fit(codes, scorer(codes), ratio)
    from scipy.stats import kendalltau

    before = kendalltau(scorer(codes), ratio).statistic
    after = kendalltau(model.predict(codes, scorer(codes)), ratio).statistic
    assert after > max(before, 0.3)


def test_tune_api_end_to_end(runs, tmp_path):
    import graphcost

    program = _program()
    result = graphcost.tune(program.fn, *program.args, space="flags", budget=3, model=runs["tile"],
                            strategies=["model"], out=tmp_path / "o", processes=1,
                            protocol=Protocol(rounds=1, calls=1, warmup=1), progress=False)
    assert len(result.trials) == 3 and (tmp_path / "o" / "best.json").is_file()
    assert result.speedup >= 1.0 and (result.beats_default or result.best.is_default)
    out = graphcost.compile_with(program.fn, result.best)(*program.args)
    np.testing.assert_allclose(np.asarray(out), np.asarray(program.fn(*program.args)), rtol=1e-3, atol=1e-5)
