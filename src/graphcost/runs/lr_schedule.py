"""Optimiser, learning-rate schedule and gradient clipping (TGraph §2.4.2).

TGraph trains with AdamW, learning rate 1e-3, weight decay 1e-5 on non-bias parameters, a
linear warm-up over the first 5 % of training followed by a single-cycle ("lifted") cosine
decay, and gradient-norm clipping at 1.0. The schedule here is expressed per optimisation
step (the paper counts in epochs; per step is the same curve at a finer grain):

    lr(t) = lr0 * t / W                                    for t < W        (linear warm-up)
    lr(t) = lr0 * (m + (1 - m) * (1 + cos(pi * p)) / 2)     p = (t - W) / (T - W)   (cosine)

with T total steps, W = ceil(warmup_frac * T) and m the final fraction of the peak rate.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

NORM_TYPES: tuple[type[nn.Module], ...] = (
    nn.LayerNorm,
    nn.GroupNorm,
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.BatchNorm3d,
    nn.InstanceNorm1d,
    nn.InstanceNorm2d,
    nn.RMSNorm,
)


ADAMW_BYTES_PER_PARAMETER = 16  # what training holds per parameter: fp32 weight, gradient and AdamW's two moments


def adamw_training_bytes(build: Callable[[], nn.Module]) -> tuple[int, int]:
    """(parameters, bytes to train them with AdamW) of the module `build()` makes, built on PyTorch's meta device
    so that nothing is allocated; what `build` raises propagates."""
    with torch.device("meta"):
        params = sum(p.numel() for p in build().parameters())
    return params, params * ADAMW_BYTES_PER_PARAMETER

def _is_norm_module(module: nn.Module) -> bool:
    if isinstance(module, NORM_TYPES):
        return True
    # PyG norms (torch_geometric.nn.norm.*) and custom ones are recognised by their class name.
    return "norm" in type(module).__name__.lower()


def param_groups(model: nn.Module, weight_decay: float = 1e-5) -> list[dict]:
    """Split trainable parameters into a decayed and a non-decayed group (TGraph §2.4.2).

    Biases and every parameter owned by a normalisation layer get no weight decay; all other
    parameters (weights, embeddings, attention temperatures) get `weight_decay`.
    """
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    seen: set[int] = set()
    for module_name, module in model.named_modules():
        norm = _is_norm_module(module)
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            if norm or name == "bias" or name.endswith("_bias"):
                no_decay.append(param)
            else:
                decay.append(param)
    groups = [{"params": decay, "weight_decay": weight_decay, "name": "decay"}]
    groups.append({"params": no_decay, "weight_decay": 0.0, "name": "no_decay"})
    return groups


def build_optimizer(model: nn.Module, lr: float = 1e-3, weight_decay: float = 1e-5) -> torch.optim.AdamW:
    """AdamW over `param_groups` (TGraph §2.4.2: lr 1e-3, wd 1e-5 on non-bias parameters)."""
    return torch.optim.AdamW(param_groups(model, weight_decay), lr=lr)


def warmup_cosine_factor(step: int, total_steps: int, warmup_frac: float = 0.05, final_ratio: float = 0.0) -> float:
    """Multiplier of the peak learning rate at optimisation step `step` (0-based), see module doc."""
    total = max(1, int(total_steps))
    warmup = int(math.ceil(warmup_frac * total)) if warmup_frac > 0 else 0
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup  # linear warm-up; step 0 already trains (never lr = 0)
    span = max(1, total - warmup)
    progress = min(1.0, max(0.0, (step - warmup) / span))
    return final_ratio + (1.0 - final_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def build_scheduler(
    optimizer: torch.optim.Optimizer, total_steps: int, warmup_frac: float = 0.05, final_ratio: float = 0.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """Per-step LambdaLR: 5 % linear warm-up, then cosine to `final_ratio` of the peak rate."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_cosine_factor(step, total_steps, warmup_frac, final_ratio)
    )


def clip_gradients(model: nn.Module, max_norm: float = 1.0) -> float:
    """Clip the global gradient norm to `max_norm` (TGraph §2.4.2); returns the norm before clipping."""
    params = [p for p in model.parameters() if p.grad is not None]
    if not params or max_norm <= 0:
        return 0.0
    return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
