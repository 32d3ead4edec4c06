"""Optimiser / schedule (TGraph §2.4.2): warm-up then cosine, weight-decay groups, clipping."""

import math

import numpy as np
import torch
from torch import nn

from graphcost.runs.lr_schedule import (
    build_optimizer,
    build_scheduler,
    clip_gradients,
    param_groups,
    warmup_cosine_factor,
)


def test_warmup_then_cosine_shape():
    total = 200
    f = np.array([warmup_cosine_factor(s, total, 0.05) for s in range(total)])
    warm = math.ceil(0.05 * total)  # 10 steps
    assert np.allclose(f[:warm], np.arange(1, warm + 1) / warm)  # linear ramp to the peak
    assert f[warm - 1] == 1.0 and f[warm] == 1.0
    assert np.all(np.diff(f[warm:]) <= 1e-12)  # monotone cosine decay afterwards
    mid = warm + (total - warm) // 2
    assert abs(f[mid] - 0.5) < 0.01  # half-way through the cosine = half the peak rate
    assert f[-1] < 0.001


def test_scheduler_drives_optimizer_lr():
    model = nn.Linear(3, 1)
    opt = build_optimizer(model, lr=1e-3)
    sched = build_scheduler(opt, total_steps=40, warmup_frac=0.05)
    lrs = []
    for _ in range(40):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert np.allclose(lrs, [1e-3 * warmup_cosine_factor(s, 40) for s in range(40)])


def test_weight_decay_only_on_non_bias_non_norm_weights():
    model = nn.Sequential(nn.Linear(4, 5), nn.LayerNorm(5), nn.Embedding(7, 5), nn.Linear(5, 1))
    groups = param_groups(model, weight_decay=1e-5)
    decay = {id(p) for p in groups[0]["params"]}
    no_decay = {id(p) for p in groups[1]["params"]}
    assert groups[0]["weight_decay"] == 1e-5 and groups[1]["weight_decay"] == 0.0
    assert id(model[0].weight) in decay and id(model[3].weight) in decay and id(model[2].weight) in decay
    assert id(model[0].bias) in no_decay and id(model[3].bias) in no_decay
    assert id(model[1].weight) in no_decay and id(model[1].bias) in no_decay
    assert decay | no_decay == {id(p) for p in model.parameters()} and not decay & no_decay
    opt = build_optimizer(model)
    assert isinstance(opt, torch.optim.AdamW)
    assert [g["weight_decay"] for g in opt.param_groups] == [1e-5, 0.0]


def test_clip_gradients_to_unit_norm():
    model = nn.Linear(10, 1)
    model.weight.grad = torch.full_like(model.weight, 10.0)
    model.bias.grad = torch.full_like(model.bias, 10.0)
    before = clip_gradients(model, 1.0)
    after = torch.sqrt(sum((p.grad**2).sum() for p in model.parameters()))
    assert before > 30 and abs(float(after) - 1.0) < 1e-5
