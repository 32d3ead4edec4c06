"""Deconv family: DCGAN-style generators built from transposed convolutions.

"Unsupervised Representation Learning with Deep Convolutional Generative Adversarial Networks"
(DCGAN), arXiv:1511.06434. A latent vector is projected to a 4x4 feature map,
``h_0 = reshape(W z)``, and upsampled by stride-2 k x k transposed convolutions (DCGAN: k = 4),
``h_{i+1} = relu(BN(ConvT(h_i)))``, halving the channels each time; the last one outputs 3 channels
through tanh. BN normalises with the statistics of the current batch (as a GAN generator in
training mode does) with a learned per-channel scale and bias, and keeps no running state. The
forward program generates a batch of images; the training step fits them to a fixed target batch
(pixel MSE) with Adam.

Names: ``deconv-z{latent}-c{channels}-k{kernel}-r{resolution}-b{batch}-{fwd|train}``; ``log2(resolution / 4)``
transposed convolutions, the 4x4 map has ``channels * resolution / 8`` channels (the last hidden
layer has ``channels``). The kernel gradients of transposed convolutions are slow on XLA:CPU, hence
the small batch.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "deconv"


def build(latent: int, channels: int, kernel: int, resolution: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    ups = (resolution // 4).bit_length() - 1  # number of stride-2 transposed convolutions

    class BatchStatNorm(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, H, W, C), normalised over (B, H, W)
            mean = jnp.mean(x, axis=(0, 1, 2))
            var = jnp.mean(jnp.square(x - mean), axis=(0, 1, 2))
            x = (x - mean) * jax.lax.rsqrt(var + 1e-5)
            c = x.shape[-1]
            return x * self.param("scale", nn.initializers.ones, (c,)) + self.param("bias", nn.initializers.zeros, (c,))

    class Generator(nn.Module):
        @nn.compact
        def __call__(self, z):  # z: (B, latent)
            c0 = channels * 2 ** (ups - 1)
            h = nn.Dense(4 * 4 * c0, use_bias=False)(z).reshape(-1, 4, 4, c0)  # (B, 4, 4, C0)
            h = nn.relu(BatchStatNorm()(h))
            for i in range(ups - 1):  # (B, S, S, C) -> (B, 2S, 2S, C/2)
                h = nn.ConvTranspose(c0 // 2 ** (i + 1), (kernel, kernel), strides=(2, 2), padding="SAME",
                                     use_bias=False)(h)
                h = nn.relu(BatchStatNorm()(h))
            h = nn.ConvTranspose(3, (kernel, kernel), strides=(2, 2), padding="SAME")(h)  # (B, R, R, 3)
            return jnp.tanh(h)

    z = jax.random.normal(jax.random.PRNGKey(61), (batch, latent), jnp.float32)
    target = jax.random.uniform(jax.random.PRNGKey(62), (batch, resolution, resolution, 3), jnp.float32, -1.0, 1.0)
    return make_program(Generator(), (z,), target, mode, loss="mse", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(latent=[16, 64], channels=[8, 16], kernel=[2, 4], resolution=[16, 32], batch=[2], mode=["fwd", "train"]):
        name = (f"deconv-z{hp['latent']}-c{hp['channels']}-k{hp['kernel']}-r{hp['resolution']}-b{hp['batch']}"
                f"-{hp['mode']}")
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
