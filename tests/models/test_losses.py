"""Ranking losses: hand values, degenerate batches, gradient direction, tiny optimisation."""

import itertools
import math

import numpy as np
import pytest
import torch

from graphcost.metrics import kendall_tau
from graphcost.models.losses import (
    LOSS_NAMES,
    get_loss,
    list_mle,
    mse_log_runtime,
    pairwise_hinge,
    pairwise_logistic,
)

RANKING = ["hinge", "logistic", "listmle"]


def t(x):
    return torch.tensor(x, dtype=torch.float64)


def _brute_pairwise(s, r, phi):
    total, n = 0.0, 0
    for i, j in itertools.permutations(range(len(s)), 2):
        if r[i] > r[j]:
            total += phi(s[i] - s[j])
            n += 1
    return total, n


def _brute_listmle_no_ties(s, r):
    order = np.argsort(r)
    u = -np.asarray(s)[order]
    terms = [math.log(np.exp(u[i:]).sum()) - u[i] for i in range(len(u))]
    return float(np.mean(terms))


# ---------------------------------------------------------------- hand values
def test_hinge_hand_values():
    # correctly ordered with margin >= 1 -> zero
    assert pairwise_hinge(t([0.0, 1.0, 2.0]), t([1.0, 2.0, 3.0])).item() == 0.0
    # two configs, slower one scored 0.25 lower: max(0, 1 - (-0.25)) = 1.25
    assert pairwise_hinge(t([0.25, 0.0]), t([1.0, 2.0])).item() == pytest.approx(1.25)
    # TGraph eq. 8 as a sum vs. mean over pairs
    s, r = [0.3, -0.2, 0.9, 0.1], [2.0, 1.0, 2.0, 5.0]
    total, n = _brute_pairwise(s, r, lambda z: max(0.0, 1.0 - z))
    assert pairwise_hinge(t(s), t(r), reduction="sum").item() == pytest.approx(total)
    assert pairwise_hinge(t(s), t(r)).item() == pytest.approx(total / n)
    m_total, _ = _brute_pairwise(s, r, lambda z: max(0.0, 0.5 - z))
    assert pairwise_hinge(t(s), t(r), margin=0.5, reduction="sum").item() == pytest.approx(m_total)


def test_logistic_hand_values():
    s, r = [0.3, -0.2, 0.9, 0.1, 0.1], [2.0, 1.0, 2.0, 5.0, 0.5]
    total, n = _brute_pairwise(s, r, lambda z: math.log1p(math.exp(-z)))
    assert pairwise_logistic(t(s), t(r)).item() == pytest.approx(total / n)
    assert pairwise_logistic(t(s), t(r), reduction="sum").item() == pytest.approx(total)


def test_listmle_hand_values():
    rng = np.random.default_rng(0)
    s, r = rng.normal(size=6), rng.permutation(6).astype(float) + 1
    assert list_mle(t(s), t(r)).item() == pytest.approx(_brute_listmle_no_ties(s, r))
    # two items, ordered right with big gap -> near zero; wrong -> ~gap
    assert list_mle(t([-20.0, 20.0]), t([1.0, 2.0])).item() < 1e-8
    assert list_mle(t([20.0, -20.0]), t([1.0, 2.0])).item() == pytest.approx(20.0, rel=1e-6)


def test_listmle_ties_do_not_depend_on_input_order():
    s = t([0.3, -1.0, 0.5, 2.0, 0.0])
    r = t([1.0, 2.0, 2.0, 2.0, 3.0])
    base = list_mle(s, r)
    for perm in itertools.permutations(range(5)):
        p = torch.tensor(perm)
        assert list_mle(s[p], r[p]).item() == pytest.approx(base.item())


def test_mse_log_runtime():
    r = t([1.0, math.e, math.e**2])
    assert mse_log_runtime(t([0.0, 1.0, 2.0]), r).item() == pytest.approx(0.0, abs=1e-12)
    assert mse_log_runtime(t([1.0, 1.0, 1.0]), r).item() == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="> 0"):
        mse_log_runtime(t([0.0]), t([0.0]))


# ---------------------------------------------------------------- degenerate batches
@pytest.mark.parametrize("name", RANKING)
@pytest.mark.parametrize("runtime", [[3.0], [2.0, 2.0, 2.0, 2.0]])
def test_zero_loss_without_ordered_pairs(name, runtime):
    scores = torch.randn(len(runtime), dtype=torch.float64, requires_grad=True)
    loss = get_loss(name)(scores, t(runtime))
    assert loss.item() == 0.0 and loss.ndim == 0
    loss.backward()
    assert torch.all(scores.grad == 0) and torch.isfinite(scores.grad).all()


def test_mse_b1():
    scores = torch.zeros(1, requires_grad=True)
    loss = mse_log_runtime(scores, torch.tensor([2.0]))
    loss.backward()
    assert torch.isfinite(scores.grad).all()


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_extreme_scores_stay_finite(name):
    scores = torch.tensor([1e4, -1e4, 0.0], requires_grad=True)
    loss = get_loss(name)(scores, torch.tensor([1.0, 2.0, 3.0]))
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(scores.grad).all()


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_shape_errors(name):
    fn = get_loss(name)
    with pytest.raises(ValueError, match="equal lengths"):
        fn(torch.zeros(3), torch.ones(2))
    with pytest.raises(ValueError, match="1-D"):
        fn(torch.zeros(3, 1), torch.ones(3, 1))
    with pytest.raises(ValueError, match="empty"):
        fn(torch.zeros(0), torch.ones(0))


def test_get_loss_errors_and_options():
    assert set(LOSS_NAMES) == {"hinge", "logistic", "listmle", "mse"}
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("ranknet")
    with pytest.raises(ValueError, match="no option"):
        get_loss("listmle", margin=1.0)
    f = get_loss("hinge", margin=0.0)
    assert f(t([0.0, 1.0]), t([1.0, 2.0])).item() == 0.0


# ---------------------------------------------------------------- gradient direction
@pytest.mark.parametrize("name", LOSS_NAMES)
def test_gradient_pushes_faster_config_down(name):
    # config 0 is faster but scored higher: descent must lower s0 and raise s1
    scores = torch.tensor([0.5, 0.0], dtype=torch.float64, requires_grad=True)
    runtime = t([1.0, 4.0])
    get_loss(name)(scores, runtime).backward()
    assert scores.grad[0] > 0  # gradient descent decreases s0
    assert scores.grad[1] < 0  # and increases s1


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_tiny_optimisation_reaches_perfect_ranking(name):
    gen = torch.Generator().manual_seed(0)
    runtime = torch.rand(24, generator=gen, dtype=torch.float64) * 9 + 1
    scores = torch.randn(24, generator=gen, dtype=torch.float64).requires_grad_(True)
    assert kendall_tau(scores.detach().numpy(), runtime.numpy()) < 0.5
    opt = torch.optim.Adam([scores], lr=0.1)
    loss_fn = get_loss(name)
    first = None
    for _ in range(300):
        opt.zero_grad()
        loss = loss_fn(scores, runtime)
        first = loss.item() if first is None else first
        loss.backward()
        opt.step()
    assert loss.item() < first
    assert kendall_tau(scores.detach().numpy(), runtime.numpy()) == pytest.approx(1.0)
