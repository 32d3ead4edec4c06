"""U-Net family: the noise-prediction network of a denoising diffusion model.

"Denoising Diffusion Probabilistic Models", arXiv:2006.11239, with the U-Net of "U-Net:
Convolutional Networks for Biomedical Image Segmentation", arXiv:1505.04597. The timestep t gets a
sinusoidal embedding ``[sin(t w_k), cos(t w_k)]``, ``w_k = 10000^(-k/half)``, followed by an MLP; every
residual block is ``h = conv(silu(GN(x))) + W_t silu(t_emb)``, ``out = skip(x) + conv(silu(GN(h)))``
(GroupNorm, "Group Normalization", arXiv:1803.08494, written out with 4 groups). Each level of the
down path has one block (after a stride-2 convolution from level 1 on); the deepest one is the
bottleneck; the up path upsamples (nearest), concatenates the skip of the same level and applies
a block.
The forward program predicts the noise ``eps_theta(x_t, t)``; the training step draws nothing: it
gets ``(x_0, t, eps)``, forms ``x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps`` with the cosine
schedule ``abar_t = cos^2(pi/2 (t/T + s)/(1 + s))`` ("Improved Denoising Diffusion Probabilistic
Models", arXiv:2102.09672) and minimises ``mean |eps - eps_theta(x_t, t)|^2``
with SGD + momentum (Adam's per-parameter update would push the larger variants past ~2500 HLO nodes).

Names: ``unet-c{channels}-l{levels}-r{resolution}-b{batch}-{fwd|train}``; level i has
``C_i = channels * (i + 1)`` channels, the image has 3 channels.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, optax_train_step

FAMILY = "unet"
IMG_CHANNELS = 3
T_STEPS = 1000
GROUPS = 4


def build(channels: int, levels: int, resolution: int, batch: int, mode: str):
    import math

    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    if mode not in ("fwd", "train"):
        raise ValueError(f"mode must be 'fwd' or 'train', got {mode!r}")

    def sinusoidal(t, dim):  # t: (B,) float -> (B, dim)
        half = dim // 2
        freqs = jnp.exp(-math.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)  # (half,)
        args = t[:, None] * freqs[None, :]
        return jnp.concatenate([jnp.sin(args), jnp.cos(args)], axis=-1)

    class GroupNorm(nn.Module):  # normalise over (H, W, C / G) per group, then a per-channel affine map
        @nn.compact
        def __call__(self, x):  # x: (B, H, W, C)
            b, hgt, wid, c = x.shape
            g = x.reshape(b, hgt, wid, GROUPS, c // GROUPS)  # (B, H, W, G, C/G)
            mean = g.mean(axis=(1, 2, 4), keepdims=True)
            var = jnp.mean(jnp.square(g - mean), axis=(1, 2, 4), keepdims=True)
            g = ((g - mean) * jax.lax.rsqrt(var + 1e-5)).reshape(b, hgt, wid, c)
            return g * self.param("scale", nn.initializers.ones, (c,)) + self.param("bias", nn.initializers.zeros, (c,))

    class ResBlock(nn.Module):
        features: int

        @nn.compact
        def __call__(self, x, temb):  # x: (B, H, W, Cin), temb: (B, E)
            h = nn.Conv(self.features, (3, 3), padding="SAME")(nn.silu(GroupNorm()(x)))
            h = h + nn.Dense(self.features)(nn.silu(temb))[:, None, None, :]  # time conditioning
            h = nn.Conv(self.features, (3, 3), padding="SAME")(nn.silu(GroupNorm()(h)))
            skip = x if x.shape[-1] == self.features else nn.Conv(self.features, (1, 1))(x)
            return skip + h  # (B, H, W, F)

    class UNet(nn.Module):
        @nn.compact
        def __call__(self, x, t):  # x: (B, R, R, 3) noisy image, t: (B,) timesteps
            temb = sinusoidal(t, channels)
            temb = nn.Dense(4 * channels)(nn.silu(nn.Dense(4 * channels)(temb)))  # (B, 4C)
            h = nn.Conv(channels, (3, 3), padding="SAME")(x)  # (B, R, R, C)
            skips = []
            for lvl in range(levels):  # down path
                if lvl > 0:
                    h = nn.Conv(h.shape[-1], (3, 3), strides=2, padding="SAME")(h)  # (B, H/2, W/2, C_{l-1})
                h = ResBlock(channels * (lvl + 1))(h, temb)  # (B, H, W, C_l)
                skips.append(h)
            for lvl in reversed(range(levels - 1)):  # up path (the deepest down block is the bottleneck)
                h = jnp.repeat(jnp.repeat(h, 2, axis=1), 2, axis=2)  # nearest upsampling: (B, 2H, 2W, C_{l+1})
                h = jnp.concatenate([h, skips[lvl]], axis=-1)  # (B, 2H, 2W, C_{l+1} + C_l)
                h = ResBlock(channels * (lvl + 1))(h, temb)  # (B, 2H, 2W, C_l)
            h = nn.silu(GroupNorm()(h))
            return nn.Conv(IMG_CHANNELS, (3, 3), padding="SAME")(h)  # (B, R, R, 3) predicted noise

    model = UNet()
    shape = (batch, resolution, resolution, IMG_CHANNELS)
    x0 = jnp.tanh(jax.random.normal(jax.random.PRNGKey(31), shape, jnp.float32))  # "images" in (-1, 1)
    eps = jax.random.normal(jax.random.PRNGKey(32), shape, jnp.float32)
    t = jax.random.randint(jax.random.PRNGKey(33), (batch,), 0, T_STEPS).astype(jnp.float32)
    params = model.init(jax.random.PRNGKey(0), x0, t)
    if mode == "fwd":

        def forward(params, x_t, t):
            return model.apply(params, x_t, t)  # (B, R, R, 3)

        return forward, (params, x0 + 0.5 * eps, t)

    tx = optax.sgd(1e-3, momentum=0.9)
    opt_state = tx.init(params)

    def loss_fn(params, x0, t, eps):
        s = 0.008
        abar = jnp.cos(0.5 * jnp.pi * (t / T_STEPS + s) / (1 + s)) ** 2  # (B,)
        abar = abar[:, None, None, None]
        x_t = jnp.sqrt(abar) * x0 + jnp.sqrt(1.0 - abar) * eps
        return jnp.mean((model.apply(params, x_t, t) - eps) ** 2)

    return optax_train_step(loss_fn, tx), (params, opt_state, x0, t, eps)


def variants() -> list[ProgramSpec]:
    out = []
    # (resolution, batch) pairs with the same number of pixels
    for g in grid(channels=[8, 12, 16], levels=[2, 3], shape=[(8, 4), (16, 1)], mode=["fwd", "train"]):
        hp = dict(channels=g["channels"], levels=g["levels"], resolution=g["shape"][0], batch=g["shape"][1],
                  mode=g["mode"])
        name = f"unet-c{hp['channels']}-l{hp['levels']}-r{hp['resolution']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
