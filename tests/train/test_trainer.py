"""Trainer: outputs of a run, determinism, and kill-then-resume == uninterrupted run."""

import csv

import pytest
import torch

from graphcost.runs.checkpoint import load_checkpoint
from graphcost.train.trainer import TrainConfig, Trainer
from train_stubs import StopTraining

TIMING = ("train_seconds", "configs_per_s")


def _config(**kw) -> TrainConfig:
    base = dict(model="tiny", model_config={"hidden": 8}, epochs=3, batch_configs=16, lr=3e-3, seed=7,
                device="cpu", eval_batch=16, progress=False, plots=False)
    base.update(kw)
    return TrainConfig(**base)


def _fit(graphs, out, tiny_trainer, config=None, **fit_kw):
    trainer = tiny_trainer(config or _config(), graphs[:4], graphs[4:], out)
    result = trainer.fit(**fit_kw)
    return trainer, result


def _metrics(history):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in history]


def test_run_writes_checkpoints_metrics_and_plots(tmp_path, layout_graphs, tiny_trainer):
    trainer, result = _fit(layout_graphs, tmp_path / "run", tiny_trainer, _config(plots=True, epochs=6, lr=3e-2))
    assert [r["epoch"] for r in result.history] == [1, 2, 3, 4, 5, 6]
    for name in ("checkpoint.pt", "best.pt", "metrics.csv", "learning_curves.png", "valid_ranks.png"):
        assert (tmp_path / "run" / name).is_file(), name
    rows = list(csv.DictReader(open(tmp_path / "run" / "metrics.csv")))
    assert len(rows) == 6 and "valid_kendall_tau" in rows[0] and "train_loss" in rows[0]
    best = load_checkpoint(result.best_path)
    assert best["score"] == pytest.approx(max(r["valid_kendall_tau"] for r in result.history))
    assert best["model_spec"] == {"name": "tiny", "kind": "layout", "config": {"hidden": 8, "order_dependent": False}}
    # the stand-in model learns the synthetic runtime function
    taus = [r["valid_kendall_tau"] for r in result.history]
    assert taus[-1] > 0.3 and taus[-1] > taus[0]


def test_same_seed_same_run(tmp_path, layout_graphs, tiny_trainer):
    _, a = _fit(layout_graphs, tmp_path / "a", tiny_trainer, _config(epochs=1))
    _, b = _fit(layout_graphs, tmp_path / "b", tiny_trainer, _config(epochs=1))
    assert _metrics(a.history) == _metrics(b.history)


@pytest.mark.parametrize("every,kill_at", [(1, (1, 2)), (3, (2, 1))])
def test_kill_mid_epoch_then_resume_matches_uninterrupted(tmp_path, layout_graphs, tiny_trainer, every, kill_at):
    config = _config(checkpoint_every=every)
    full, full_result = _fit(layout_graphs, tmp_path / "full", tiny_trainer, config)

    def kill(trainer, epoch, step):  # simulated crash after `step` steps of epoch `epoch`
        if (epoch, step) == kill_at:
            raise StopTraining

    with pytest.raises(StopTraining):
        _fit(layout_graphs, tmp_path / "killed", tiny_trainer, config, step_callback=kill)
    resumed, resumed_result = _fit(layout_graphs, tmp_path / "killed", tiny_trainer, config, resume=True)
    assert _metrics(resumed_result.history) == _metrics(full_result.history)
    for (name, p), q in zip(full.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(p, q), name
    assert resumed.scheduler.last_epoch == full.scheduler.last_epoch


def test_resume_refuses_other_training_graphs(tmp_path, layout_graphs, tiny_trainer):
    _fit(layout_graphs, tmp_path / "r", tiny_trainer, _config(epochs=1))
    other = tiny_trainer(_config(epochs=2), layout_graphs[1:5], layout_graphs[5:], tmp_path / "r")
    with pytest.raises(ValueError, match="different set of training graphs"):
        other.fit(resume=True)


def test_resume_refuses_changed_settings(tmp_path, layout_graphs, tiny_trainer):
    _fit(layout_graphs, tmp_path / "r", tiny_trainer, _config(epochs=1))
    other = tiny_trainer(_config(epochs=1, lr=0.1), layout_graphs[:4], layout_graphs[4:], tmp_path / "r")
    with pytest.raises(ValueError, match="different settings.*lr"):
        other.fit(resume=True)


def test_kill_and_resume_with_the_real_tgraph(tmp_path, layout_graphs):
    """Same guarantee for TGraph itself (PyG message passing, attention, dropout-free)."""
    small = {"hidden": 8, "opcode_dim": 2, "layout_dim": 2, "num_blocks": 1}
    config = _config(model="tgraph", model_config=small, epochs=2, checkpoint_every=1)
    graphs = layout_graphs[:3] + layout_graphs[4:5]
    full = Trainer(config, graphs[:3], graphs[3:], tmp_path / "full")
    full_result = full.fit()

    def kill(trainer, epoch, step):
        if (epoch, step) == (1, 1):
            raise StopTraining

    with pytest.raises(StopTraining):
        Trainer(config, graphs[:3], graphs[3:], tmp_path / "k").fit(step_callback=kill)
    resumed = Trainer(config, graphs[:3], graphs[3:], tmp_path / "k")
    assert _metrics(resumed.fit(resume=True).history) == _metrics(full_result.history)
    for (name, p), q in zip(full.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(p, q), name


def test_seed_everything_sets_the_deterministic_mode_both_ways():
    """The mode is process-wide: a GPU run (deterministic=False) must not inherit a CPU run's."""
    from graphcost.train.trainer import seed_everything

    before = torch.are_deterministic_algorithms_enabled()
    try:
        seed_everything(1, deterministic=True)
        assert torch.are_deterministic_algorithms_enabled()
        seed_everything(1, deterministic=False)
        assert not torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(before, warn_only=True)
