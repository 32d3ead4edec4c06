"""The held-out program suite of bench_tune.py: fourteen architectures that are NOT in the training
zoo (graphcost.frontend.programs.zoo has MLPs, ResNet-style CNNs, Transformer encoders/decoders, LSTMs and
GRUs), written for the benchmark: the first eight of issue 18, and five families added for issue 25
(a graph network, a Fourier neural operator, a neural ODE, a state-space model, top-k retrieval and
a point-cloud network). Each ``make_*()`` returns ``(fn, example_args)``, so any of them
can also be tuned directly: ``graphcost tune benchmarks/tune/tune_suite.py:make_mixer``.

Sizes are chosen so that one call takes roughly 0.3-10 ms on a 2-core CPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _init(shape, seed, scale=None):
    scale = scale if scale is not None else 1.0 / max(1, shape[0]) ** 0.5
    return jax.random.normal(jax.random.PRNGKey(seed), shape, jnp.float32) * scale


def make_dwsep():
    """Depthwise-separable convolution block (MobileNet): depthwise 3x3, pointwise 1x1, twice."""
    x = _init((1, 16, 16, 32), 0, 1.0)  # NHWC
    params = {"dw1": _init((3, 3, 1, 32), 1, 0.3), "pw1": _init((1, 1, 32, 64), 2),
              "dw2": _init((3, 3, 1, 64), 3, 0.3), "pw2": _init((1, 1, 64, 64), 4)}

    def conv(x, w, groups):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                            feature_group_count=groups)

    def fn(p, x):
        h = jax.nn.relu(conv(x, p["dw1"], 32))
        h = jax.nn.relu(conv(h, p["pw1"], 1))
        h = jax.nn.relu(conv(h, p["dw2"], 64))
        return conv(h, p["pw2"], 1).mean(axis=(1, 2))

    return fn, (params, x)


def make_mixer():
    """MLP-Mixer: token-mixing and channel-mixing MLPs over (batch, patches, channels), two blocks."""
    b, s, c, ht, hc = 8, 64, 128, 128, 256
    x = _init((b, s, c), 0, 1.0)
    params = [{"t1": _init((s, ht), 10 + i), "t2": _init((ht, s), 20 + i), "c1": _init((c, hc), 30 + i),
               "c2": _init((hc, c), 40 + i)} for i in range(2)]

    def norm(x):
        return (x - x.mean(-1, keepdims=True)) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-5)

    def fn(ps, x):
        for p in ps:
            y = jnp.swapaxes(norm(x), 1, 2)  # (b, c, s): mix tokens
            x = x + jnp.swapaxes(jax.nn.gelu(y @ p["t1"]) @ p["t2"], 1, 2)
            x = x + jax.nn.gelu(norm(x) @ p["c1"]) @ p["c2"]
        return x.mean(axis=1)

    return fn, (params, x)


def make_unet():
    """U-Net-style encoder-decoder: conv, downsample, conv, upsample, skip concatenation, conv."""
    x = _init((2, 64, 64, 8), 0, 1.0)
    params = {"e1": _init((3, 3, 8, 16), 1, 0.2), "e2": _init((3, 3, 16, 32), 2, 0.1),
              "d1": _init((3, 3, 48, 16), 3, 0.1), "out": _init((1, 1, 16, 4), 4)}

    def conv(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def fn(p, x):
        e1 = jax.nn.relu(conv(x, p["e1"]))  # (2, 64, 64, 16)
        down = jax.lax.reduce_window(e1, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        e2 = jax.nn.relu(conv(down, p["e2"]))  # (2, 32, 32, 32)
        up = jnp.repeat(jnp.repeat(e2, 2, axis=1), 2, axis=2)  # nearest upsampling
        d1 = jax.nn.relu(conv(jnp.concatenate([up, e1], axis=-1), p["d1"]))
        return conv(d1, p["out"])

    return fn, (params, x)


def make_recsys():
    """Embedding + MLP recommender (DLRM-style): sparse lookups, pairwise dot interactions, MLP."""
    n_tables, vocab, dim, batch, dense_in = 8, 5000, 32, 256, 16
    tables = _init((n_tables, vocab, dim), 0, 0.1)
    ids = jax.random.randint(jax.random.PRNGKey(1), (batch, n_tables), 0, vocab)
    dense = _init((batch, dense_in), 2, 1.0)
    params = {"bot": _init((dense_in, dim), 3), "top1": _init((dim + (n_tables + 1) ** 2, 256), 4),
              "top2": _init((256, 1), 5)}

    def fn(p, tables, ids, dense):
        emb = jax.vmap(lambda t, i: t[i], in_axes=(0, 1), out_axes=1)(tables, ids)  # (B, T, D)
        z = jnp.concatenate([jax.nn.relu(dense @ p["bot"])[:, None, :], emb], axis=1)  # (B, T+1, D)
        inter = jnp.einsum("bid,bjd->bij", z, z).reshape(batch, -1)
        h = jax.nn.relu(jnp.concatenate([z[:, 0], inter], axis=1) @ p["top1"])
        return jax.nn.sigmoid(h @ p["top2"])

    return fn, (params, tables, ids, dense)


def make_stencil():
    """Scientific kernel: 20 explicit steps of the 2-D heat equation (5-point stencil) on 256x256."""
    u = _init((256, 256), 0, 1.0)

    def fn(u):
        def step(u, _):
            lap = (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u)
            return u + 0.2 * lap, None

        u, _ = jax.lax.scan(step, u, None, length=20)
        return u

    return fn, (u,)


def make_odd_attention():
    """Self-attention with unusual head sizes: 5 heads of dimension 24 (model width 120), seq 96."""
    b, s, h, dh = 4, 96, 5, 24
    d = h * dh
    x = _init((b, s, d), 0, 1.0)
    params = {"qkv": _init((d, 3 * d), 1), "o": _init((d, d), 2), "f1": _init((d, 4 * d), 3), "f2": _init((4 * d, d), 4)}

    def fn(p, x):
        q, k, v = jnp.split((x @ p["qkv"]).reshape(b, s, 3, h, dh), 3, axis=2)
        q, k, v = (t[:, :, 0] for t in (q, k, v))  # (b, s, h, dh)
        att = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / dh ** 0.5, axis=-1)
        y = jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, s, d) @ p["o"]
        x = x + y
        return x + jax.nn.gelu(x @ p["f1"]) @ p["f2"]

    return fn, (params, x)


def make_wavenet():
    """Dilated causal 1-D convolutions (WaveNet-style) with gated activations and residuals."""
    x = _init((4, 1024, 32), 0, 1.0)  # (batch, time, channels)
    params = [{"f": _init((2, 32, 32), 10 + i, 0.2), "g": _init((2, 32, 32), 20 + i, 0.2),
               "r": _init((32, 32), 30 + i)} for i in range(4)]

    def causal(x, w, dil):
        pad = jnp.pad(x, ((0, 0), (dil, 0), (0, 0)))
        return jax.lax.conv_general_dilated(pad, w, (1,), "VALID", rhs_dilation=(dil,),
                                            dimension_numbers=("NWC", "WIO", "NWC"))

    def fn(ps, x):
        for i, p in enumerate(ps):
            dil = 2 ** i
            z = jnp.tanh(causal(x, p["f"], dil)) * jax.nn.sigmoid(causal(x, p["g"], dil))
            x = x + z @ p["r"]
        return x[:, -1]

    return fn, (params, x)


def make_moe():
    """Mixture of experts: a softmax router and 4 expert MLPs combined densely by their gate weights."""
    b, d, hdim, e = 256, 128, 256, 4
    x = _init((b, d), 0, 1.0)
    params = {"router": _init((d, e), 1), "w1": _init((e, d, hdim), 2), "w2": _init((e, hdim, d), 3, 0.06)}

    def fn(p, x):
        gate = jax.nn.softmax(x @ p["router"], axis=-1)  # (b, e)
        h = jax.nn.gelu(jnp.einsum("bd,edh->ebh", x, p["w1"]))
        y = jnp.einsum("ebh,ehd->ebd", h, p["w2"])
        return jnp.einsum("be,ebd->bd", gate, y)

    return fn, (params, x)


def make_gnn():
    """Graph convolutional network (GCN): 3 layers of normalised neighbour aggregation by
    segment_sum over an edge list (1,024 nodes, 8,192 random edges), then a mean readout."""
    n, e, d = 1024, 8192, 64
    src = jax.random.randint(jax.random.PRNGKey(1), (e,), 0, n)
    dst = jax.random.randint(jax.random.PRNGKey(2), (e,), 0, n)
    x = _init((n, d), 0, 1.0)
    params = [_init((d, d), 10 + i) for i in range(3)]

    def fn(ws, x, src, dst):
        deg = jax.ops.segment_sum(jnp.ones_like(dst, jnp.float32), dst, n) + 1.0
        for w in ws:
            msg = (x / jnp.sqrt(deg)[:, None])[src]
            agg = jax.ops.segment_sum(msg, dst, n) / jnp.sqrt(deg)[:, None]
            x = jax.nn.relu((agg + x) @ w)
        return x.mean(axis=0)

    return fn, (params, x, src, dst)


def make_fno():
    """Fourier neural operator layer stack: rfft2, a learned complex multiply on the lowest modes,
    irfft2, plus a pointwise linear path; 3 layers on a 64x64 grid with 16 channels."""
    b, hgt, wid, c, modes = 2, 64, 64, 16, 12
    x = _init((b, hgt, wid, c), 0, 1.0)
    params = [{"re": _init((modes, modes, c, c), 10 + i, 0.1), "im": _init((modes, modes, c, c), 20 + i, 0.1),
               "w": _init((c, c), 30 + i)} for i in range(3)]

    def fn(ps, x):
        for p in ps:
            f = jnp.fft.rfft2(x, axes=(1, 2))  # (b, H, W/2+1, c) complex
            low = jnp.einsum("bxyc,xycd->bxyd", f[:, :modes, :modes], p["re"] + 1j * p["im"])
            f = jnp.zeros_like(f).at[:, :modes, :modes].set(low)
            x = jax.nn.gelu(jnp.fft.irfft2(f, s=(hgt, wid), axes=(1, 2)) + x @ p["w"])
        return x.mean(axis=(1, 2))

    return fn, (params, x)


def make_neural_ode():
    """Neural ODE: 16 fixed steps of classical Runge-Kutta 4 (fori_loop) of an MLP vector field."""
    b, d, h = 128, 32, 128
    y0 = _init((b, d), 0, 1.0)
    params = {"w1": _init((d, h), 1), "w2": _init((h, d), 2)}

    def fn(p, y):
        def f(y):
            return jnp.tanh(y @ p["w1"]) @ p["w2"]

        def step(_, y, dt=0.05):
            k1 = f(y)
            k2 = f(y + dt / 2 * k1)
            k3 = f(y + dt / 2 * k2)
            k4 = f(y + dt * k3)
            return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

        return jax.lax.fori_loop(0, 16, step, y)

    return fn, (params, y0)


def make_ssm():
    """Diagonal linear state-space model (S4D / Mamba-style): input-dependent decays, a parallel
    associative scan over 512 steps, gated output projection; two layers."""
    b, t, d, n = 4, 512, 64, 16
    x = _init((b, t, d), 0, 1.0)
    params = [{"a": _init((d, n), 10 + i, 0.5), "bproj": _init((d, n), 20 + i), "c": _init((n, d), 30 + i),
               "gate": _init((d, d), 40 + i)} for i in range(2)]

    def fn(ps, x):
        for p in ps:
            decay = jnp.exp(-jax.nn.softplus(jnp.einsum("btd,dn->btn", x, p["a"])))  # (b, t, n)
            inp = jnp.einsum("btd,dn->btn", x, p["bproj"])

            def combine(l, r):
                return l[0] * r[0], r[0] * l[1] + r[1]

            _, h = jax.lax.associative_scan(combine, (decay, inp), axis=1)
            x = x + (h @ p["c"]) * jax.nn.sigmoid(x @ p["gate"])
        return x[:, -1]

    return fn, (params, x)


def make_retrieval():
    """Dense retrieval: score 256 queries against 16,384 normalised keys, top-k (k=32) per query,
    gather the winners' values and softmax-pool them."""
    q_n, k_n, d, k = 256, 16384, 64, 32
    q = _init((q_n, d), 0, 1.0)
    keys = _init((k_n, d), 1, 1.0)
    values = _init((k_n, d), 2, 1.0)

    def fn(q, keys, values):
        keys = keys / jnp.linalg.norm(keys, axis=-1, keepdims=True)
        scores = q @ keys.T  # (Q, K)
        top, idx = jax.lax.top_k(scores, k)
        return jnp.einsum("qk,qkd->qd", jax.nn.softmax(top, axis=-1), values[idx])

    return fn, (q, keys, values)


def make_pointnet():
    """PointNet: a shared per-point MLP (64-128-256) over 2,048 points, a symmetric max-pool, and
    a classifier head, for a batch of 4 point clouds."""
    b, n = 4, 2048
    pts = _init((b, n, 3), 0, 1.0)
    params = {"w1": _init((3, 64), 1), "w2": _init((64, 128), 2), "w3": _init((128, 256), 3),
              "h1": _init((256, 128), 4), "h2": _init((128, 10), 5)}

    def fn(p, pts):
        h = jax.nn.relu(pts @ p["w1"])
        h = jax.nn.relu(h @ p["w2"])
        h = (h @ p["w3"]).max(axis=1)  # (b, 256): order-invariant
        return jax.nn.relu(h @ p["h1"]) @ p["h2"]

    return fn, (params, pts)


SUITE = {"dwsep": make_dwsep, "mixer": make_mixer, "unet": make_unet, "recsys": make_recsys,
         "stencil": make_stencil, "odd_attention": make_odd_attention, "wavenet": make_wavenet, "moe": make_moe,
         "gnn": make_gnn, "fno": make_fno, "neural_ode": make_neural_ode, "ssm": make_ssm, "retrieval": make_retrieval,
         "pointnet": make_pointnet}
