"""FNO family: Fourier neural operators on a periodic 1-D or 2-D grid, field-to-field regression.

"Fourier Neural Operator for Parametric Partial Differential Equations" (arXiv:2010.08895).
Each Fourier layer is v' = gelu(F^-1(R . T_k(F v)) + W v): a real FFT over the grid axes
(``jnp.fft.rfft`` / ``rfftn``), truncation T_k to the lowest `modes` frequencies, a learned complex
channel mixing per retained mode (an einsum with complex weights R), zero padding back to the full
spectrum, the inverse FFT, plus a pointwise linear path W. In 2-D the two lowest-frequency corners
along the first (full-spectrum) axis are kept, each with its own weights. A Dense lift (input
field + grid coordinates -> width) precedes the layers and a two-layer Dense projection maps back
to one output channel. Training: MSE to a target field (Adam).

Names: ``fno-{1d|2d}-r{resolution}-w{width}-m{modes}-l{layers}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "fno"
IN_CH = 2  # input field channels (coordinates are appended)


def build(ndim: int, resolution: int, width: int, modes: int, layers: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    def cparam(module, name, shape):  # complex weights from two float32 parameters
        scale = 1.0 / (shape[-2] * shape[-1])
        re = module.param(name + "_re", nn.initializers.uniform(scale), shape)
        im = module.param(name + "_im", nn.initializers.uniform(scale), shape)
        return jax.lax.complex(re, im)

    def dense(features: int, x):  # pointwise Dense on (..., F) as a (rows, F) matmul
        # (the kernel gradient of a rank>2 dot contracts several axes, which XLA:CPU runs several times slower)
        return nn.Dense(features)(x.reshape(-1, x.shape[-1])).reshape(*x.shape[:-1], features)

    class Spectral1d(nn.Module):
        @nn.compact
        def __call__(self, v):  # v: (B, R, W)
            r, c = v.shape[1], v.shape[2]
            w = cparam(self, "w", (modes, c, c))  # (M, W, W) complex
            f = jnp.fft.rfft(v, axis=1)  # (B, R//2+1, W) complex
            low = jnp.einsum("bmi,mio->bmo", f[:, :modes], w)  # (B, M, W)
            f = jnp.pad(low, ((0, 0), (0, r // 2 + 1 - modes), (0, 0)))  # (B, R//2+1, W)
            return jnp.fft.irfft(f, n=r, axis=1)  # (B, R, W) real

    class Spectral2d(nn.Module):
        @nn.compact
        def __call__(self, v):  # v: (B, R, R, W)
            r, c = v.shape[1], v.shape[3]
            w1 = cparam(self, "w1", (modes, modes, c, c))  # (M, M, W, W) complex: positive corner
            w2 = cparam(self, "w2", (modes, modes, c, c))  # negative-frequency corner
            f = jnp.fft.rfftn(v, axes=(1, 2))  # (B, R, R//2+1, W) complex
            top = jnp.einsum("bxyi,xyio->bxyo", f[:, :modes, :modes], w1)  # (B, M, M, W)
            bot = jnp.einsum("bxyi,xyio->bxyo", f[:, r - modes:, :modes], w2)  # (B, M, M, W)
            mid = jnp.zeros((v.shape[0], r - 2 * modes, modes, c), f.dtype)
            g = jnp.concatenate([top, mid, bot], axis=1)  # (B, R, M, W)
            g = jnp.pad(g, ((0, 0), (0, 0), (0, r // 2 + 1 - modes), (0, 0)))  # (B, R, R//2+1, W)
            return jnp.fft.irfftn(g, s=(r, r), axes=(1, 2))  # (B, R, R, W) real

    class FNO(nn.Module):
        @nn.compact
        def __call__(self, u):  # u: (B, R, IN_CH) or (B, R, R, IN_CH)
            axes = [jnp.linspace(0.0, 1.0, resolution, dtype=u.dtype)] * ndim
            coords = jnp.stack(jnp.meshgrid(*axes, indexing="ij"), axis=-1)  # (R[, R], ndim)
            coords = jnp.broadcast_to(coords, (u.shape[0], *coords.shape))
            v = dense(width, jnp.concatenate([u, coords], axis=-1))  # lift: (B, R[, R], W)
            for i in range(layers):
                spec = (Spectral1d() if ndim == 1 else Spectral2d())(v)
                v = spec + dense(width, v)
                if i < layers - 1:
                    v = nn.gelu(v)
            return dense(1, nn.gelu(dense(2 * width, v)))  # (B, R[, R], 1)

    key_u, key_y = jax.random.split(jax.random.PRNGKey(21))
    shape = (batch, *([resolution] * ndim))
    u = jax.random.normal(key_u, (*shape, IN_CH), jnp.float32)
    y = jax.random.normal(key_y, (*shape, 1), jnp.float32)
    return make_program(FNO(), (u,), y, mode, loss="mse", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    # modes = resolution / 8; batch 4 (1-D) or 2 (2-D).
    for hp in grid(ndim=[1], resolution=[64, 128], width=[16, 32], layers=[2, 4], mode=["fwd", "train"]):
        out.append({**hp, "modes": hp["resolution"] // 8, "batch": 4})
    for hp in grid(ndim=[2], resolution=[16, 32], width=[8, 16], layers=[2, 3], mode=["fwd", "train"]):
        out.append({**hp, "modes": hp["resolution"] // 8, "batch": 2})
    specs = []
    for hp in out:
        hp = {k: hp[k] for k in ("ndim", "resolution", "width", "modes", "layers", "batch", "mode")}
        name = (f"fno-{hp['ndim']}d-r{hp['resolution']}-w{hp['width']}-m{hp['modes']}-l{hp['layers']}"
                f"-b{hp['batch']}-{hp['mode']}")
        specs.append(ProgramSpec(name, FAMILY, hp, build))
    return specs
