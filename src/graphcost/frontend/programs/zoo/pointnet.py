"""PointNet family: permutation-invariant networks on point clouds, shape classification.

"PointNet: Deep Learning on Point Sets for 3D Classification and Segmentation" (arXiv:1612.00593):
a small T-Net predicts a 3x3 input transform A (x_i <- x_i (A + I)), a shared per-point MLP
h_i = MLP(x_i) (Dense layers on (B, N, .) of widths w, 2w, 4w) and a symmetric pooling
g = pool_i h_i feed a classifier head. Pooling kinds:

- ``max``: g = max_i h_i (PointNet);
- ``mean``: g = mean_i h_i (Deep Sets, arXiv:1703.06114);
- ``attn``: the decoder of the "Set Transformer" (arXiv:1810.00825): pooling by multi-head
  attention PMA_k(H) = MAB(S, H) with k = ``SEEDS`` learned seed vectors S attending over all
  points, then a set-attention block SAB(Z) = MAB(Z, Z) among the k pooled vectors, averaged:
  g = mean_k SAB(PMA_k(H)); MAB(X, Y) = LN(A + relu(Dense(A))), A = LN(X + Multihead(X, Y, Y)),
  attention written out as softmax(Q K^T / sqrt(d_head)) V.

Training: softmax cross-entropy (Adam).

Names: ``pointnet-{max|mean|attn}-n{points}-w{width}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "pointnet"
N_CLASSES, HEADS, SEEDS = 10, 4, 4


def build(pool: str, points: int, width: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    def dense(features: int, x):  # Dense on the last axis of (..., F), applied to the flattened (rows, F) matrix
        # (the kernel gradient of a rank-3 dot contracts two axes, which XLA:CPU runs ~5x slower)
        return nn.Dense(features)(x.reshape(-1, x.shape[-1])).reshape(*x.shape[:-1], features)

    class MAB(nn.Module):  # multihead attention block of the Set Transformer
        @nn.compact
        def __call__(self, x, y):  # x: (B, Nx, D) queries, y: (B, Ny, D) keys / values -> (B, Nx, D)
            b, nx, d = x.shape
            ny, dh = y.shape[1], d // HEADS
            q = dense(d, x).reshape(b, nx, HEADS, dh)
            k = dense(d, y).reshape(b, ny, HEADS, dh)
            v = dense(d, y).reshape(b, ny, HEADS, dh)
            att = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(dh).astype(x.dtype), axis=-1)
            h = nn.LayerNorm()(x + jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, nx, d))
            return nn.LayerNorm()(h + nn.relu(dense(d, h)))

    class PointNet(nn.Module):
        @nn.compact
        def __call__(self, pts):  # pts: (B, N, 3)
            b = pts.shape[0]
            t = jnp.max(nn.relu(dense(width, pts)), axis=1)  # T-Net: (B, w)
            a = nn.Dense(9, kernel_init=nn.initializers.zeros)(t).reshape(b, 3, 3) + jnp.eye(3, dtype=pts.dtype)
            x = jnp.einsum("bnc,bcd->bnd", pts, a)  # aligned points: (B, N, 3)
            for f in (width, 2 * width, 4 * width):  # shared per-point MLP
                x = nn.relu(dense(f, x))  # (B, N, f)
            if pool == "max":
                g = jnp.max(x, axis=1)  # (B, 4w)
            elif pool == "mean":
                g = jnp.mean(x, axis=1)
            else:
                d = x.shape[-1]
                seeds = self.param("seeds", nn.initializers.normal(1.0), (1, SEEDS, d))
                z = MAB()(jnp.broadcast_to(seeds, (b, SEEDS, d)), x)  # PMA: (B, k, 4w)
                g = jnp.mean(MAB()(z, z), axis=1)  # SAB over the k pooled vectors, mean: (B, 4w)
            return nn.Dense(N_CLASSES)(nn.relu(nn.Dense(2 * width)(g)))  # (B, N_CLASSES)

    kx, ky = jax.random.split(jax.random.PRNGKey(71))
    direction = jax.random.normal(kx, (batch, points, 3), jnp.float32)
    pts = direction / jnp.linalg.norm(direction, axis=-1, keepdims=True)  # points on unit spheres
    pts = pts * jnp.linspace(0.5, 1.5, batch)[:, None, None]
    y = jax.random.randint(ky, (batch,), 0, N_CLASSES, jnp.int32)
    return make_program(PointNet(), (pts,), y, mode, loss="xent", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(pool=["max", "mean", "attn"], points=[128, 512], width=[16, 32], mode=["fwd", "train"]):
        hp = {"pool": hp["pool"], "points": hp["points"], "width": hp["width"],
              "batch": 8 if hp["points"] == 128 else 4, "mode": hp["mode"]}
        name = f"pointnet-{hp['pool']}-n{hp['points']}-w{hp['width']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
