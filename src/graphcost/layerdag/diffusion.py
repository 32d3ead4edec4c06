"""Discrete denoising diffusion with a marginal prior (D3PM; LayerDAG §II, §III-C).

For a categorical variable with C values and empirical marginal m (C,):
  Q̄(t) = ᾱ(t) I + (1 − ᾱ(t)) 1 mᵀ                                  (LayerDAG §III-C)
  ᾱ(t) = f(t)/f(0),  f(t) = cos²(π/2 · (t/T + s)/(1 + s)),  s = 0.008 (cosine schedule, Nichol & Dhariwal)
so q(x_t | x_0) = x_0 Q̄(t) and at t = T (ᾱ = 0) every row equals the prior m.
Between any two times s < t the transition is Q(s→t) = a I + (1 − a) 1 mᵀ with a = ᾱ(t)/ᾱ(s)
(products of marginal transitions stay marginal), and the posterior is
  q(x_s | x_t, x_0) ∝ [x_t Q(s→t)ᵀ] ⊙ [x_0 Q̄(s)]                     (D3PM eq. 3)
The reverse step marginalises the denoiser's x̂_0 distribution:
  p(x_s | x_t) = Σ_k p̂(x_0 = k) q(x_s | x_t, x_0 = k).
Edges use the same process with C = 2 (absent / present) and m = (1 − ρ, ρ), ρ the edge density.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

import math

import torch


class MarginalDiffusion:
    """Cosine-schedule D3PM with prior `marginal` (C,) over C categories and T steps."""

    def __init__(self, marginal: torch.Tensor, T: int, s: float = 0.008, eps: float = 1e-6):
        if T < 1:
            raise ValueError(f"T must be >= 1, got {T}")
        m = torch.as_tensor(marginal, dtype=torch.float64).clamp_min(eps)
        self.m = m / m.sum()  # (C,) prior; clamped so no category has zero mass
        self.C, self.T = int(self.m.shape[0]), int(T)
        t = torch.arange(T + 1, dtype=torch.float64)
        f = torch.cos(0.5 * math.pi * (t / T + s) / (1 + s)) ** 2
        abar = (f / f[0]).clamp(0.0, 1.0)
        abar[-1] = 0.0  # ᾱ(T) = 0: x_T is distributed exactly as the prior
        self.alpha_bar = abar  # (T+1,)

    # ----- transition matrices -----
    def Qbar(self, t: int) -> torch.Tensor:
        """(C, C) Q̄(t) = ᾱ(t) I + (1 − ᾱ(t)) 1 mᵀ."""
        a = self.alpha_bar[t]
        return a * torch.eye(self.C, dtype=torch.float64) + (1 - a) * self.m.expand(self.C, self.C)

    def Q_between(self, s: int, t: int) -> torch.Tensor:
        """(C, C) Q(s→t) with ᾱ(t)/ᾱ(s) in place of ᾱ."""
        if not 0 <= s < t <= self.T:
            raise ValueError(f"need 0 <= s < t <= T={self.T}, got s={s}, t={t}")
        a = self.alpha_bar[t] / self.alpha_bar[s]
        return a * torch.eye(self.C, dtype=torch.float64) + (1 - a) * self.m.expand(self.C, self.C)

    # ----- forward process -----
    def q_probs(self, x0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """(n, C) q(x_t | x_0) for integer x0 (n,) and per-item times t (n,)."""
        a = self.alpha_bar.to(torch.float32)[t].unsqueeze(-1)  # (n, 1)
        onehot = torch.nn.functional.one_hot(x0, self.C).to(torch.float32)
        return a * onehot + (1 - a) * self.m.to(torch.float32)

    def q_sample(self, x0: torch.Tensor, t: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """(n,) x_t ~ q(x_t | x_0)."""
        return torch.multinomial(self.q_probs(x0, t), 1, generator=generator).squeeze(-1)

    def prior_sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """(n,) x_T ~ m."""
        if n == 0:
            return torch.zeros(0, dtype=torch.long)
        return torch.multinomial(self.m.to(torch.float32).expand(n, self.C), 1, generator=generator).squeeze(-1)

    # ----- reverse process -----
    def posterior(self, x_t: torch.Tensor, s: int, t: int) -> torch.Tensor:
        """(n, C, C) q(x_s = j | x_t, x_0 = k) indexed [item, k, j] (D3PM eq. 3)."""
        Qst = self.Q_between(s, t)  # (C, C)
        left = Qst[:, x_t].T  # (n, C_j): Q(s→t)[j, x_t]
        right = self.Qbar(s)  # (C_k, C_j)
        denom = self.Qbar(t)[:, x_t].T  # (n, C_k): Q̄(t)[k, x_t]
        return left[:, None, :] * right[None, :, :] / denom[:, :, None]

    def reverse_probs(self, x_t: torch.Tensor, x0_probs: torch.Tensor, s: int, t: int) -> torch.Tensor:
        """(n, C) p(x_s | x_t) = Σ_k p̂(x_0 = k) q(x_s | x_t, x_0 = k); at s = 0 this is p̂ itself."""
        if s == 0:
            return x0_probs
        post = self.posterior(x_t, s, t)  # (n, C, C)
        p = torch.einsum("nk,nkj->nj", x0_probs.to(torch.float64), post)
        p = p.clamp_min(0)
        return (p / p.sum(-1, keepdim=True)).to(torch.float32)

    def reverse_sample(
        self, x_t: torch.Tensor, x0_probs: torch.Tensor, s: int, t: int, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """(n,) x_s ~ p(x_s | x_t)."""
        if x_t.numel() == 0:
            return x_t
        return torch.multinomial(self.reverse_probs(x_t, x0_probs, s, t), 1, generator=generator).squeeze(-1)
