"""Recurrent family: LSTM and GRU language-style regressors, unrolled over time.

The time loop is a Python loop (unrolled in the HLO) so every step's dots and reshapes are
separate, configurable graph nodes. Cells follow Hochreiter & Schmidhuber (LSTM: i, f, g, o
gates; c' = f*c + i*g, h' = o*tanh(c')) and Cho et al. (GRU: r, z gates; h' = (1-z)*n + z*h).

Names: ``{lstm|gru}-l{layers}-h{hidden}-s{seq}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

IN_DIM = 32


def build(cell: str, layers: int, hidden: int, seq: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class LSTMLayer(nn.Module):
        @nn.compact
        def __call__(self, xs):  # xs: (B, S, F) -> (B, S, H)
            wx, wh = nn.Dense(4 * hidden), nn.Dense(4 * hidden, use_bias=False)
            h = c = jnp.zeros((xs.shape[0], hidden), xs.dtype)
            outs = []
            for t in range(xs.shape[1]):
                i, f, g, o = jnp.split(wx(xs[:, t]) + wh(h), 4, axis=-1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                outs.append(h)
            return jnp.stack(outs, axis=1)

    class GRULayer(nn.Module):
        @nn.compact
        def __call__(self, xs):  # xs: (B, S, F) -> (B, S, H)
            wx, wh = nn.Dense(3 * hidden), nn.Dense(3 * hidden, use_bias=False)
            h = jnp.zeros((xs.shape[0], hidden), xs.dtype)
            outs = []
            for t in range(xs.shape[1]):
                xr, xz, xn = jnp.split(wx(xs[:, t]), 3, axis=-1)
                hr, hz, hn = jnp.split(wh(h), 3, axis=-1)
                r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
                n = jnp.tanh(xn + r * hn)
                h = (1.0 - z) * n + z * h
                outs.append(h)
            return jnp.stack(outs, axis=1)

    class RNN(nn.Module):
        @nn.compact
        def __call__(self, xs):
            for _ in range(layers):
                xs = (LSTMLayer() if cell == "lstm" else GRULayer())(xs)
            return nn.Dense(1)(xs.reshape(xs.shape[0], -1))[:, 0]  # (B,)

    key = jax.random.PRNGKey(4)
    xs = jax.random.normal(key, (batch, seq, IN_DIM), jnp.float32)
    y = jax.random.normal(key, (batch,), jnp.float32)
    return make_program(RNN(), (xs,), y, mode, loss="mse", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(cell=["lstm", "gru"], layers=[1, 2], hidden=[32, 64, 128], seq=[4, 8, 16], batch=[4, 16, 64], mode=["fwd", "train"]):
        name = f"{hp['cell']}-l{hp['layers']}-h{hp['hidden']}-s{hp['seq']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, hp["cell"], hp, build))
    return out
