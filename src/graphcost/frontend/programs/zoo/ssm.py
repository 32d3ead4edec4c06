"""State-space family: gated diagonal linear SSM sequence classifiers (S4D / Mamba style).

On the Parameterization and Initialization of Diagonal State Space Models (S4D, arXiv:2206.11893)
and Mamba: Linear-Time Sequence Modeling with Selective State Spaces (arXiv:2312.00752). Per
channel c and state n the recurrence is h_t = exp(dt_c A_cn) h_{t-1} + dt_c B_n x_t,
y_t = sum_n C_n h_tn + D_c x_t, with A = -exp(A_log) (S4D-Real init A_cn = -(n+1)). ``s4d``: dt, B
and C are learned constants (time-invariant). ``sel`` (selective, Mamba): x first goes through a
depthwise causal conv (width 4, as shifted multiply-adds) and SiLU, then dt_t = softplus(x_t W_dt + b), B_t = x_t W_B and
C_t = x_t W_C depend on the input. Each layer: [x, z] = in_proj(LN(u)) (D -> 2E, E = 2D),
SSM over x, y * silu(z), out_proj (E -> D), residual. The recurrence runs either with
``jax.lax.scan`` over time (``scan``) or with ``jax.lax.associative_scan`` on the pairs
(a, b) o (a', b') = (a a', a' b + b') (``assoc``). Input features (B, S, 16) are embedded by a
dense layer; the head mean-pools over time into 10 classes; training: cross-entropy, adam.

Names: ``ssm-{s4d|sel}-{scan|assoc}-l{layers}-d{d_model}-n{state}-s{seq}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "ssm"
IN_DIM, N_CLASSES, CONV_WIDTH = 16, 10, 4


def build(variant: str, method: str, layers: int, d_model: int, state: int, seq: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    inner = 2 * d_model  # E
    dt_rank = max(4, d_model // 16)

    def recurrence(decay, drive):
        """decay, drive: (B, S, E, N) -> h: (B, S, E, N) with h_t = decay_t * h_{t-1} + drive_t, h_{-1} = 0."""
        if method == "assoc":
            def combine(left, right):
                return left[0] * right[0], right[0] * left[1] + right[1]

            return jax.lax.associative_scan(combine, (decay, drive), axis=1)[1]

        def step(h, inputs):  # h: (B, E, N)
            a, b = inputs
            h = a * h + b
            return h, h

        h0 = jnp.zeros((decay.shape[0], inner, state), decay.dtype)
        _, hs = jax.lax.scan(step, h0, (jnp.swapaxes(decay, 0, 1), jnp.swapaxes(drive, 0, 1)))  # (S, B, E, N)
        return jnp.swapaxes(hs, 0, 1)

    def a_log_init(key, shape):  # S4D-Real: A_cn = -(n + 1)
        return jnp.log(jnp.broadcast_to(jnp.arange(1, shape[1] + 1, dtype=jnp.float32), shape))

    class SSMLayer(nn.Module):
        @nn.compact
        def __call__(self, u):  # u: (B, S, D) -> (B, S, D)
            b, s, _ = u.shape
            xz = nn.Dense(2 * inner, use_bias=False, name="in_proj")(nn.LayerNorm()(u))  # (B, S, 2E)
            x, z = xz[..., :inner], xz[..., inner:]  # (B, S, E) each
            a = -jnp.exp(self.param("A_log", a_log_init, (inner, state)))  # (E, N)
            if variant == "sel":
                # depthwise causal conv as shifted multiply-adds: x'_t = sum_j w_j x_{t-j} + b (XLA:CPU's
                # grouped convolution is slow at these sizes)
                w = self.param("conv_w", nn.initializers.normal(0.5), (CONV_WIDTH, inner))  # (W, E)
                xp = jnp.pad(x, ((0, 0), (CONV_WIDTH - 1, 0), (0, 0)))  # (B, S + W - 1, E)
                x = sum(xp[:, CONV_WIDTH - 1 - j:CONV_WIDTH - 1 - j + s] * w[j] for j in range(CONV_WIDTH))
                x = nn.silu(x + self.param("conv_b", nn.initializers.zeros, (inner,)))  # (B, S, E)
                proj = nn.Dense(dt_rank + 2 * state, use_bias=False, name="x_proj")(x)  # (B, S, R + 2N)
                dt_low, b_t, c_t = jnp.split(proj, [dt_rank, dt_rank + state], axis=-1)  # (B,S,R), (B,S,N), (B,S,N)
                dt = nn.softplus(nn.Dense(inner, name="dt_proj")(dt_low))  # (B, S, E)
                decay = jnp.exp(dt[..., None] * a)  # (B, S, E, N)
                drive = (dt * x)[..., None] * b_t[:, :, None, :]  # (B, S, E, N)
                h = recurrence(decay, drive)
                y = jnp.einsum("bsen,bsn->bse", h, c_t)  # (B, S, E)
            else:
                log_dt = self.param("log_dt", nn.initializers.uniform(2.0), (inner,))  # dt in [e^-4.6, e^-2.6]
                dt = jnp.exp(log_dt - 4.6)  # (E,)
                bmat = self.param("B", nn.initializers.ones, (inner, state))  # (E, N)
                cmat = self.param("C", nn.initializers.normal(0.5), (inner, state))  # (E, N)
                decay = jnp.broadcast_to(jnp.exp(dt[:, None] * a), (b, s, inner, state))  # (B, S, E, N)
                drive = (x * dt)[..., None] * bmat  # (B, S, E, N)
                h = recurrence(decay, drive)
                y = jnp.einsum("bsen,en->bse", h, cmat)  # (B, S, E)
            y = y + x * self.param("D", nn.initializers.ones, (inner,))
            y = y * nn.silu(z)  # gate
            return u + nn.Dense(d_model, use_bias=False, name="out_proj")(y)

    class SSMClassifier(nn.Module):
        @nn.compact
        def __call__(self, feats):  # feats: (B, S, IN_DIM)
            u = nn.Dense(d_model, name="embed")(feats)  # (B, S, D)
            for _ in range(layers):
                u = SSMLayer()(u)
            return nn.Dense(N_CLASSES, name="head")(nn.LayerNorm()(u).mean(axis=1))  # (B, N_CLASSES)

    key = jax.random.PRNGKey(13)
    feats = jax.random.normal(key, (batch, seq, IN_DIM), jnp.float32)
    labels = jax.random.randint(key, (batch,), 0, N_CLASSES)
    return make_program(SSMClassifier(), (feats,), labels, mode, loss="xent", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(variant=["s4d", "sel"], method=["scan", "assoc"], size=[(1, 32, 8, 32, 4), (2, 32, 8, 64, 2), (2, 64, 8, 16, 4)],
                   mode=["fwd", "train"]):
        hp["layers"], hp["d_model"], hp["state"], hp["seq"], hp["batch"] = hp.pop("size")
        name = (f"ssm-{hp['variant']}-{hp['method']}-l{hp['layers']}-d{hp['d_model']}-n{hp['state']}"
                f"-s{hp['seq']}-b{hp['batch']}-{hp['mode']}")
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
