"""The training budget follows the data (batches per graph from its configurations) and early
stopping keeps the best validation epoch (issue 24)."""

import numpy as np
import pytest

from graphcost.runs.checkpoint import load_checkpoint
from graphcost.train.trainer import TrainConfig, epoch_order, graph_steps
from train_stubs import StopTraining, build_tiny, make_layout_graph, stub_trainer


def _config(**kw) -> TrainConfig:
    base = dict(model="tiny", model_config={"hidden": 8}, epochs=3, batch_configs=16, lr=3e-3, seed=7,
                device="cpu", eval_batch=64, progress=False, plots=False)
    base.update(kw)
    return TrainConfig(**base)


def test_graph_steps_follow_the_configurations():
    # ceil(K / B), capped, at least one batch a graph
    assert graph_steps([64, 65, 1, 5000], 64, max_steps_per_graph=8).tolist() == [1, 2, 1, 8]
    assert graph_steps([5000], 64, max_steps_per_graph=0).tolist() == [79]  # 0: no cap
    # a small epoch makes whole passes until it has min_epoch_steps steps
    assert graph_steps([300], 64, 8, min_epoch_steps=32).tolist() == [35]  # 5 batches x 7 passes
    assert graph_steps([64] * 36, 64, 8, min_epoch_steps=32).tolist() == [1] * 36  # already enough
    with pytest.raises(ValueError, match="batch_configs"):
        graph_steps([10], 0)


def test_epoch_order_repeats_each_graph_by_its_steps():
    order = epoch_order(np.array([1, 3, 2]), seed=0, epoch=4)
    assert sorted(order.tolist()) == [0, 1, 1, 1, 2, 2]
    assert epoch_order(np.array([1, 3, 2]), 0, 4).tolist() == order.tolist()  # drawn from (seed, epoch) only
    # one batch per graph: the same permutation as before the budget followed the data
    np.testing.assert_array_equal(epoch_order(np.ones(7, dtype=np.int64), 3, 1), epoch_order(7, 3, 1))


def test_a_one_graph_dataset_gets_many_steps_an_epoch(tmp_path):
    graph = make_layout_graph("big", seed=1, n_configs=400)
    valid = make_layout_graph("big-valid", seed=1, n_configs=100)
    seen = []
    trainer_cls = stub_trainer(build_model=build_tiny,
                               sample=lambda g, b, rng: (seen.append(g.name), rng.permutation(g.num_configs)[:b])[1])
    trainer = trainer_cls(_config(epochs=1, min_epoch_steps=1), [graph], [valid], tmp_path / "run")
    assert trainer.steps_per_epoch == 8  # min(ceil(400 / 16), 8) batches, not one step a graph
    result = trainer.fit()
    assert len(seen) == 8 and result.history[0]["steps"] == 8
    assert result.history[0]["configs_per_s"] > 0


def test_early_stopping_keeps_the_best_validation_epoch(tmp_path, layout_graphs, tiny_trainer):
    scores = iter([0.1, 0.5, 0.3, 0.2, 0.4, 0.9, 0.9])  # best at epoch 2, then 3 epochs without a better one

    class Scripted(tiny_trainer):
        def evaluate(self):
            report = super().evaluate()
            report.rows = [dict(r, kendall_tau=next(scores)) for r in report.rows[:1]]
            return report

    trainer = Scripted(_config(epochs=7, patience=3), layout_graphs[:4], layout_graphs[4:], tmp_path / "run")
    result = trainer.fit()
    assert [r["epoch"] for r in result.history] == [1, 2, 3, 4, 5]  # stopped: 3 epochs after epoch 2
    assert trainer.best_epoch == 2 and result.best_score == pytest.approx(0.5)
    best = load_checkpoint(result.best_path)
    assert best["epoch"] == 2 and best["score"] == pytest.approx(0.5)


def test_early_stop_survives_a_resume(tmp_path, layout_graphs, tiny_trainer):
    """A run killed after it decided to stop resumes to the same place (best_epoch is checkpointed)."""
    config = _config(epochs=12, patience=2, lr=1e-30)  # below float32 resolution: validation never improves after epoch 1

    full = tiny_trainer(config, layout_graphs[:4], layout_graphs[4:], tmp_path / "full").fit()
    assert len(full.history) == 3

    def kill(trainer, epoch, step):
        if epoch == 2 and step == 1:
            raise StopTraining

    with pytest.raises(StopTraining):
        tiny_trainer(config, layout_graphs[:4], layout_graphs[4:], tmp_path / "killed").fit(step_callback=kill)
    resumed = tiny_trainer(config, layout_graphs[:4], layout_graphs[4:], tmp_path / "killed").fit(resume=True)
    assert [r["epoch"] for r in resumed.history] == [1, 2, 3]


def test_cli_trains_one_program_split_by_configuration(tmp_path):
    """SYNTHETIC data: one graph with 2,000 configurations, split by configuration; `graphcost train`
    with no budget flags gives it many steps an epoch and a model that ranks held-out configurations."""
    import csv
    import json

    from train_stubs import run_cli

    run_cli("data", "synth", "--collection", "layout:xla:random", "--out", tmp_path / "syn", "--graphs", "1",
            "--min-configs", "2000", "--max-configs", "2000", "--min-nodes", "30", "--max-nodes", "40")
    graph = next((tmp_path / "syn").rglob("*.npz"))
    run_cli("data", "split-configs", graph, "--out", tmp_path / "one", "--train", "0.1", "--valid", "0.05")
    out = run_cli("train", "--data-dir", tmp_path / "one", "--out", tmp_path / "run", "--epochs", "2",
                  "--model-opt", "hidden=16", "--no-progress", "--device", "cpu")
    assert "budget: up to 2 epochs x 32 steps" in out  # 200 configurations: 2 batches x 16 passes, not 1 step
    rows = list(csv.DictReader(open(tmp_path / "run" / "metrics.csv")))
    assert [int(r["steps"]) for r in rows] == [32, 32]
    report = tmp_path / "eval.json"
    run_cli("evaluate", tmp_path / "run", "--json", report, "--tta", "0", "--device", "cpu")
    data = json.loads(report.read_text())
    assert data["split"] == "test" and data["aggregate"]["n_configs"] == 1700
    assert data["aggregate"]["kendall_tau"] > 0.3
