"""Denoising schedules for sampling (LayerDAG §III-E) and their time grids.

A model is trained once with T_max (= `T_train`) diffusion steps and the cosine schedule. At
sampling time the number of steps for layer l can be smaller:

- layer-index (linear) schedule, LayerDAG eq. 1:
  T(l) = T_min + floor((T_max - T_min) * min(l / L_max, 1)),
  where l is the number of layers already generated (the first layer uses T_min) and L_max the
  largest layer count in the training data;
- constant schedule: T(l) = T_const for every layer (the paper's ablation).

Re-spacing: a run of K < T_train steps visits the strided grid
  τ_K = T_train > τ_{K-1} > ... > τ_1 > τ_0 = 0,  τ_k = round(k · T_train / K),
i.e. K evenly spaced points of the TRAINED cosine schedule. Between two grid points s < t the
transition is again of the marginal form, Q(s→t) = (ᾱ_t/ᾱ_s) I + (1 − ᾱ_t/ᾱ_s) 1 mᵀ
(the product of the single steps), so the posterior q(x_s | x_t, x_0) used to jump from t to s
is exact for the trained noise process; the denoiser is only ever queried at trained timesteps.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LinearSchedule:
    """LayerDAG eq. 1: steps grow linearly with the layer index, saturating at L_max."""

    t_min: int
    t_max: int
    l_max: int

    def __post_init__(self):
        if not 1 <= self.t_min <= self.t_max:
            raise ValueError(f"need 1 <= t_min <= t_max, got t_min={self.t_min}, t_max={self.t_max}")
        if self.l_max < 1:
            raise ValueError(f"l_max must be >= 1, got {self.l_max}")

    def steps(self, layer: int) -> int:
        # LayerDAG eq. 1
        return self.t_min + int(np.floor((self.t_max - self.t_min) * min(layer / self.l_max, 1.0)))


@dataclass(frozen=True)
class ConstantSchedule:
    """The ablation baseline: the same number of steps for every layer."""

    t: int

    def __post_init__(self):
        if self.t < 1:
            raise ValueError(f"constant schedule needs t >= 1, got {self.t}")

    def steps(self, layer: int) -> int:
        return self.t


def time_grid(num_steps: int, t_train: int) -> np.ndarray:
    """(K+1,) descending trained timesteps τ_K = t_train, ..., τ_0 = 0 for K = num_steps steps."""
    if not 1 <= num_steps <= t_train:
        raise ValueError(f"number of denoising steps must be in [1, {t_train}] (trained T), got {num_steps}")
    grid = np.round(np.arange(num_steps, -1, -1) * (t_train / num_steps)).astype(np.int64)
    return grid


def make_schedule(kind: str, t_train: int, l_max: int, t_min: int | None = None, t_max: int | None = None):
    """'linear' (eq. 1; defaults t_min=1, t_max=t_train) or 'constant' (t = t_max or t_train)."""
    t_max = t_train if t_max is None else t_max
    if t_max > t_train:
        raise ValueError(f"t_max={t_max} exceeds the {t_train} steps the model was trained with")
    if kind == "linear":
        return LinearSchedule(t_min=1 if t_min is None else t_min, t_max=t_max, l_max=max(1, l_max))
    if kind == "constant":
        return ConstantSchedule(t=t_max)
    raise ValueError(f"unknown schedule '{kind}' (choose linear or constant)")
