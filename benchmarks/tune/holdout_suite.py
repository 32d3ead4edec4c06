"""A second held-out program suite for the tuner: fifteen numerical programs whose families are in
neither the training zoo (graphcost.frontend.programs.zoo) nor benchmarks/tune/tune_suite.py. Most
of them (twelve) spend their time in a ``lax.scan`` / ``fori_loop`` / ``while_loop`` of small
kernels: a Kalman filter, Game of Life, screened-Poisson Jacobi iterations with a tolerance test,
power iteration, batched Newton solves of Kepler's equation, Lennard-Jones molecular dynamics with a
cutoff, an escape-time fractal, Lloyd's k-means, a spiking network, a Hopfield network, PageRank and
a leapfrog spring mesh; three are straight-line (a bitonic sort network, a Gabor filter bank with
nonlinear diffusion, an FFT Wiener deconvolution).

Each ``make_*()`` returns ``(fn, example_args)``, so any of them can be tuned directly:
``graphcost tune benchmarks/tune/holdout_suite.py:make_life``. All are float32 and deterministic;
iteration counts are modest and dynamics contractive or exact (integer-valued sums), so that a
configuration that only reorders or fuses arithmetic agrees with the default within rtol 1e-3.
Every ``while_loop`` also stops at a fixed iteration cap.

Sizes are chosen so that one call takes roughly 0.3-15 ms on a 2-core CPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def _init(shape, seed, scale=None):
    """Fixed normal inputs, made by NumPy on the host (building a program compiles nothing)."""
    scale = scale if scale is not None else 1.0 / max(1, shape[0]) ** 0.5
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _uniform(shape, seed, lo=0.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


def _args(*xs):
    """The example arguments as JAX arrays (float32, or int32 for index arrays)."""
    return tuple(jnp.asarray(x, jnp.int32 if np.issubdtype(np.asarray(x).dtype, np.integer) else jnp.float32)
                 for x in xs)


def make_kalman():
    """Kalman filter (scan over 100 steps) tracking 256 constant-velocity targets in 2-D from noisy
    position measurements: predict, 2x2 innovation inverse in closed form, update."""
    t, b, dt = 100, 256, 0.1
    truth_v = _init((b, 2), 1, 1.0)
    times = np.arange(1, t + 1, dtype=np.float32)[:, None, None] * dt
    z = truth_v[None] * times + _init((t, b, 2), 2, 0.05)  # (T, B, 2) measurements
    f = np.array([[1, 0, dt, 0], [0, 1, 0, dt], [0, 0, 1, 0], [0, 0, 0, 1]], np.float32)
    q = np.diag(np.array([1e-4, 1e-4, 1e-3, 1e-3], np.float32))
    r = np.float32(0.05 ** 2)
    x0 = np.zeros((b, 4), np.float32)
    p0 = np.broadcast_to(np.eye(4, dtype=np.float32), (b, 4, 4))

    def fn(f, q, x0, p0, z):
        def step(carry, zt):
            x, p = carry
            x = x @ f.T
            p = jnp.einsum("ij,bjk,lk->bil", f, p, f) + q
            s = p[:, :2, :2] + r * jnp.eye(2, dtype=jnp.float32)  # H P H^T + R, H = [I 0]
            det = s[:, 0, 0] * s[:, 1, 1] - s[:, 0, 1] * s[:, 1, 0]
            s_inv = jnp.stack([jnp.stack([s[:, 1, 1], -s[:, 0, 1]], -1),
                               jnp.stack([-s[:, 1, 0], s[:, 0, 0]], -1)], 1) / det[:, None, None]
            k = jnp.einsum("bij,bjk->bik", p[:, :, :2], s_inv)  # (B, 4, 2) gain
            x = x + jnp.einsum("bij,bj->bi", k, zt - x[:, :2])
            p = p - jnp.einsum("bij,bjk->bik", k, p[:, :2, :])
            return (x, p), x

        (_, p), xs = jax.lax.scan(step, (x0, p0), z)
        return xs, p

    return fn, _args(f, q, x0, p0, z)


def make_life():
    """Conway's Game of Life: 48 generations (fori_loop) on a 256x256 torus, neighbour counts by
    eight rolls; values are exactly 0 or 1."""
    grid = (_uniform((256, 256), 0) < 0.35).astype(np.float32)

    def fn(g):
        def gen(_, g):
            n = sum(jnp.roll(jnp.roll(g, dy, 0), dx, 1)
                    for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))
            alive = (n == 3) | ((g > 0) & (n == 2))
            return alive.astype(jnp.float32)

        return jax.lax.fori_loop(0, 48, gen, g)

    return fn, _args(grid)


def make_jacobi():
    """Jacobi iterations for a screened Poisson equation (c - laplacian) u = f on a 192x192 grid with
    zero Dirichlet boundary, in a while_loop until the largest update falls below a tolerance
    (or 300 iterations)."""
    n, c = 192, 0.5
    rhs = _init((n, n), 0, 1.0)
    u0 = np.zeros((n, n), np.float32)

    def fn(u, f):
        def neighbours(u):
            p = jnp.pad(u, 1)
            return p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]

        def cond(state):
            _, delta, it = state
            return (delta > 1e-5) & (it < 300)

        def body(state):
            u, _, it = state
            new = (f + neighbours(u)) / (4.0 + c)
            return new, jnp.max(jnp.abs(new - u)), it + 1

        u, _, it = jax.lax.while_loop(cond, body, (u, jnp.float32(jnp.inf), 0))
        return u

    return fn, _args(u0, rhs)


def make_power_iter():
    """Power iteration (fori_loop, 40 steps) for the top eigenpair of a 768x768 symmetric matrix with
    a well-separated leading eigenvalue; returns the sign-fixed eigenvector and its Rayleigh quotient."""
    n = 768
    m = _init((n, n), 0, 1.0)
    u = _init((n,), 1, 1.0)
    u = u / np.linalg.norm(u)
    a = m @ m.T / n + 10.0 * np.outer(u, u)
    v0 = np.ones((n,), np.float32) / n ** 0.5

    def fn(a, v):
        def step(_, v):
            w = a @ v
            return w / jnp.linalg.norm(w)

        v = jax.lax.fori_loop(0, 40, step, v)
        v = v * jnp.sign(jnp.sum(v))
        return v, v @ (a @ v)

    return fn, _args(a, v0)


def make_newton_kepler():
    """Batched Newton's method for Kepler's equation E - e sin E = M (65,536 orbits, eccentricity up
    to 0.9) in a while_loop until every update is below 1e-5 (or 40 iterations)."""
    n = 65536
    mean_anom = _uniform((n,), 0, 0.0, 2 * np.pi)
    ecc = _uniform((n,), 1, 0.0, 0.9)

    def fn(m, e):
        def cond(state):
            _, step, it = state
            return (step > 1e-5) & (it < 40)

        def body(state):
            big_e, _, it = state
            d = (big_e - e * jnp.sin(big_e) - m) / (1.0 - e * jnp.cos(big_e))
            return big_e - d, jnp.max(jnp.abs(d)), it + 1

        e0 = jnp.where(e > 0.8, jnp.float32(np.pi), m)
        big_e, _, _ = jax.lax.while_loop(cond, body, (e0, jnp.float32(jnp.inf), 0))
        return big_e

    return fn, _args(mean_anom, ecc)


def make_lj_md():
    """Lennard-Jones molecular dynamics: 20 velocity-Verlet steps (fori_loop) of 216 particles in a
    periodic box, minimum-image pair vectors, a 2.5-sigma cutoff applied by a neighbour mask."""
    side, spacing, dt, rc = 6, 1.2, 0.002, 2.5
    box = side * spacing
    grid = np.stack(np.meshgrid(*[np.arange(side, dtype=np.float32)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pos = grid * spacing + _init((side ** 3, 3), 0, 0.03)
    vel = _init((side ** 3, 3), 1, 0.3)
    vel = vel - vel.mean(0)

    def fn(pos, vel):
        n = pos.shape[0]
        eye = jnp.eye(n, dtype=bool)

        def forces(x):
            d = x[:, None, :] - x[None, :, :]
            d = d - box * jnp.round(d / box)  # minimum image
            r2 = jnp.sum(d * d, -1)
            mask = (r2 < rc * rc) & ~eye
            inv2 = jnp.where(mask, 1.0 / jnp.where(mask, r2, 1.0), 0.0)
            inv6 = inv2 * inv2 * inv2
            mag = 24.0 * inv6 * (2.0 * inv6 - 1.0) * inv2
            return jnp.sum(mag[:, :, None] * d, axis=1)

        def step(_, state):
            x, v, f = state
            v = v + 0.5 * dt * f
            x = jnp.mod(x + dt * v, box)
            f = forces(x)
            return x, v + 0.5 * dt * f, f

        x, v, _ = jax.lax.fori_loop(0, 20, step, (pos, vel, forces(pos)))
        return x, v

    return fn, _args(pos, vel)


def make_mandelbrot():
    """Escape-time fractal (Mandelbrot set): 48 iterations (fori_loop) of z <- z^2 + c on a 320x320
    grid of points, real arithmetic on (re, im) planes; returns escape counts averaged over 40x40 tiles."""
    h = w = 320
    re = np.broadcast_to(np.linspace(-2.2, 0.8, w, dtype=np.float32)[None, :], (h, w))
    im = np.broadcast_to(np.linspace(-1.5, 1.5, h, dtype=np.float32)[:, None], (h, w))

    def fn(cr, ci):
        def it(_, state):
            zr, zi, count = state
            inside = zr * zr + zi * zi <= 4.0
            nr = zr * zr - zi * zi + cr
            ni = 2.0 * zr * zi + ci
            return jnp.where(inside, nr, zr), jnp.where(inside, ni, zi), count + inside.astype(jnp.float32)

        zero = jnp.zeros_like(cr)
        _, _, count = jax.lax.fori_loop(0, 48, it, (zero, zero, zero))
        return count.reshape(h // 40, 40, w // 40, 40).mean(axis=(1, 3))

    return fn, _args(re, im)


def make_bitonic():
    """Bitonic sorting network, straight-line: all 55 compare-exchange stages for rows of 1,024 values
    (batch of 64), each stage a static reshape that pairs elements i and i XOR j."""
    b, n = 64, 1024
    x = _init((b, n), 0, 1.0)
    idx = np.arange(n)

    def fn(x):
        k = 2
        while k <= n:
            j = k // 2
            while j >= 1:
                y = x.reshape(b, n // (2 * j), 2, j)
                lo, hi = y[:, :, 0, :], y[:, :, 1, :]
                # block direction: ascending where (i & k) == 0 for the lower element i of each pair
                asc = jnp.asarray(((idx.reshape(n // (2 * j), 2, j)[:, 0, :] & k) == 0))
                small, large = jnp.minimum(lo, hi), jnp.maximum(lo, hi)
                first = jnp.where(asc, small, large)
                second = jnp.where(asc, large, small)
                x = jnp.stack([first, second], axis=2).reshape(b, n)
                j //= 2
            k *= 2
        return x

    return fn, _args(x)


def make_kmeans():
    """Lloyd's k-means: 12 iterations (fori_loop) of nearest-centroid assignment (expanded squared
    distances) and one-hot mean updates, 8,192 points in 16-D around 16 well-separated centres."""
    n, d, k = 8192, 16, 16
    centres = _init((k, d), 0, 6.0)
    labels = np.random.default_rng(1).integers(0, k, n)
    pts = centres[labels] + _init((n, d), 2, 1.0)
    init = centres + _init((k, d), 3, 0.8)

    def fn(x, c):
        x2 = jnp.sum(x * x, -1, keepdims=True)

        def lloyd(_, c):
            dist = x2 - 2.0 * x @ c.T + jnp.sum(c * c, -1)[None, :]
            onehot = jax.nn.one_hot(jnp.argmin(dist, -1), k, dtype=jnp.float32)
            counts = onehot.sum(0)
            return (onehot.T @ x) / jnp.maximum(counts, 1.0)[:, None]

        c = jax.lax.fori_loop(0, 12, lloyd, c)
        inertia = jnp.min(x2 - 2.0 * x @ c.T + jnp.sum(c * c, -1)[None, :], -1).mean()
        return c, inertia

    return fn, _args(pts, init)


def make_filter_bank():
    """Image filter bank, straight-line: 8 even/odd Gabor filter pairs (7x7 convolutions) to oriented
    energy maps, Sobel gradients of the energies, then 4 unrolled steps of Perona-Malik nonlinear
    diffusion; 2 images of 96x96."""
    b, hw = 2, 96
    imgs = _init((b, hw, hw, 1), 0, 1.0)
    r = np.arange(-3, 4, dtype=np.float32)
    yy, xx = np.meshgrid(r, r, indexing="ij")
    kernels = []
    for phase in (0.0, np.pi / 2):
        for o in range(8):
            th = np.pi * o / 8
            u = xx * np.cos(th) + yy * np.sin(th)
            kernels.append(np.exp(-(xx ** 2 + yy ** 2) / 8.0) * np.cos(2 * np.pi * u / 4.0 + phase))
    gabor = np.stack(kernels, -1)[:, :, None, :] / 10.0  # (7, 7, 1, 16)
    sx = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32) / 8.0
    sobel = np.stack([sx, sx.T], -1)[:, :, None, :]  # (3, 3, 1, 2)

    def fn(x, gabor, sobel):
        def conv(x, w, groups=1):
            return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                                feature_group_count=groups)

        resp = conv(x, gabor)
        energy = jnp.sqrt(resp[..., :8] ** 2 + resp[..., 8:] ** 2 + 1e-6)  # (B, H, W, 8)
        g = conv(energy.transpose(0, 3, 1, 2).reshape(-1, hw, hw, 1), sobel)  # (8 B, H, W, 2)
        u = energy + 0.1 * jnp.sqrt(jnp.sum(g * g, -1) + 1e-6).reshape(b, 8, hw, hw).transpose(0, 2, 3, 1)
        for _ in range(4):
            p = jnp.pad(u, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="edge")
            diffs = [p[:, :-2, 1:-1] - u, p[:, 2:, 1:-1] - u, p[:, 1:-1, :-2] - u, p[:, 1:-1, 2:] - u]
            u = u + 0.2 * sum(d / (1.0 + (d / 0.5) ** 2) for d in diffs)
        return u

    return fn, _args(imgs, gabor, sobel)


def make_wiener():
    """FFT spectral filtering, straight-line: Wiener deconvolution of 8 Gaussian-blurred 128x128 images
    (fft2, conjugate filter over |H|^2 + lambda, ifft2), a Butterworth band-pass, and a radially
    averaged power spectrum by segment_sum over 64 frequency rings."""
    b, n = 8, 128
    imgs = _init((b, n, n), 0, 1.0)
    f = np.fft.fftfreq(n).astype(np.float32)
    fy, fx = np.meshgrid(f, f, indexing="ij")
    rad = np.sqrt(fx ** 2 + fy ** 2)
    blur = np.exp(-(rad ** 2) * 2 * (np.pi * 1.5) ** 2)  # Gaussian OTF, sigma 1.5 px
    rings = np.minimum((rad / rad.max() * 64).astype(np.int32), 63)

    def fn(x, otf, rings):
        blurred = jnp.fft.ifft2(jnp.fft.fft2(x) * otf).real
        spec = jnp.fft.fft2(blurred)
        restored = spec * otf / (otf * otf + 1e-2)
        radius = jnp.sqrt(jnp.fft.fftfreq(n)[:, None] ** 2 + jnp.fft.fftfreq(n)[None, :] ** 2)
        band = 1.0 / (1.0 + (radius / 0.3) ** 8) * (1.0 - 1.0 / (1.0 + (radius / 0.02) ** 4))
        out = jnp.fft.ifft2(restored * band).real
        power = jnp.abs(restored) ** 2
        ring_sum = jax.ops.segment_sum(power.reshape(b, -1).T, rings.reshape(-1), 64)  # (64, B)
        ring_n = jax.ops.segment_sum(jnp.ones(n * n, jnp.float32), rings.reshape(-1), 64)
        return out, jnp.log1p(ring_sum.T / jnp.maximum(ring_n, 1.0))

    return fn, _args(imgs, blur, rings)


def make_spiking():
    """Two-layer leaky integrate-and-fire spiking network over 100 time steps (scan): binary input
    spikes, weights that are multiples of 1/16 (so every sum is exact), leak 1/2, subtractive reset."""
    t, b, n_in, n_hid, n_out = 100, 32, 256, 512, 10
    spikes = (_uniform((t, b, n_in), 0) < 0.1).astype(np.float32)
    w1 = np.round(_init((n_in, n_hid), 1, 3.0)) / 16.0
    w2 = np.round(_init((n_hid, n_out), 2, 3.0)) / 16.0

    def fn(w1, w2, s_in):
        def step(carry, s):
            v1, v2 = carry
            v1 = 0.5 * v1 + s @ w1
            s1 = (v1 >= 1.0).astype(jnp.float32)
            v1 = v1 - s1
            v2 = 0.5 * v2 + s1 @ w2
            s2 = (v2 >= 1.0).astype(jnp.float32)
            return (v1, v2 - s2), (s1.mean(-1), s2)

        init = (jnp.zeros((b, n_hid), jnp.float32), jnp.zeros((b, n_out), jnp.float32))
        (_, v2), (rate1, s2) = jax.lax.scan(step, init, s_in)
        return s2.sum(0), rate1, v2

    return fn, _args(w1, w2, spikes)


def make_hopfield():
    """Hopfield network recall: 24 synchronous sign updates (fori_loop) of 64 noisy probes through
    a 512-neuron Hebbian weight matrix storing 30 +-1 patterns (integer weights: exact sums)."""
    n, p, b = 512, 30, 64
    pats = np.where(_uniform((p, n), 0) < 0.5, -1.0, 1.0).astype(np.float32)
    w = pats.T @ pats * (1.0 - np.eye(n, dtype=np.float32))
    flip = _uniform((b, n), 1) < 0.2
    probes = np.where(flip, -1.0, 1.0) * pats[np.arange(b) % p]

    def fn(w, pats, s):
        def update(_, s):
            return jnp.where(s @ w >= 0.0, 1.0, -1.0).astype(jnp.float32)

        s = jax.lax.fori_loop(0, 24, update, s)
        return s, s @ pats.T / n  # states and overlaps with every stored pattern

    return fn, _args(w, pats, probes)


def make_pagerank():
    """PageRank by power iteration on a dense 1,536-node random graph (column-stochastic transitions,
    dangling nodes spread uniformly, damping 0.85) in a while_loop until the L1 change is below 1e-6
    (or 120 iterations)."""
    n, damping = 1536, 0.85
    adj = (_uniform((n, n), 0) < 0.004).astype(np.float32)  # adj[i, j]: an edge j -> i
    r0 = np.full((n,), 1.0 / n, np.float32)

    def fn(adj, r):
        out_deg = adj.sum(0)
        trans = adj / jnp.maximum(out_deg, 1.0)[None, :]
        dangling = (out_deg == 0).astype(jnp.float32)

        def cond(state):
            _, delta, it = state
            return (delta > 1e-6) & (it < 120)

        def body(state):
            r, _, it = state
            new = damping * (trans @ r + jnp.sum(dangling * r) / n) + (1.0 - damping) / n
            return new, jnp.sum(jnp.abs(new - r)), it + 1

        r, _, _ = jax.lax.while_loop(cond, body, (r, jnp.float32(jnp.inf), 0))
        return r * n

    return fn, _args(adj, r0)


def make_spring_mesh():
    """Damped mass-spring mesh (cloth patch): 150 leapfrog steps (scan) of a 32x32 grid of masses
    with structural springs to 4 neighbours, gravity and two pinned corners; returns the centre of
    mass per step and the final positions."""
    n, dt, stiff, rest = 32, 0.01, 200.0, 1.0
    yy, xx = np.meshgrid(np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32), indexing="ij")
    pos0 = np.stack([xx, np.zeros_like(xx), -yy], -1) * rest  # hanging sheet in the x-z plane
    pos0 = pos0 + _init((n, n, 3), 0, 0.02)
    vel0 = np.zeros((n, n, 3), np.float32)
    pinned = np.zeros((n, n, 1), np.float32)
    pinned[0, 0] = pinned[0, -1] = 1.0
    free = 1.0 - pinned

    def fn(x, v, free):
        def spring(a, b):
            d = b - a
            length = jnp.sqrt(jnp.sum(d * d, -1, keepdims=True) + 1e-12)
            return stiff * (length - rest) * d / length

        def accel(x, v):
            f = jnp.zeros_like(x)
            f = f.at[1:].add(spring(x[1:], x[:-1])).at[:-1].add(spring(x[:-1], x[1:]))
            f = f.at[:, 1:].add(spring(x[:, 1:], x[:, :-1])).at[:, :-1].add(spring(x[:, :-1], x[:, 1:]))
            f = f + jnp.array([0.0, 0.0, -9.81], jnp.float32) - 0.5 * v
            return f * free

        def step(state, _):
            x, v = state
            v_half = v + 0.5 * dt * accel(x, v)
            x = x + dt * v_half
            v = v_half + 0.5 * dt * accel(x, v_half)
            return (x, v), x.mean(axis=(0, 1))

        (x, _), com = jax.lax.scan(step, (x, v), None, length=150)
        return com, x

    return fn, _args(pos0, vel0, free)


HOLDOUT = {"kalman": make_kalman, "life": make_life, "jacobi": make_jacobi, "power_iter": make_power_iter,
           "newton_kepler": make_newton_kepler, "lj_md": make_lj_md, "mandelbrot": make_mandelbrot,
           "bitonic": make_bitonic, "kmeans": make_kmeans, "filter_bank": make_filter_bank, "wiener": make_wiener,
           "spiking": make_spiking, "hopfield": make_hopfield, "pagerank": make_pagerank,
           "spring_mesh": make_spring_mesh}
