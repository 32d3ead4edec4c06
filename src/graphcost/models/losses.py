"""Training losses for configuration ranking (torch).

Every loss takes ``(scores (B,), runtime (B,))`` for the B sampled configurations of ONE graph
and returns a scalar tensor. SCORE CONVENTION: lower score = predicted faster, so a perfect
ranker has ``scores`` sorted like ``runtime``. All losses are differentiable in ``scores``, and
return an exact zero (with a gradient path, no NaN) when there is nothing to rank: B = 1, or
every runtime equal.

* `pairwise_hinge` — TGraph eq. 8 / Kaufman et al. eq. 1 with the hinge φ:
  Σ_{i,j} 1[r_i > r_j] max(0, margin - (s_i - s_j)).
* `pairwise_logistic` — Kaufman et al. eq. 1 with the logistic φ(z) = log(1 + e^{-z}).
* `list_mle` — ListMLE (Xia et al. 2008, used by TpuGraphs §4.3): Plackett-Luce
  likelihood of the fastest-first permutation, with the relevance u = -score.
* `mse_log_runtime` — Kaufman et al. §3.3 fusion loss: (s_i - log r_i)^2; the score is
  then a log-runtime prediction.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
    [Kaufman et al.] S. J. Kaufman et al. A Learned Performance Model for Tensor Processing Units. MLSys 2021.
        https://arxiv.org/abs/2008.01040
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "LOSS_NAMES",
    "pairwise_hinge",
    "pairwise_logistic",
    "list_mle",
    "mse_log_runtime",
    "get_loss",
]

_REDUCTIONS = ("mean", "sum")


def _check(scores: Tensor, runtime: Tensor) -> tuple[Tensor, Tensor]:
    """Validate shapes; return runtime on the scores' device (runtime carries no gradient)."""
    if not isinstance(scores, Tensor) or not isinstance(runtime, Tensor):
        raise ValueError(
            f"scores and runtime must be torch tensors, got {type(scores).__name__} and "
            f"{type(runtime).__name__}"
        )
    if scores.ndim != 1 or runtime.ndim != 1:
        raise ValueError(
            f"scores and runtime must be 1-D (B,), got shapes {tuple(scores.shape)} and "
            f"{tuple(runtime.shape)}"
        )
    if scores.shape[0] != runtime.shape[0]:
        raise ValueError(
            f"scores and runtime must have equal lengths, got {scores.shape[0]} and "
            f"{runtime.shape[0]}"
        )
    if scores.shape[0] == 0:
        raise ValueError("empty batch: need at least one configuration")
    if not scores.is_floating_point():
        raise ValueError(f"scores must be a floating tensor, got {scores.dtype}")
    return scores, runtime.detach().to(scores.device)


def _zero(scores: Tensor) -> Tensor:
    """A scalar 0 that stays connected to the graph (so .backward() works, grad = 0)."""
    return scores.sum() * 0.0


def _pairwise(
    scores: Tensor, runtime: Tensor, phi: Callable[[Tensor], Tensor], reduction: str
) -> Tensor:
    """Σ_{i,j} 1[r_i > r_j] φ(s_i - s_j), averaged over such pairs for ``reduction='mean'``."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    scores, runtime = _check(scores, runtime)
    slower = runtime[:, None] > runtime[None, :]  # (B, B): i slower than j
    n_pairs = slower.sum()
    if int(n_pairs) == 0:
        return _zero(scores)
    diff = scores[:, None] - scores[None, :]  # (B, B): s_i - s_j, should be > 0 when i slower
    terms = torch.where(slower, phi(diff), torch.zeros_like(diff))
    total = terms.sum()
    return total / n_pairs.to(total.dtype) if reduction == "mean" else total


def pairwise_hinge(
    scores: Tensor, runtime: Tensor, margin: float = 1.0, reduction: str = "mean"
) -> Tensor:
    """Pairwise hinge loss, TGraph eq. 8: Σ_{i,j} 1[r_i > r_j] max(0, margin - (s_i - s_j)).

    For every pair where configuration i is slower than j the slower one must score at least
    ``margin`` higher. Pairs with equal runtime do not contribute. ``reduction='sum'`` is eq. 8
    literally; ``'mean'`` (default) divides by the number of such pairs, which keeps the scale
    independent of B (Kaufman et al. eq. 1 divides by n(n-1)/2, equal when no runtimes tie).

    Args:
        scores: (B,) predicted scores, lower = faster.
        runtime: (B,) measured runtimes.
    """
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    return _pairwise(scores, runtime, lambda z: torch.relu(margin - z), reduction)


def pairwise_logistic(scores: Tensor, runtime: Tensor, reduction: str = "mean") -> Tensor:
    """Pairwise logistic (RankNet) loss, Kaufman et al. eq. 1 with φ(z) = log(1 + e^{-z}).

    Σ_{i,j} 1[r_i > r_j] log(1 + exp(-(s_i - s_j))), softplus for numerical stability;
    reductions as in `pairwise_hinge`.
    """
    return _pairwise(scores, runtime, lambda z: torch.nn.functional.softplus(-z), reduction)


def list_mle(scores: Tensor, runtime: Tensor) -> Tensor:
    """ListMLE: negative Plackett-Luce log-likelihood of the fastest-first permutation.

    With relevance u = -scores (higher = faster) and π the configurations sorted by ascending
    runtime, ``L = (1/B) Σ_i [ log Σ_{j: r_j >= r_{π(i)}} exp(u_j) - u_{π(i)} ]``.
    Without runtime ties this is exactly ListMLE (Xia et al. 2008) averaged over positions.
    Ties use the Breslow risk set (every configuration tied with π(i) stays in the
    denominator), so the loss does not depend on how tied configurations are ordered in the
    input. Returns 0 when every runtime is equal (no ordering to learn).
    """
    scores, runtime = _check(scores, runtime)
    b = scores.shape[0]
    if b < 2 or bool((runtime == runtime[0]).all()):
        return _zero(scores)
    order = torch.argsort(runtime, stable=True)  # fastest first
    r_sorted = runtime[order]
    u = -scores[order]  # (B,) relevance, fastest first
    # log Σ_{j >= i} exp(u_j): reverse cumulative logsumexp
    tail_lse = torch.logcumsumexp(u.flip(0), dim=0).flip(0)  # (B,)
    # Breslow ties: the risk set of position i starts at the first position of its tie group
    group_start = torch.searchsorted(r_sorted.contiguous(), r_sorted.contiguous(), right=False)
    return (tail_lse[group_start] - u).mean()


def mse_log_runtime(scores: Tensor, runtime: Tensor) -> Tensor:
    """Kaufman et al. §3.3: mean over the batch of (s_i - log r_i)^2.

    The score is then a log-runtime prediction (``exp(score)`` estimates the runtime, e.g. for
    `graphcost.metrics.mape`). Runtimes must be > 0. Unlike the ranking losses this is
    not zero for equal runtimes: it still fits their value.
    """
    scores, runtime = _check(scores, runtime)
    if bool((runtime <= 0).any()):
        raise ValueError("mse_log_runtime: runtime must be > 0 to take its log")
    target = torch.log(runtime.to(scores.dtype))
    return torch.mean((scores - target) ** 2)


_LOSSES: dict[str, Callable[..., Tensor]] = {
    "hinge": pairwise_hinge,
    "logistic": pairwise_logistic,
    "listmle": list_mle,
    "mse": mse_log_runtime,
}
LOSS_NAMES: tuple[str, ...] = tuple(_LOSSES)  # the losses by name, in this order everywhere


def get_loss(name: str, **kwargs: Any) -> Callable[[Tensor, Tensor], Tensor]:
    """The loss called ``name`` (one of :data:`LOSS_NAMES`), with ``kwargs`` bound.

    E.g. ``get_loss("hinge", margin=0.5)``; the result is ``loss(scores, runtime) -> scalar``.
    """
    if name not in _LOSSES:
        raise ValueError(f"unknown loss {name!r}; choose one of {list(LOSS_NAMES)}")
    fn = _LOSSES[name]
    params = inspect.signature(fn).parameters
    bad = sorted(k for k in kwargs if k not in params or k in ("scores", "runtime"))
    if bad:
        options = [k for k in params if k not in ("scores", "runtime")]
        raise ValueError(f"loss {name!r} takes no option(s) {bad}; its options: {options}")
    return functools.partial(fn, **kwargs) if kwargs else fn
