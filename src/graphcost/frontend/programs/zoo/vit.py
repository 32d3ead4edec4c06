"""ViT family: Vision Transformer image classifiers.

"An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale", arXiv:2010.11929.
The image is cut into non-overlapping p x p patches (reshape + transpose) that are embedded linearly,
a learned class token is prepended and learned position embeddings are added:
``z_0 = [x_cls; x_p^1 E; ...; x_p^N E] + E_pos``. Pre-LayerNorm encoder blocks
``z' = z + MSA(LN(z))``, ``z = z' + MLP(LN(z'))`` (MLP ratio 4, GELU; attention heads of width 16,
written out with `nn.DenseGeneral` projections), and a linear head on ``LN(z_L^0)`` (the class token).

Names: ``vit-p{patch}-d{dim}-l{layers}-r{resolution}-b{batch}-{fwd|train}`` (``heads = dim // 16``).
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "vit"
N_CLASSES = 10
HEAD_DIM = 16


def build(patch: int, dim: int, layers: int, resolution: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    heads = dim // HEAD_DIM

    class Attention(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, T, D)
            q = nn.DenseGeneral((heads, HEAD_DIM), name="query")(x)  # (B, T, H, Dh)
            k = nn.DenseGeneral((heads, HEAD_DIM), name="key")(x)
            v = nn.DenseGeneral((heads, HEAD_DIM), name="value")(x)
            scores = jnp.einsum("bthd,bshd->bhts", q * HEAD_DIM**-0.5, k)  # (B, H, T, T)
            ctx = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(scores, axis=-1), v)  # (B, T, H, Dh)
            return nn.DenseGeneral(dim, axis=(-2, -1), name="out")(ctx)  # (B, T, D)

    class EncoderBlock(nn.Module):
        @nn.compact
        def __call__(self, z):  # z: (B, T, D)
            z = z + Attention()(nn.LayerNorm()(z))
            h = nn.gelu(nn.Dense(4 * dim)(nn.LayerNorm()(z)))  # (B, T, 4D)
            return z + nn.Dense(dim)(h)

    class ViT(nn.Module):
        @nn.compact
        def __call__(self, img):  # img: (B, R, R, 3)
            b, r = img.shape[0], img.shape[1]
            g = r // patch
            x = img.reshape(b, g, patch, g, patch, 3).transpose(0, 1, 3, 2, 4, 5)  # (B, R/p, R/p, p, p, 3)
            x = nn.Dense(dim)(x.reshape(b, g * g, patch * patch * 3))  # (B, N, D), N = (R/p)^2
            cls = self.param("cls", nn.initializers.zeros, (1, 1, dim))
            z = jnp.concatenate([jnp.broadcast_to(cls, (b, 1, dim)), x], axis=1)  # (B, N+1, D)
            z = z + self.param("pos", nn.initializers.normal(0.02), (1, z.shape[1], dim))
            for _ in range(layers):
                z = EncoderBlock()(z)
            return nn.Dense(N_CLASSES)(nn.LayerNorm()(z[:, 0]))  # (B, N_CLASSES)

    img = jax.random.normal(jax.random.PRNGKey(21), (batch, resolution, resolution, 3), jnp.float32)
    y = jax.random.randint(jax.random.PRNGKey(22), (batch,), 0, N_CLASSES)
    return make_program(ViT(), (img,), y, mode, loss="xent", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    # (resolution, batch) pairs: small images in larger batches
    for g in grid(patch=[4, 8], dim=[32, 64], layers=[1, 2], shape=[(16, 4), (32, 1)], mode=["fwd", "train"]):
        hp = dict(patch=g["patch"], dim=g["dim"], layers=g["layers"], resolution=g["shape"][0], batch=g["shape"][1],
                  mode=g["mode"])
        name = f"vit-p{hp['patch']}-d{hp['dim']}-l{hp['layers']}-r{hp['resolution']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
