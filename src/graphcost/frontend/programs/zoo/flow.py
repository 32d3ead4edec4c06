"""Flow family: RealNVP normalising flows on vectors (affine coupling layers).

"Density estimation using Real NVP", arXiv:1605.08803. Each affine coupling layer keeps one half
of the features and transforms the other: ``y_a = x_a``, ``y_b = x_b * exp(s(x_a)) + t(x_a)``, with
``s, t`` from an MLP (two hidden ReLU layers, ``s`` squashed by tanh) and
``log|det J| = sum s(x_a)``. Successive layers alternate which half is transformed, and a fixed
random permutation of the features (volume preserving) follows every layer but the last. The
log-likelihood is ``log p(x) = log N(f(x); 0, I) + sum_layers log|det J|``. The forward program
returns ``log p(x)`` per sample; the training step minimises the mean negative log-likelihood
per dimension with Adam.

Names: ``flow-k{couplings}-d{dim}-h{hidden}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, optax_train_step

FAMILY = "flow"


def build(couplings: int, dim: int, hidden: int, batch: int, mode: str):
    import math

    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    if mode not in ("fwd", "train"):
        raise ValueError(f"mode must be 'fwd' or 'train', got {mode!r}")
    half = dim // 2
    perms = [np.random.RandomState(100 + k).permutation(dim) for k in range(couplings - 1)]  # fixed permutations

    class AffineCoupling(nn.Module):
        flip: bool  # transform the first half (conditioned on the second) instead of the second

        @nn.compact
        def __call__(self, x):  # x: (B, D)
            x_a, x_b = (x[:, half:], x[:, :half]) if self.flip else (x[:, :half], x[:, half:])  # (B, D/2) each
            h = nn.relu(nn.Dense(hidden)(x_a))
            h = nn.relu(nn.Dense(hidden)(h))  # (B, hidden)
            st = nn.Dense(2 * half, kernel_init=nn.initializers.normal(0.01))(h)  # (B, D): [s, t]
            s, t = jnp.tanh(st[:, :half]), st[:, half:]
            y_b = x_b * jnp.exp(s) + t
            y = jnp.concatenate([y_b, x_a] if self.flip else [x_a, y_b], axis=-1)  # (B, D)
            return y, jnp.sum(s, axis=-1)  # (B, D), (B,) log|det J|

    class RealNVP(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, D) -> log p(x): (B,)
            logdet = jnp.zeros(x.shape[:1], x.dtype)
            for k in range(couplings):
                x, ld = AffineCoupling(flip=k % 2 == 1)(x)
                logdet = logdet + ld
                if k < couplings - 1:
                    x = jnp.take(x, jnp.asarray(perms[k]), axis=1)  # fixed permutation, log|det| = 0
            log_base = -0.5 * jnp.sum(x**2, axis=-1) - 0.5 * dim * math.log(2 * math.pi)
            return log_base + logdet

    model = RealNVP()
    key = jax.random.PRNGKey(51)
    g = jax.random.normal(key, (batch, dim), jnp.float32)
    x = jnp.sinh(g) + 0.5 * jnp.roll(g, 1, axis=1) ** 2  # fixed non-Gaussian data, (B, D)
    params = model.init(jax.random.PRNGKey(0), x)
    if mode == "fwd":

        def forward(params, x):
            return model.apply(params, x)  # (B,) log-likelihoods

        return forward, (params, x)

    tx = optax.adam(1e-3)
    opt_state = tx.init(params)

    def nll(params, x):
        return -jnp.mean(model.apply(params, x)) / dim  # nats per dimension

    return optax_train_step(nll, tx), (params, opt_state, x)


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(couplings=[4, 8], dim=[16, 64], hidden=[64, 128], batch=[4, 16], mode=["fwd", "train"]):
        name = f"flow-k{hp['couplings']}-d{hp['dim']}-h{hp['hidden']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
