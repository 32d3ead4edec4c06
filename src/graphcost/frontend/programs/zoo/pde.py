"""PDE family: explicit stencil solvers of 2-D heat and wave equations with learned components.

Hybrid solver + network programs in the spirit of "Learning data-driven discretizations for
partial differential equations" (arXiv:1808.04930) and "Solver-in-the-Loop: Learning from
Differentiable Physics to Interact with Iterative PDE-Solvers" (arXiv:2007.00016). Two kinds:

- ``heat``: u_t = a lap(u) on a periodic grid, explicit Euler steps unrolled in Python, with a
  learned diffusivity a and a learned correction CNN applied every ``CORRECT_EVERY`` steps:
  u_{n+1} = u_n + dt (a L5 u_n + [n % CORRECT_EVERY == 0] C(u_n)), L5 the 5-point Laplacian written
  with ``jnp.roll``, C = circular conv3x3(width) -> tanh -> conv3x3(1).
- ``wave``: u_tt = c^2 lap(u) + f(x, y) sin(w t) with zero (Dirichlet) boundaries, leapfrog steps
  u_{n+1} = 2 u_n - u_{n-1} + dt^2 (c^2 L9 u_n + f sin(w t_n)) inside a ``lax.fori_loop``, L9 the
  isotropic 9-point Laplacian ((1 4 1; 4 -20 4; 1 4 1) / 6) written as nine shifted slices of the
  zero-padded field; the source field f is a coordinate MLP (x, y) -> hidden -> 1 evaluated once
  before the loop; c and w are learned. (Explicit stencils, not convolutions: single-channel
  convolutions are an order of magnitude slower on XLA:CPU.)

Training: MSE of the final field to a target field (Adam).

Names: ``pde-heat-r{resolution}-s{steps}-c{width}-b{batch}-{fwd|train}`` and
``pde-wave-r{resolution}-s{steps}-h{hidden}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "pde"
CORRECT_EVERY = 4  # heat: steps between two applications of the correction CNN


def build(kind: str, resolution: int, steps: int, size: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    r = resolution

    class Heat(nn.Module):
        @nn.compact
        def __call__(self, u):  # u: (B, R, R, 1) initial temperature
            alpha = jax.nn.sigmoid(self.param("alpha", nn.initializers.zeros, ()))  # diffusivity in (0, 1)
            dt = 0.2  # a * dt <= 0.2 < 1/4: stable for the 5-point stencil (grid units)
            conv1 = nn.Conv(size, (3, 3), padding="CIRCULAR")
            conv2 = nn.Conv(1, (3, 3), padding="CIRCULAR", kernel_init=nn.initializers.normal(0.01))
            for n in range(steps):
                lap = (jnp.roll(u, 1, axis=1) + jnp.roll(u, -1, axis=1) + jnp.roll(u, 1, axis=2)
                       + jnp.roll(u, -1, axis=2) - 4.0 * u)  # (B, R, R, 1)
                rhs = alpha * lap
                if n % CORRECT_EVERY == 0:
                    rhs = rhs + conv2(jnp.tanh(conv1(u)))  # learned correction: (B, R, R, 1)
                u = u + dt * rhs
            return u

    class Wave(nn.Module):
        @nn.compact
        def __call__(self, u0):  # u0: (B, R, R, 1) initial displacement (zero initial velocity)
            lin = jnp.linspace(-1.0, 1.0, r, dtype=u0.dtype)
            xy = jnp.stack(jnp.meshgrid(lin, lin, indexing="ij"), axis=-1).reshape(r * r, 2)  # (R*R, 2)
            f = 0.05 * nn.Dense(1)(jnp.tanh(nn.Dense(size)(xy))).reshape(1, r, r, 1)  # learned source field
            c2 = jax.nn.sigmoid(self.param("c", nn.initializers.zeros, ()))  # c^2 in (0, 1), grid units
            omega = self.param("omega", nn.initializers.constant(0.3), ())
            dt = 0.5  # c dt <= 0.5: inside the CFL limit of the 9-point stencil

            def lap(u):  # (B, R, R, 1) -> (B, R, R, 1), zero Dirichlet boundary
                p = jnp.pad(u, ((0, 0), (1, 1), (1, 1), (0, 0)))  # (B, R+2, R+2, 1)
                s = lambda i, j: p[:, i:i + r, j:j + r]  # noqa: E731  shifted view
                edges = s(0, 1) + s(2, 1) + s(1, 0) + s(1, 2)
                corners = s(0, 0) + s(0, 2) + s(2, 0) + s(2, 2)
                return (4.0 * edges + corners - 20.0 * u) / 6.0

            def step(n, state):
                prev, cur = state
                t = n.astype(u0.dtype) * dt
                nxt = 2.0 * cur - prev + dt * dt * (c2 * lap(cur) + f * jnp.sin(omega * t))
                return cur, nxt

            _, u = jax.lax.fori_loop(0, steps, step, (u0, u0))
            return u

    ku, ky = jax.random.split(jax.random.PRNGKey(51))
    lin = jnp.linspace(0.0, 1.0, r)
    bump = jnp.exp(-((lin[:, None] - 0.5) ** 2 + (lin[None, :] - 0.4) ** 2) / 0.02)  # smooth blob
    u0 = bump[None, :, :, None] + 0.1 * jax.random.normal(ku, (batch, r, r, 1), jnp.float32)
    y = 0.5 * jax.random.normal(ky, (batch, r, r, 1), jnp.float32)
    return make_program(Heat() if kind == "heat" else Wave(), (u0.astype(jnp.float32),), y, mode, loss="mse",
                        optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(resolution=[24, 32], steps=[8, 12], size=[4, 8], batch=[2], mode=["fwd", "train"]):
        name = f"pde-heat-r{hp['resolution']}-s{hp['steps']}-c{hp['size']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, {"kind": "heat", **hp}, build))
    for hp in grid(resolution=[24, 32], steps=[16, 32], size=[16], batch=[4], mode=["fwd", "train"]):
        name = f"pde-wave-r{hp['resolution']}-s{hp['steps']}-h{hp['size']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, {"kind": "wave", **hp}, build))
    return out
