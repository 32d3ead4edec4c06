"""ODE-net family: neural ODEs integrated with a fixed-step classical Runge-Kutta 4 solver.

"Neural Ordinary Differential Equations" (arXiv:1806.07366): an encoder maps the input to the
initial state y(0), the state follows dy/dt = f_theta(t, y) up to t = 1, and a decoder reads
y(1). Here the solver is fixed-step RK4 with h = 1 / steps:
k1 = f(t, y), k2 = f(t + h/2, y + h k1 / 2), k3 = f(t + h/2, y + h k2 / 2), k4 = f(t + h, y + h k3),
y <- y + h (k1 + 2 k2 + 2 k3 + k4) / 6; backpropagation goes through the solver (discretise-then-
optimise). The solver loop is either unrolled in Python (``unroll``) or a ``lax.scan`` (``scan``).
Two vector fields, both time-conditioned (t is appended as an input feature / channel):

- ``mlp``: f(t, y) = W2 tanh(W1 [y, t] + b1) + b2 on a (B, D) state, Dense encoder / decoder;
- ``conv``: f(t, y) = conv3x3(tanh(conv3x3([y, t]))) on a (B, R, R, C) feature map (zero padding),
  a conv3x3 encoder from a one-channel image and a 1x1 conv decoder back to one channel. Inside the
  solver the 3x3 convolutions are written im2col-style (nine shifted slices concatenated, then one
  matmul): the same math, but XLA:CPU runs small convolutions and their gradients inside loops an
  order of magnitude slower than the equivalent dots.

Training: MSE of the decoded final state to a target (Adam).

Names: ``odenet-mlp-d{dim}-h{hidden}-s{steps}-{unroll|scan}-b{batch}-{fwd|train}`` and
``odenet-conv-r{resolution}-c{channels}-s{steps}-{unroll|scan}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "odenet"
IN_DIM, OUT_DIM = 10, 4  # mlp kind: input features, regression targets


def _rk4(f, y, steps: int, loop: str):
    """Integrate dy/dt = f(t, y) from t=0 to t=1 with `steps` RK4 steps (unrolled or lax.scan)."""
    import jax
    import jax.numpy as jnp

    h = 1.0 / steps

    def step(y, t):
        k1 = f(t, y)
        k2 = f(t + h / 2, y + (h / 2) * k1)
        k3 = f(t + h / 2, y + (h / 2) * k2)
        k4 = f(t + h, y + h * k3)
        return y + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)

    if loop == "unroll":
        for n in range(steps):
            y = step(y, n * h)
        return y
    times = jnp.arange(steps, dtype=y.dtype) * h  # (S,)
    y, _ = jax.lax.scan(lambda y, t: (step(y, t), None), y, times)
    return y


def build(field: str, size: int, width: int, steps: int, loop: str, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    glorot = nn.initializers.glorot_normal()

    class MLPODE(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, IN_DIM)
            d, hdim = size, width
            w1 = self.param("w1", glorot, (d + 1, hdim))
            b1 = self.param("b1", nn.initializers.zeros, (hdim,))
            w2 = self.param("w2", glorot, (hdim, d))
            b2 = self.param("b2", nn.initializers.zeros, (d,))

            def f(t, y):  # y: (B, D) -> (B, D)
                ty = jnp.concatenate([y, jnp.full((y.shape[0], 1), t, y.dtype)], axis=-1)  # (B, D+1)
                return jnp.tanh(ty @ w1 + b1) @ w2 + b2

            y0 = nn.Dense(d)(x)  # (B, D)
            return nn.Dense(OUT_DIM)(_rk4(f, y0, steps, loop))  # (B, OUT_DIM)

    class ConvODE(nn.Module):
        @nn.compact
        def __call__(self, img):  # img: (B, R, R, 1)
            c = width
            k1 = self.param("k1", glorot, (3, 3, c + 1, c))  # HWIO
            k2 = self.param("k2", nn.initializers.normal(0.05), (3, 3, c, c))

            def conv(x, k):  # 3x3 SAME convolution as im2col + matmul: (B, R, R, I) -> (B, R, R, O)
                b, r, _, i = x.shape
                p = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))  # (B, R+2, R+2, I)
                cols = jnp.concatenate([p[:, di:di + r, dj:dj + r] for di in range(3) for dj in range(3)], axis=-1)
                out = cols.reshape(b * r * r, 9 * i) @ k.reshape(9 * i, -1)  # (B R R, 9 I) @ (9 I, O)
                return out.reshape(b, r, r, -1)  # (B, R, R, O)

            def f(t, y):  # y: (B, R, R, C) -> (B, R, R, C)
                ty = jnp.concatenate([y, jnp.full((*y.shape[:3], 1), t, y.dtype)], axis=-1)
                return conv(jnp.tanh(conv(ty, k1)), k2)

            y0 = jnp.tanh(nn.Conv(c, (3, 3), padding="SAME")(img))  # (B, R, R, C)
            return nn.Conv(1, (1, 1))(_rk4(f, y0, steps, loop))  # (B, R, R, 1)

    kx, ky = jax.random.split(jax.random.PRNGKey(61))
    module: nn.Module
    if field == "mlp":
        x = jax.random.normal(kx, (batch, IN_DIM), jnp.float32)
        y = jax.random.normal(ky, (batch, OUT_DIM), jnp.float32)
        module = MLPODE()
    else:
        x = jax.random.normal(kx, (batch, size, size, 1), jnp.float32)
        y = jax.random.normal(ky, (batch, size, size, 1), jnp.float32)
        module = ConvODE()
    return make_program(module, (x,), y, mode, loss="mse", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for g in grid(shape=[(16, 64), (32, 128)], steps=[4, 8], loop=["unroll", "scan"], mode=["fwd", "train"]):
        hp = {"field": "mlp", "size": g["shape"][0], "width": g["shape"][1], "steps": g["steps"], "loop": g["loop"],
              "batch": 48, "mode": g["mode"]}
        name = f"odenet-mlp-d{hp['size']}-h{hp['width']}-s{hp['steps']}-{hp['loop']}-b48-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    for g in grid(shape=[(10, 4), (12, 8)], steps=[2, 3], loop=["unroll", "scan"], mode=["fwd", "train"]):
        hp = {"field": "conv", "size": g["shape"][0], "width": g["shape"][1], "steps": g["steps"], "loop": g["loop"],
              "batch": 2, "mode": g["mode"]}
        name = f"odenet-conv-r{hp['size']}-c{hp['width']}-s{hp['steps']}-{hp['loop']}-b2-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
