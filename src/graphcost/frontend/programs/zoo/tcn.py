"""Temporal-convolution family: a WaveNet-style stack of gated dilated causal 1-D convolutions.

WaveNet: A Generative Model for Raw Audio (van den Oord et al., arXiv:1609.03499); see also An
Empirical Evaluation of Generic Convolutional and Recurrent Networks for Sequence Modeling (TCN,
arXiv:1803.01271). Quantised samples (256 levels, mu-law style token ids) are embedded and passed
through a causal conv; layer i (dilation d_i = 2^(i mod cycle), kernel K, left padding d_i (K-1))
computes one conv with 2C outputs split into filter / gate, z = tanh(W_f *_d x) * sigmoid(W_g *_d x),
then a 1x1 conv (a dense layer) gives the residual x <- x + W_r z and the skip s += W_s z. The head is
relu -> dense -> relu -> dense to 256 logits per step; training: next-sample
cross-entropy (teacher forcing), adam.

Names: ``tcn-k{kernel}-l{layers}-c{channels}-s{seq}-b{batch}-{fwd|train}`` (dilation cycle 4: 1, 2,
4, 8, 1, 2, ...).
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "tcn"
LEVELS, CYCLE = 256, 4


def build(kernel: int, layers: int, channels: int, seq: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    skip_ch = channels

    def causal_conv(features: int, width: int, dilation: int, name: str):
        return nn.Conv(features, (width,), kernel_dilation=(dilation,), padding=((dilation * (width - 1), 0),), name=name)

    class GatedResidualLayer(nn.Module):
        dilation: int

        @nn.compact
        def __call__(self, x):  # x: (B, S, C) -> (residual out (B, S, C), skip (B, S, C_skip))
            fg = causal_conv(2 * channels, kernel, self.dilation, "dilated")(x)  # (B, S, 2C)
            z = jnp.tanh(fg[..., :channels]) * jax.nn.sigmoid(fg[..., channels:])  # gated activation
            rs = nn.Dense(channels + skip_ch, name="res_skip")(z)  # the two 1x1 convs as one dense layer
            return x + rs[..., :channels], rs[..., channels:]

    class WaveNet(nn.Module):
        @nn.compact
        def __call__(self, samples):  # samples: (B, S) int32 in [0, LEVELS)
            x = nn.Embed(LEVELS, channels, name="embed")(samples)  # (B, S, C) (= one-hot 1x1 conv)
            x = causal_conv(channels, 2, 1, "causal_in")(x)
            skips = 0.0
            for i in range(layers):
                x, s = GatedResidualLayer(dilation=2 ** (i % CYCLE), name=f"layer{i}")(x)
                skips = skips + s
            h = nn.relu(nn.Dense(skip_ch, name="post1")(nn.relu(skips)))  # 1x1 convs as dense layers
            return nn.Dense(LEVELS, name="post2")(h)  # (B, S, LEVELS) logits

    # a deterministic quantised signal: two sines + noise, mu-law companded to 256 levels
    t = jnp.arange(seq + 1, dtype=jnp.float32)[None, :]
    phase = jax.random.uniform(jax.random.PRNGKey(17), (batch, 1)) * 6.28
    wave = 0.6 * jnp.sin(0.07 * t + phase) + 0.3 * jnp.sin(0.31 * t) + 0.05 * jax.random.normal(jax.random.PRNGKey(18), (batch, seq + 1))
    mu = jnp.sign(wave) * jnp.log1p(255.0 * jnp.abs(wave)) / jnp.log(256.0)  # in (-1, 1)
    samples = jnp.clip(((mu + 1.0) / 2.0 * 255.0).round(), 0, LEVELS - 1).astype(jnp.int32)  # (B, S + 1)
    return make_program(WaveNet(), (samples[:, :-1],), samples[:, 1:], mode, loss="xent", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(kernel=[2, 3], layers=[4, 6], size=[(16, 128, 2), (32, 64, 2), (64, 32, 1)], mode=["fwd", "train"]):
        hp["channels"], hp["seq"], hp["batch"] = hp.pop("size")
        name = f"tcn-k{hp['kernel']}-l{hp['layers']}-c{hp['channels']}-s{hp['seq']}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
