"""LayerDAG on a chosen device: --device checks, device-neutral checkpoints, and (only where CUDA is
present) CUDA training/sampling that agrees with CPU and resumes across devices."""

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.layerdag.batch import build_batch
from graphcost.layerdag.datasets.lp import generate_lp_dataset
from graphcost.layerdag.sample import sample_dags
from graphcost.layerdag.train import CHECKPOINT, LayerDAGTrainConfig, _labels, build_model, load_checkpoint, train_layerdag
from graphcost.runs.distributed import resolve_device

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


def test_resolve_device_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    for bad in ("cuda", "cuda:0"):
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device(bad)
    with pytest.raises(ValueError, match="expected auto, cpu, cuda or cuda:N"):
        resolve_device("gpu")


def test_cli_rejects_bad_device_before_work(tmp_path):
    for cmd in (["dag", "train", "--dataset", "lp", "--num-graphs", "12", "--out", str(tmp_path / "r")],
                ["dag", "sample", str(tmp_path), "--out", str(tmp_path / "s.npz")]):  # fmt: skip
        r = CliRunner().invoke(app, cmd + ["--device", "gpu"])
        assert r.exit_code == 1, r.output
        assert "--device 'gpu'" in r.output and "Traceback" not in r.output
        assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_checkpoint_holds_cpu_tensors(tmp_path):
    dags = generate_lp_dataset(12, seed=0)
    train_layerdag(dags[:8], tmp_path, LayerDAGTrainConfig(epochs=1, batch_size=4, device="cpu"), valid_dags=dags[8:], progress=False)
    for name in (CHECKPOINT, "best.pt"):
        ckpt = load_checkpoint(tmp_path / name)
        assert all(t.device.type == "cpu" for t in _tensors(ckpt))


@cuda
def test_cuda_loss_matches_cpu():
    dags = generate_lp_dataset(16, seed=1)
    model, prepared = build_model(dags, "small")
    batch, labels = build_batch(prepared), _labels(prepared)
    cpu = model.loss(batch, labels, torch.Generator().manual_seed(3))
    gpu = model.to("cuda").loss(batch, labels, torch.Generator().manual_seed(3))  # same noise: drawn on CPU
    for k in cpu:
        assert gpu[k].device.type == "cuda"
        assert float(gpu[k]) == pytest.approx(float(cpu[k]), rel=1e-4, abs=1e-5), k


@cuda
def test_cuda_training_resumes_on_cpu_and_samples(tmp_path):
    dags = generate_lp_dataset(24, seed=2)
    train, valid = dags[:20], dags[20:]
    model, hist = train_layerdag(train, tmp_path, LayerDAGTrainConfig(epochs=2, batch_size=8, device="cuda"), valid_dags=valid, progress=False)
    assert model.device.type == "cuda" and len(hist) == 2
    assert all(np.isfinite(r["train_loss"]) for r in hist)
    model, hist = train_layerdag(train, tmp_path, LayerDAGTrainConfig(epochs=3, batch_size=8, device="cpu"), valid_dags=valid,
                                 resume=True, progress=False)  # fmt: skip
    assert model.device.type == "cpu" and [r["epoch"] for r in hist] == [1, 2, 3]
    on_cpu = sample_dags(model, 8, seed=5, progress=False)
    on_gpu = sample_dags(model.to("cuda"), 8, seed=5, progress=False)  # random draws on CPU: same DAGs up to rounding
    same = sum(a.num_nodes == b.num_nodes and np.array_equal(a.src, b.src) for a, b in zip(on_cpu, on_gpu))
    assert same >= 6, same
