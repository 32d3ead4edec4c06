"""`loader_workers` (graphcost train --loader-workers): DataLoader workers build the same batches,
so a run with workers equals the in-process run, and resumes exactly."""

import json

import pytest
import torch
from train_stubs import StopTraining, build_tiny, run_cli, stub_trainer, write_cli_collections

from graphcost.train.trainer import TrainConfig

TIMING = ("train_seconds", "configs_per_s")


def _config(**kw) -> TrainConfig:
    base = dict(model="tiny", model_config={"hidden": 8}, epochs=2, batch_configs=16, lr=3e-3, seed=7,
                device="cpu", eval_batch=16, progress=False, plots=False)  # fmt: skip
    base.update(kw)
    return TrainConfig(**base)


def _fit(graphs, out, tiny_trainer, config, **fit_kw):
    trainer = tiny_trainer(config, graphs[:4], graphs[4:], out)
    return trainer, trainer.fit(**fit_kw)


def _same_run(a, a_result, b, b_result):
    strip = lambda history: [{k: v for k, v in r.items() if k not in TIMING} for r in history]  # noqa: E731
    assert strip(a_result.history) == strip(b_result.history)
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(p, q), name


def test_workers_give_the_in_process_run(tmp_path, layout_graphs, tiny_trainer):
    in_process = _fit(layout_graphs, tmp_path / "w0", tiny_trainer, _config())
    workers = _fit(layout_graphs, tmp_path / "w2", tiny_trainer, _config(loader_workers=2))
    _same_run(*in_process, *workers)


def test_workers_are_spawned_in_a_process_that_imported_jax(tmp_path, layout_graphs, tiny_trainer, monkeypatch):
    """Forking after JAX can deadlock the child: such a process spawns its workers, same run."""
    import sys
    import types

    from torch.utils.data import DataLoader

    contexts, init = [], DataLoader.__init__

    def spy(self, *args, **kw):
        contexts.append(kw.get("multiprocessing_context"))
        init(self, *args, **kw)

    in_process = _fit(layout_graphs, tmp_path / "w0", tiny_trainer, _config())
    monkeypatch.setitem(sys.modules, "jax", sys.modules.get("jax") or types.ModuleType("jax"))
    monkeypatch.setattr(DataLoader, "__init__", spy)
    spawned = _fit(layout_graphs, tmp_path / "w1", tiny_trainer, _config(loader_workers=1))
    assert contexts and set(contexts) == {"spawn"}
    _same_run(*in_process, *spawned)


def test_kill_then_resume_with_workers_matches_uninterrupted(tmp_path, layout_graphs, tiny_trainer):
    full = _fit(layout_graphs, tmp_path / "full", tiny_trainer, _config())

    def kill(trainer, epoch, step):
        if (epoch, step) == (1, 2):
            raise StopTraining

    config = _config(loader_workers=1, checkpoint_every=1)
    with pytest.raises(StopTraining):
        _fit(layout_graphs, tmp_path / "killed", tiny_trainer, config, step_callback=kill)
    resumed = _fit(layout_graphs, tmp_path / "killed", tiny_trainer, _config(loader_workers=2), resume=True)
    _same_run(*full, *resumed)


def test_injected_batch_functions_are_refused_with_workers(tmp_path, layout_graphs):
    from graphcost.data.transforms.batching import make_batch

    trainer_cls = stub_trainer(build_model=build_tiny, make_batch=lambda *a: make_batch(*a))
    trainer = trainer_cls(_config(loader_workers=1), layout_graphs[:4], layout_graphs[4:], tmp_path)
    with pytest.raises(ValueError, match="loader_workers"):
        trainer.fit()


def test_cli_loader_workers(tmp_path):
    root = write_cli_collections(tmp_path / "data", seed=2)
    run = tmp_path / "run"
    out = run_cli("train", "--collection", "tile:xla", "--data-dir", root, "--model", "tile-mlp",
                  "--model-opt", "hidden=8", "--model-opt", "num_layers=1", "--epochs", "1", "--batch-configs", "8", "--out", run,
                  "--no-progress", "--device", "cpu", "--loader-workers", "2")  # fmt: skip
    assert "best valid" in out and (run / "best.pt").is_file()
    assert json.loads((run / "run.json").read_text())["config"]["loader_workers"] == 2
