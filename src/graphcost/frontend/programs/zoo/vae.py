"""VAE family: variational autoencoders on small one-channel images, with a conv or an MLP encoder/decoder.

"Auto-Encoding Variational Bayes", arXiv:1312.6114. The encoder maps x to the mean and log-variance
of ``q(z|x) = N(mu, diag(exp(logvar)))``; a sample is drawn by reparameterisation
``z = mu + exp(logvar / 2) * eps``, ``eps ~ N(0, I)`` from a fixed PRNG key passed as an argument;
the decoder gives Bernoulli logits of ``p(x|z)``. The negative ELBO is
``sum_pixels BCE(logits, x) + KL(q(z|x) || N(0, I))``, ``KL = -1/2 sum(1 + logvar - mu^2 - exp(logvar))``,
averaged over the batch. The forward program returns ``(logits, mu, logvar)``; the training step
minimises the negative ELBO with Adam.

Encoder / decoder: ``conv``: two stride-2 3x3 convolutions (C, 2C channels) -> Dense(2 z);
Dense -> (R/4, R/4, 2C) -> two (nearest x2 upsampling + 3x3 convolution). ``mlp``: two Dense(H)
layers each way.

Names: ``vae-conv-z{latent}-c{channels}-r{resolution}-b{batch}-{fwd|train}`` and
``vae-mlp-z{latent}-h{hidden}-r{resolution}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, optax_train_step

FAMILY = "vae"


def build(arch: str, latent: int, width: int, resolution: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    if mode not in ("fwd", "train"):
        raise ValueError(f"mode must be 'fwd' or 'train', got {mode!r}")
    r4 = resolution // 4

    class ConvEncoder(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, R, R, 1)
            h = nn.silu(nn.Conv(width, (3, 3), strides=2, padding="SAME")(x))  # (B, R/2, R/2, C)
            h = nn.silu(nn.Conv(2 * width, (3, 3), strides=2, padding="SAME")(h))  # (B, R/4, R/4, 2C)
            return nn.Dense(2 * latent)(h.reshape(h.shape[0], -1))  # (B, 2z)

    class ConvDecoder(nn.Module):
        @nn.compact
        def __call__(self, z):  # z: (B, z)
            h = nn.silu(nn.Dense(r4 * r4 * 2 * width)(z)).reshape(-1, r4, r4, 2 * width)  # (B, R/4, R/4, 2C)
            h = jnp.repeat(jnp.repeat(h, 2, axis=1), 2, axis=2)  # (B, R/2, R/2, 2C)
            h = nn.silu(nn.Conv(width, (3, 3), padding="SAME")(h))  # (B, R/2, R/2, C)
            h = jnp.repeat(jnp.repeat(h, 2, axis=1), 2, axis=2)  # (B, R, R, C)
            return nn.Conv(1, (3, 3), padding="SAME")(h)  # (B, R, R, 1) logits

    class MLPEncoder(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, R, R, 1)
            h = x.reshape(x.shape[0], -1)  # (B, R*R)
            h = nn.silu(nn.Dense(width)(h))
            h = nn.silu(nn.Dense(width)(h))  # (B, H)
            return nn.Dense(2 * latent)(h)  # (B, 2z)

    class MLPDecoder(nn.Module):
        @nn.compact
        def __call__(self, z):  # z: (B, z)
            h = nn.silu(nn.Dense(width)(z))
            h = nn.silu(nn.Dense(width)(h))  # (B, H)
            return nn.Dense(resolution * resolution)(h).reshape(-1, resolution, resolution, 1)  # (B, R, R, 1)

    class VAE(nn.Module):
        @nn.compact
        def __call__(self, x, key):  # x: (B, R, R, 1) in {0, 1}; key: PRNG key
            stats = (ConvEncoder() if arch == "conv" else MLPEncoder())(x)
            mu, logvar = stats[:, :latent], stats[:, latent:]  # (B, z) each
            eps = jax.random.normal(key, mu.shape, mu.dtype)
            z = mu + jnp.exp(0.5 * logvar) * eps  # reparameterisation
            logits = (ConvDecoder() if arch == "conv" else MLPDecoder())(z)
            return logits, mu, logvar

    model = VAE()
    x = (jax.random.uniform(jax.random.PRNGKey(41), (batch, resolution, resolution, 1)) < 0.3).astype(jnp.float32)
    key = jax.random.PRNGKey(42)  # the sampling key, an argument of the program
    params = model.init(jax.random.PRNGKey(0), x, key)
    if mode == "fwd":

        def forward(params, x, key):
            return model.apply(params, x, key)  # ((B, R, R, 1), (B, z), (B, z))

        return forward, (params, x, key)

    tx = optax.adam(1e-3)
    opt_state = tx.init(params)

    def neg_elbo(params, x, key):
        logits, mu, logvar = model.apply(params, x, key)
        bce = jnp.sum(jax.nn.softplus(logits) - x * logits, axis=(1, 2, 3))  # -log p(x|z), (B,)
        kl = -0.5 * jnp.sum(1.0 + logvar - mu**2 - jnp.exp(logvar), axis=-1)  # (B,)
        return jnp.mean(bce + kl)

    return optax_train_step(neg_elbo, tx), (params, opt_state, x, key)


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(arch=["conv"], latent=[8, 32], width=[8, 16], resolution=[16, 32], batch=[4],
                   mode=["fwd", "train"]):
        name = f"vae-conv-z{hp['latent']}-c{hp['width']}-r{hp['resolution']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    for hp in grid(arch=["mlp"], latent=[8, 32], width=[128, 256], resolution=[28], batch=[4, 16], mode=["fwd", "train"]):
        name = f"vae-mlp-z{hp['latent']}-h{hp['width']}-r{hp['resolution']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
