"""D3PM with marginal prior, cosine schedule and the layer-index schedule (LayerDAG §III-C, eq. 1)."""

import numpy as np
import pytest
import torch

from graphcost.layerdag.denoising_schedule import ConstantSchedule, LinearSchedule, make_schedule, time_grid
from graphcost.layerdag.diffusion import MarginalDiffusion

M = torch.tensor([0.5, 0.3, 0.15, 0.05])


def test_qbar_rows_sum_to_one_and_compose():
    d = MarginalDiffusion(M, T=20)
    for t in range(21):
        assert torch.allclose(d.Qbar(t).sum(1), torch.ones(4, dtype=torch.float64))
    # Q̄(t) = Q̄(s) Q(s→t)
    for s, t in [(0, 5), (3, 7), (10, 20)]:
        assert torch.allclose(d.Qbar(s) @ d.Q_between(s, t), d.Qbar(t), atol=1e-12)
    assert d.alpha_bar[0] == 1.0 and torch.all(d.alpha_bar[1:] <= d.alpha_bar[:-1])


def test_forward_marginal_at_T_is_prior():
    d = MarginalDiffusion(M, T=16)
    x0 = torch.tensor([0, 1, 2, 3])
    probs = d.q_probs(x0, torch.full((4,), 16))
    assert torch.allclose(probs, M.expand(4, 4), atol=1e-6)
    # empirical check by sampling
    gen = torch.Generator().manual_seed(0)
    xt = d.q_sample(torch.zeros(20000, dtype=torch.long), torch.full((20000,), 16), gen)
    freq = torch.bincount(xt, minlength=4).float() / 20000
    assert torch.allclose(freq, M, atol=0.015)


def test_posterior_is_a_distribution_and_matches_bayes():
    d = MarginalDiffusion(M, T=10)
    x_t = torch.tensor([0, 1, 2, 3, 3])
    for s, t in [(0, 1), (2, 5), (9, 10), (4, 10)]:
        post = d.posterior(x_t, s, t)  # (n, k, j)
        assert torch.allclose(post.sum(-1), torch.ones(5, 4, dtype=torch.float64))
        # brute force Bayes: q(x_s=j|x_t=i,x_0=k) = Q̄(s)[k,j] Q(s→t)[j,i] / Q̄(t)[k,i]
        Qs, Qst, Qt = d.Qbar(s), d.Q_between(s, t), d.Qbar(t)
        n, k, j = 1, 2, 3
        i = int(x_t[n])
        assert torch.isclose(post[n, k, j], Qs[k, j] * Qst[j, i] / Qt[k, i])
    p0 = torch.softmax(torch.randn(5, 4), -1)
    rp = d.reverse_probs(x_t, p0, 3, 7)
    assert torch.allclose(rp.sum(-1), torch.ones(5), atol=1e-5)
    # a confident x̂_0 with s -> 0 concentrates the posterior on it
    sharp = torch.nn.functional.one_hot(torch.tensor([2] * 5), 4).float()
    assert torch.allclose(d.reverse_probs(x_t, sharp, 0, 1), sharp)


def test_linear_schedule_eq1_values():
    s = LinearSchedule(t_min=4, t_max=64, l_max=10)
    assert [s.steps(l) for l in (0, 1, 5, 10, 20)] == [4, 4 + 6, 4 + 30, 64, 64]
    s = LinearSchedule(t_min=1, t_max=32, l_max=7)
    assert s.steps(3) == 1 + int(np.floor(31 * 3 / 7))  # = 14
    assert ConstantSchedule(8).steps(100) == 8
    with pytest.raises(ValueError):
        LinearSchedule(t_min=5, t_max=4, l_max=3)
    with pytest.raises(ValueError, match="exceeds"):
        make_schedule("linear", t_train=16, l_max=5, t_max=32)


def test_time_grid_strides_the_trained_schedule():
    assert time_grid(4, 64).tolist() == [64, 48, 32, 16, 0]
    assert time_grid(64, 64).tolist() == list(range(64, -1, -1))
    g = time_grid(7, 32)
    assert g[0] == 32 and g[-1] == 0 and np.all(np.diff(g) < 0)
    with pytest.raises(ValueError):
        time_grid(0, 10)
