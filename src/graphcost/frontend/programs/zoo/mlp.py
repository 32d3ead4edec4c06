"""MLP family: a stack of Dense + GELU layers with a classification head.

Names: ``mlp-d{depth}-w{width}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "mlp"
IN_DIM, N_CLASSES = 128, 10


def build(depth: int, width: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, IN_DIM)
            for _ in range(depth):
                x = nn.gelu(nn.Dense(width)(x))
            return nn.Dense(N_CLASSES)(x)  # (B, N_CLASSES)

    key = jax.random.PRNGKey(1)
    x = jax.random.normal(key, (batch, IN_DIM), jnp.float32)
    y = jax.random.randint(key, (batch,), 0, N_CLASSES)
    return make_program(MLP(), (x,), y, mode, loss="xent", optimizer="sgd")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(depth=[1, 2, 3, 4, 6, 8], width=[64, 128, 256, 512], batch=[8, 32, 128], mode=["fwd", "train"]):
        name = f"mlp-d{hp['depth']}-w{hp['width']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
