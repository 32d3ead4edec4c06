"""CNN family: ResNet-style networks (conv + BatchNorm-free GroupNorm + residual blocks).

Names: ``cnn-s{stages}-c{channels}-r{resolution}-b{batch}-{fwd|train}``. Each stage has two
residual blocks of two 3x3 convolutions; stages after the first downsample by 2 and double channels.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "cnn"
N_CLASSES = 10


def build(stages: int, channels: int, resolution: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class Block(nn.Module):
        features: int
        stride: int

        @nn.compact
        def __call__(self, x):  # x: (B, H, W, C) NHWC
            y = nn.Conv(self.features, (3, 3), strides=self.stride, padding="SAME")(x)
            y = nn.relu(nn.GroupNorm(num_groups=4)(y))
            y = nn.Conv(self.features, (3, 3), padding="SAME")(y)
            if x.shape[-1] != self.features or self.stride != 1:  # projection shortcut
                x = nn.Conv(self.features, (1, 1), strides=self.stride)(x)
            return nn.relu(x + y)

    class ResNet(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, R, R, 3)
            x = nn.relu(nn.Conv(channels, (3, 3), padding="SAME")(x))
            for s in range(stages):
                feats = channels * 2**s
                x = Block(feats, 1 if s == 0 else 2)(x)
                x = Block(feats, 1)(x)
            x = jnp.mean(x, axis=(1, 2))  # global average pool -> (B, C)
            return nn.Dense(N_CLASSES)(x.reshape(x.shape[0], -1))

    key = jax.random.PRNGKey(2)
    x = jax.random.normal(key, (batch, resolution, resolution, 3), jnp.float32)
    y = jax.random.randint(key, (batch,), 0, N_CLASSES)
    return make_program(ResNet(), (x,), y, mode, loss="xent", optimizer="sgd")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(stages=[1, 2, 3], channels=[8, 16, 32], resolution=[16, 32], batch=[2, 8, 32], mode=["fwd", "train"]):
        name = f"cnn-s{hp['stages']}-c{hp['channels']}-r{hp['resolution']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
