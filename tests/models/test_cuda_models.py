"""Every cost model on CUDA: forward scores and gradients match CPU, an optimiser step runs, and
TGraph's chunked inference (fp32 and bf16) agrees with its reference paths on the GPU.

Skipped where torch sees no CUDA device (CI and the CPU development machine); run on a GPU
machine with `python -m pytest tests/models/test_cuda_models.py`.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from models_testutil import make_layout_batch, make_tile_batch, permute_configs
from test_forward import CASES, small

from graphcost.models.registry import build_model
from graphcost.models.tgraph import TGraph, TGraphConfig
from graphcost.models.losses import pairwise_hinge

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)")

CUDA = torch.device("cuda")
IDS = lambda v: str(v).replace(" ", "")


def _batch(kind: str, **kw):
    return make_layout_batch(**kw) if kind == "layout" else make_tile_batch(**kw)


def _pair(name: str, kind: str, extra: dict):
    """The same initial weights on CPU and on CUDA (eval mode: no dropout on either side)."""
    torch.manual_seed(0)
    cpu = build_model(name, kind, **small(name, extra)).eval()
    return cpu, copy.deepcopy(cpu).to(CUDA)


@pytest.mark.parametrize("name,kind,extra", CASES, ids=IDS)
def test_cuda_forward_matches_cpu(name, kind, extra):
    cpu, gpu = _pair(name, kind, extra)
    batch = _batch(kind)
    with torch.no_grad():
        want = cpu(batch)
        got = gpu(batch.to(CUDA))
    assert got.device.type == "cuda" and got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("name,kind,extra", CASES, ids=IDS)
def test_cuda_gradients_match_cpu_and_a_step_runs(name, kind, extra):
    """Hinge loss (TGraph eq. 8) and its gradients agree across devices; then one AdamW step on CUDA."""
    cpu, gpu = _pair(name, kind, extra)
    cpu.train(), gpu.train()  # as the trainer runs them (cuDNN's LSTM backward needs train mode); no dropout here
    batch = _batch(kind, num_configs=8)
    losses = []
    for model, b in ((cpu, batch), (gpu, batch.to(CUDA))):
        loss = pairwise_hinge(model(b), b.runtime)
        model.zero_grad(set_to_none=True)
        loss.backward()
        losses.append(loss.detach().cpu())
    torch.testing.assert_close(losses[1], losses[0], rtol=2e-3, atol=2e-4)
    grads = [(n, pc.grad, pg.grad) for (n, pc), (_, pg) in zip(cpu.named_parameters(), gpu.named_parameters())]
    assert all((gc is None) == (gg is None) for _, gc, gg in grads)
    # one absolute scale for all: some gradients are 0 up to rounding (the last bias, since a
    # pairwise loss ignores a shift of all scores), so a per-tensor scale would compare noise
    scale = max(float(gc.abs().max()) for _, gc, _ in grads if gc is not None)
    # cuDNN's LSTM runs in TF32 by default (torch.backends.cudnn.allow_tf32): on an H100 its
    # gradients differed from CPU by up to 0.5% of the largest gradient, the others by < 0.1%
    tol = 1e-2 if extra.get("reduction") == "lstm" else 1e-3
    for pname, gc, gg in grads:
        if gc is not None:
            assert gg.device.type == "cuda"
            torch.testing.assert_close(gg.cpu(), gc, rtol=5e-3, atol=tol * scale,
                                       msg=lambda m, pname=pname: f"{pname}: {m}")
    before = [p.detach().clone() for p in gpu.parameters()]
    opt = torch.optim.AdamW(gpu.parameters(), lr=1e-3)
    opt.step()
    moved = [not torch.equal(p0, p.detach()) for p0, p in zip(before, gpu.parameters()) if p.grad is not None]
    assert any(moved) and all(torch.isfinite(p).all() for p in gpu.parameters())


@pytest.mark.parametrize("extra", [{}, {"num_blocks": 3}, {"num_blocks": 0}, {"cross_attention": False},
                                   {"norm": "none"}, {"aggr": "mean", "directed": True}], ids=str)
def test_cuda_score_chunked_fp32_matches_forward_and_cpu(extra):
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small(**extra)).eval()
    gpu = copy.deepcopy(model).to(CUDA)
    batch = make_layout_batch(num_nodes=60, num_configs=40, num_configurable=8, seed=6)
    with torch.no_grad():
        cpu_scores = model.score_chunked(batch, chunk_size=16)
        b = batch.to(CUDA)
        chunked = gpu.score_chunked(b, chunk_size=16)
        assert chunked.device.type == "cuda" and chunked.dtype == torch.float32
        for start, size in ((0, 14), (14, 13), (27, 13)):  # near-equal groups 14 + 13 + 13
            part = slice(start, start + size)
            sub = permute_configs(batch, torch.arange(start, start + size)).to(CUDA)
            torch.testing.assert_close(chunked[part], gpu(sub), rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(chunked[part], gpu.forward_dense(sub), rtol=2e-3, atol=2e-4)
    torch.testing.assert_close(chunked.cpu(), cpu_scores, rtol=2e-3, atol=2e-4)


def _rank_corr(a: torch.Tensor, b: torch.Tensor) -> float:
    ra = np.argsort(np.argsort(a.double().cpu().numpy()))
    rb = np.argsort(np.argsort(b.double().cpu().numpy()))
    return float(np.corrcoef(ra, rb)[0, 1])


@pytest.mark.parametrize("extra", [{}, {"num_blocks": 3}, {"num_blocks": 0}], ids=str)
def test_cuda_bf16_follows_fp32(extra):
    """bf16 on CUDA (sparse mix product, matmuls and attention in bfloat16): same scores up to
    rounding, nearly the same order."""
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small(**extra)).eval().to(CUDA)
    batch = make_layout_batch(num_nodes=60, num_configs=40, num_configurable=8, seed=6).to(CUDA)
    with torch.no_grad():
        fp32 = model.score_chunked(batch, chunk_size=16)
        bf16 = model.score_chunked(batch, chunk_size=16, precision="bf16")
    assert bf16.device.type == "cuda" and bf16.dtype == torch.float32 and bf16.shape == fp32.shape
    assert torch.isfinite(bf16).all()
    assert float(torch.corrcoef(torch.stack([fp32, bf16]))[0, 1]) > 0.995
    assert _rank_corr(fp32, bf16) > 0.95
    if extra.get("num_blocks", 2):
        assert not torch.equal(fp32, bf16)  # it really ran in bfloat16
    assert next(model.parameters()).dtype == torch.float32  # the model itself stays fp32


def test_cuda_bf16_on_a_larger_graph_tracks_fp32():
    """A graph where many nodes depend on the configuration (deep dynamic sets), 200 configs."""
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig(hidden=64, opcode_dim=8)).eval().to(CUDA)
    batch = make_layout_batch(num_nodes=400, num_configs=200, num_configurable=40, seed=9).to(CUDA)
    with torch.no_grad():
        fp32 = model.score_chunked(batch, chunk_size=64)
        bf16 = model.score_chunked(batch, chunk_size=64, precision="bf16")
        dense = model.forward_dense(permute_configs(batch, torch.arange(50, 100, device=CUDA)))
    torch.testing.assert_close(fp32[50:100], dense, rtol=2e-3, atol=2e-4)  # chunk 2 of 4 x 50 configurations
    assert _rank_corr(fp32, bf16) > 0.95


@pytest.mark.parametrize("extra", [{}, {"cross_attention": False}, {"num_blocks": 3}], ids=str)
def test_cuda_inference_node_tiling_matches_dense(monkeypatch, extra):
    """Several node tiles on CUDA (forced to 3 rows): the same scores as the dense path."""
    monkeypatch.setattr(TGraph, "_tile_rows_cuda", staticmethod(lambda b, c, *_: 3))
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small(**extra)).eval().to(CUDA)
    batch = make_layout_batch(num_nodes=40, num_configs=9, num_configurable=5, seed=2).to(CUDA)
    with torch.no_grad():
        fast = model.score_chunked(batch, chunk_size=9)
        dense = model.forward_dense(batch)
        fast16 = model.score_chunked(batch, chunk_size=9, precision="bf16")
    torch.testing.assert_close(fast, dense, rtol=1e-4, atol=1e-5)
    assert float(torch.corrcoef(torch.stack([fast, fast16]))[0, 1]) > 0.99
