"""A development suite of loop programs for the tuner: five numerical programs that spend their time
in a ``lax.scan`` / ``fori_loop`` / ``while_loop`` of small kernels, on which the tuner's own design
choices are made. They are DEVELOPMENT programs: their families are in none of the training zoo
(graphcost.frontend.programs.zoo), benchmarks/tune/tune_suite.py or the held-out
benchmarks/tune/holdout_suite.py, so that results on the held-out programs stay held out. They are a
leapfrog 1-D wave equation on a batch of strings, an SEIR epidemic ensemble integrated by RK4,
quantiles of logistic mixtures found by bisection, logistic regression by gradient descent, and a
short-horizon Lorenz-96 ensemble.

Each ``make_*()`` returns ``(fn, example_args)``, so any of them can be tuned directly:
``graphcost tune benchmarks/tune/dev_loop_suite.py:make_wave_string``. All are float32 and
deterministic, with inputs fixed by NumPy seeds; iteration counts are modest and the dynamics stable
(or, for Lorenz-96, followed over well under one Lyapunov time), so that a configuration that only
reorders or fuses arithmetic agrees with the default within rtol 1e-3. The ``while_loop`` also stops
at a fixed iteration cap.

Sizes are chosen so that one call takes roughly 0.3-15 ms on a 2-core CPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def _normal(shape, seed, scale=1.0):
    """Fixed normal inputs, made by NumPy on the host (building a program compiles nothing)."""
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _uniform(shape, seed, lo=0.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


def _args(*xs):
    """The example arguments as float32 JAX arrays."""
    return tuple(jnp.asarray(x, jnp.float32) for x in xs)


def make_wave_string():
    """1-D wave equation u_tt = c^2 u_xx on 64 strings of 512 points with fixed ends, each with its
    own wave speed (Courant number 0.5-0.9), plucked by a Gaussian; leapfrog time stepping (scan over
    300 steps) that records the displacement at a pickup point."""
    b, n, steps = 64, 512, 300
    courant = _uniform((b, 1), 0, 0.5, 0.9)
    xs = np.linspace(0.0, 1.0, n, dtype=np.float32)[None]
    centre = _uniform((b, 1), 1, 0.3, 0.7)
    u0 = np.exp(-((xs - centre) / 0.03) ** 2).astype(np.float32)
    u0[:, 0] = u0[:, -1] = 0.0
    pickup = n // 5

    def fn(u0, courant):
        c2 = courant * courant

        def step(state, _):
            prev, u = state
            lap = jnp.pad(u[:, 2:] - 2.0 * u[:, 1:-1] + u[:, :-2], ((0, 0), (1, 1)))
            nxt = 2.0 * u - prev + c2 * lap
            return (u, nxt), nxt[:, pickup]

        # First step from rest: u_1 = u_0 + c^2/2 * laplacian(u_0).
        lap0 = jnp.pad(u0[:, 2:] - 2.0 * u0[:, 1:-1] + u0[:, :-2], ((0, 0), (1, 1)))
        u1 = u0 + 0.5 * c2 * lap0
        (_, u), trace = jax.lax.scan(step, (u0, u1), None, length=steps)
        return trace, u

    return fn, _args(u0, courant)


def make_seir_ensemble():
    """SEIR epidemic model for an ensemble of 8,192 parameter sets (transmission, incubation and
    recovery rates), classical Runge-Kutta 4 in a fori_loop of 120 half-day steps; returns the final
    compartments and the peak infected fraction."""
    n, steps, dt = 8192, 120, 0.5
    beta = _uniform((n,), 0, 0.2, 0.6)
    sigma = _uniform((n,), 1, 1 / 7, 1 / 3)
    gamma = _uniform((n,), 2, 1 / 10, 1 / 5)
    i0 = _uniform((n,), 3, 1e-4, 1e-3)
    y0 = np.stack([1.0 - i0, np.zeros_like(i0), i0, np.zeros_like(i0)]).astype(np.float32)  # (4, N)

    def fn(y0, beta, sigma, gamma):
        def f(y):
            s, e, i, r = y[0], y[1], y[2], y[3]
            infection = beta * s * i
            return jnp.stack([-infection, infection - sigma * e, sigma * e - gamma * i, gamma * i])

        def step(_, state):
            y, peak = state
            k1 = f(y)
            k2 = f(y + 0.5 * dt * k1)
            k3 = f(y + 0.5 * dt * k2)
            k4 = f(y + dt * k3)
            y = y + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            return y, jnp.maximum(peak, y[2])

        y, peak = jax.lax.fori_loop(0, steps, step, (y0, y0[2]))
        return y, peak

    return fn, _args(y0, beta, sigma, gamma)


def make_quantile_bisect():
    """Quantiles of 8,192 mixtures of four logistic distributions (one target probability each)
    found by bisection of the mixture CDF on [-30, 30], in a while_loop until every bracket is
    narrower than 1e-5 (or 40 iterations)."""
    n, k = 8192, 4
    logits = _normal((n, k), 0)
    w = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    loc = _normal((n, k), 1, 3.0)
    scale = _uniform((n, k), 2, 0.3, 2.0)
    p = _uniform((n,), 3, 0.02, 0.98)

    def fn(w, loc, scale, p):
        def cdf(x):
            return jnp.sum(w * jax.nn.sigmoid((x[:, None] - loc) / scale), -1)

        def cond(state):
            lo, hi, it = state
            return (jnp.max(hi - lo) > 1e-5) & (it < 40)

        def body(state):
            lo, hi, it = state
            mid = 0.5 * (lo + hi)
            below = cdf(mid) < p
            return jnp.where(below, mid, lo), jnp.where(below, hi, mid), it + 1

        lo = jnp.full_like(p, -30.0)
        hi = jnp.full_like(p, 30.0)
        lo, hi, _ = jax.lax.while_loop(cond, body, (lo, hi, 0))
        return 0.5 * (lo + hi)

    return fn, _args(w, loc, scale, p)


def make_logreg_gd():
    """L2-regularised logistic regression on 4,096 fixed examples with 64 features, fitted by 50 steps
    of full-batch gradient descent (scan) from zero; returns the weights, bias and loss history."""
    n, d, steps, lr, lam = 4096, 64, 50, 0.5, 1e-3
    x = _normal((n, d), 0)
    true_w = _normal((d,), 1, 0.5)
    noise = _normal((n,), 2, 0.5)
    y = ((x @ true_w + noise) > 0).astype(np.float32)

    def fn(x, y):
        def step(params, _):
            w, b = params
            z = x @ w + b
            prob = jax.nn.sigmoid(z)
            loss = jnp.mean(jax.nn.softplus(z) - y * z) + 0.5 * lam * jnp.sum(w * w)
            err = (prob - y) / n
            w = w - lr * (x.T @ err + lam * w)
            b = b - lr * jnp.sum(err)
            return (w, b), loss

        (w, b), losses = jax.lax.scan(step, (jnp.zeros((d,), jnp.float32), jnp.float32(0.0)), None,
                                      length=steps)
        return w, b, losses

    return fn, _args(x, y)


def make_lorenz96():
    """Lorenz-96 (forcing 8) for an ensemble of 256 perturbed 40-variable states, classical RK4 in a
    fori_loop of 60 steps of 0.005 (0.3 time units, well under one Lyapunov time); returns the final
    states and the ensemble mean."""
    n, b, steps, dt, forcing = 40, 256, 60, 0.005, 8.0
    base = forcing + _normal((n, 1), 0, 1.0)
    x0 = base + _normal((n, b), 1, 0.01)  # (variables, members)

    def fn(x0):
        def f(x):
            return (jnp.roll(x, -1, 0) - jnp.roll(x, 2, 0)) * jnp.roll(x, 1, 0) - x + forcing

        def step(_, x):
            k1 = f(x)
            k2 = f(x + 0.5 * dt * k1)
            k3 = f(x + 0.5 * dt * k2)
            k4 = f(x + dt * k3)
            return x + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

        x = jax.lax.fori_loop(0, steps, step, x0)
        return x, jnp.mean(x, 1)

    return fn, _args(x0)


DEV_LOOP = {"wave_string": make_wave_string, "seir_ensemble": make_seir_ensemble,
            "quantile_bisect": make_quantile_bisect, "logreg_gd": make_logreg_gd, "lorenz96": make_lorenz96}
