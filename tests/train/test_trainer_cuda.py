"""Training, checkpoints and the CLI on CUDA (tiny SYNTHETIC data).

Skipped where torch sees no CUDA device (CI and the CPU development machine). On a GPU machine:
`--device auto` picks CUDA; a CUDA run trains, resumes, checkpoints CPU tensors (so a GPU-trained
model loads and scores on a CPU-only machine) and `train/evaluate/rank/predict --device cuda`
work end to end with scores close to the CPU ones.
"""

import json
import math
import re

import numpy as np
import pytest
import torch
from train_stubs import StopTraining, run_cli, write_cli_collections

from graphcost.runs.checkpoint import load_checkpoint
from graphcost.runs.distributed import DistContext
from graphcost.train.trainer import TrainConfig, Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)")

TGRAPH = {"hidden": 16, "opcode_dim": 2, "layout_dim": 2, "num_blocks": 2}
CLI_SMALL = ["--model-opt", "hidden=16", "--model-opt", "opcode_dim=2", "--model-opt", "layout_dim=2"]
TIMING = ("train_seconds", "configs_per_s")


def _config(**kw) -> TrainConfig:
    base = {"model": "tgraph", "model_config": TGRAPH, "epochs": 2, "batch_configs": 16, "lr": 3e-3, "seed": 7,
            "device": "cuda", "eval_batch": 16, "progress": False, "plots": False, "checkpoint_every": 1}
    base.update(kw)
    return TrainConfig(**base)


def test_auto_device_picks_cuda():
    assert DistContext().device("auto").type == "cuda"
    assert DistContext().device("cuda:0") == torch.device("cuda", 0)


def test_tgraph_trains_on_cuda_and_checkpoints_load_on_cpu(tmp_path, layout_graphs):
    from graphcost.inference.ensemble import load_trained
    from graphcost.inference.ranking import score_configs

    trainer = Trainer(_config(epochs=3), layout_graphs[:4], layout_graphs[4:], tmp_path / "run")
    assert trainer.device.type == "cuda" and next(trainer.model.parameters()).is_cuda
    init = {k: v.detach().cpu().clone() for k, v in trainer.model.state_dict().items()}
    result = trainer.fit()
    assert all(math.isfinite(row["train_loss"]) for row in result.history)
    assert any(not torch.equal(init[k], v.cpu()) for k, v in trainer.model.state_dict().items())
    assert all(math.isfinite(row["valid_kendall_tau"]) for row in result.history)
    state = load_checkpoint(trainer.last_path)
    assert all(t.device.type == "cpu" for t in state["model"].values())  # loadable without CUDA
    assert "cuda" in state["rng"]
    graph = layout_graphs[4]
    cpu_model, scaler, _ = load_trained(trainer.last_path, "cpu")
    gpu_model, _, _ = load_trained(trainer.last_path, "cuda")
    on_cpu = score_configs(cpu_model, graph, scaler, batch_size=16, device="cpu")
    on_gpu = score_configs(gpu_model, graph, scaler, batch_size=16, device="cuda")
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=2e-3, atol=2e-4)
    bf16 = score_configs(gpu_model, graph, scaler, batch_size=16, device="cuda", precision="bf16")
    assert np.corrcoef(np.argsort(np.argsort(bf16)), np.argsort(np.argsort(on_gpu)))[0, 1] > 0.9


def test_kill_and_resume_on_cuda(tmp_path, layout_graphs):
    """On GPU the resumed run replays the same steps (same samples, same seeds); only the
    floating-point reduction order may differ, so metrics agree closely, not bitwise."""
    graphs = layout_graphs[:3] + layout_graphs[4:5]
    full = Trainer(_config(), graphs[:3], graphs[3:], tmp_path / "full")
    full_history = full.fit().history

    def kill(trainer, epoch, step):
        if (epoch, step) == (1, 1):
            raise StopTraining

    with pytest.raises(StopTraining):
        Trainer(_config(), graphs[:3], graphs[3:], tmp_path / "k").fit(step_callback=kill)
    resumed = Trainer(_config(), graphs[:3], graphs[3:], tmp_path / "k")
    history = resumed.fit(resume=True).history
    assert len(history) == len(full_history) == 2
    for a, b in zip(history, full_history):
        assert a["steps"] == b["steps"] and a["lr"] == pytest.approx(b["lr"])
        # a tie-breaking flip of one configuration pair moves tau by ~1e-3
        for key in ("train_loss", "valid_kendall_tau", "valid_opa"):
            assert a[key] == pytest.approx(b[key], abs=1e-2), key
    for (name, p), q in zip(full.model.state_dict().items(), resumed.model.state_dict().values()):
        torch.testing.assert_close(q, p, rtol=1e-2, atol=1e-3, msg=name)


def test_cpu_checkpoint_resumes_on_cuda(tmp_path, layout_graphs):
    """--device may change between resumes: a run killed on CPU continues on the GPU."""
    def kill(trainer, epoch, step):
        if (epoch, step) == (0, 2):
            raise StopTraining

    with pytest.raises(StopTraining):
        Trainer(_config(device="cpu"), layout_graphs[:4], layout_graphs[4:], tmp_path / "r").fit(step_callback=kill)
    resumed = Trainer(_config(device="cuda"), layout_graphs[:4], layout_graphs[4:], tmp_path / "r")
    history = resumed.fit(resume=True).history
    assert len(history) == 2 and all(math.isfinite(r["train_loss"]) for r in history)
    assert all(s["exp_avg"].is_cuda for s in resumed.optimizer.state.values())


# ----------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return write_cli_collections(tmp_path_factory.mktemp("synthetic_cuda"), seed=2)


def _ranked(out: str) -> tuple[list[int], list[float]]:
    rows = [line.split() for line in out.splitlines()[1:] if re.match(r"\s*\d+\s+\d+", line)]
    return [int(r[1]) for r in rows], [float(r[2]) for r in rows]


@pytest.mark.parametrize("collection,model", [("layout:xla:random", "tgraph"), ("layout:xla:random", "sage"),
                                              ("tile:xla", "tgraph"), ("tile:xla", "kaufman")])
def test_cli_train_evaluate_rank_predict_on_cuda(tmp_path, data_root, collection, model):
    run = tmp_path / "run"
    opts = CLI_SMALL if model == "tgraph" else ["--model-opt", "hidden=16", "--model-opt", "opcode_dim=2"]
    out = run_cli("train", "--collection", collection, "--data-dir", data_root, "--model", model, *opts,
                  "--epochs", "2", "--batch-configs", "8", "--out", run, "--no-progress", "--device", "cuda")
    assert "best valid" in out and (run / "best.pt").is_file()
    assert json.loads((run / "run.json").read_text())["config"]["device"] == "cuda"

    reports = {}
    for device in ("cuda", "cpu"):
        report = tmp_path / f"eval_{device}.json"
        run_cli("evaluate", run, "--json", report, "--tta", "2", "--device", device)
        reports[device] = json.loads(report.read_text())["aggregate"]
    assert reports["cuda"]["kendall_tau"] == pytest.approx(reports["cpu"]["kendall_tau"], abs=0.05)

    test_file = next(f for f in sorted((data_root / "npz").rglob("test/*.npz"))
                     if ("tile" in f.parts) == (collection == "tile:xla"))
    got = {device: _ranked(run_cli("rank", run, test_file, "--tta", "2", "--device", device)) for device in ("cuda", "cpu")}
    ids, scores = got["cuda"]
    assert sorted(ids) == list(range(len(ids))) and scores == sorted(scores)
    by_id = {d: np.array(s)[np.argsort(i)] for d, (i, s) in got.items()}
    np.testing.assert_allclose(by_id["cuda"], by_id["cpu"], rtol=1e-2, atol=2e-3)  # 5-decimal printout
    if model == "tgraph":
        ids16, _ = _ranked(run_cli("rank", run, test_file, "--device", "cuda", "--precision", "bf16"))
        assert sorted(ids16) == sorted(ids)
    sub = tmp_path / "sub.csv"
    run_cli("predict", run, "--out", sub, "--tta", "2", "--device", "cuda:0")
    assert sub.read_text().startswith("ID,TopConfigs")


def test_cli_auto_device_trains_on_cuda(tmp_path, data_root, monkeypatch):
    from graphcost.train import trainer as trainer_mod

    devices = []
    real_fit = trainer_mod.Trainer.fit

    def spy_fit(self, *args, **kwargs):
        devices.append(next(self.model.parameters()).device.type)
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(trainer_mod.Trainer, "fit", spy_fit)
    run = tmp_path / "auto"
    run_cli("train", "--collection", "layout:xla:random", "--data-dir", data_root, "--model", "tgraph", *CLI_SMALL,
            "--epochs", "1", "--batch-configs", "8", "--out", run, "--no-progress")
    assert devices == ["cuda"] and (run / "checkpoint.pt").is_file()  # auto: CUDA where present
