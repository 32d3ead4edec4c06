"""Transformer family: pre-LayerNorm encoder (bidirectional) and decoder (causal language model).

Attention is written out (not `nn.MultiHeadDotProductAttention`) so the graph shows the
reshape / dot / softmax structure explicitly: softmax(Q K^T / sqrt(d_head)) V (Vaswani et al. eq. 1).

Names: ``tfenc-l{layers}-d{d_model}-h{heads}-s{seq}-b{batch}-{fwd|train}`` (encoder, mean-pooled
regression head) and ``tfdec-l{layers}-d{d_model}-h{heads}-s{seq}-b{batch}-{fwd|train}``
(decoder with token embedding and next-token cross-entropy).
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

VOCAB = 512


def _layers(d_model: int, heads: int, causal: bool):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class SelfAttention(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, S, D)
            b, s, d = x.shape
            dh = d // heads
            qkv = nn.Dense(3 * d, use_bias=False)(x).reshape(b, s, 3, heads, dh)
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # (B, S, H, Dh)
            logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(dh).astype(x.dtype)
            if causal:
                mask = jnp.tril(jnp.ones((s, s), bool))
                logits = jnp.where(mask, logits, jnp.finfo(x.dtype).min)
            attn = jax.nn.softmax(logits, axis=-1)
            out = jnp.einsum("bhqk,bkhd->bqhd", attn, v).reshape(b, s, d)
            return nn.Dense(d)(out)

    class Layer(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = x + SelfAttention()(nn.LayerNorm()(x))
            h = nn.gelu(nn.Dense(4 * d_model)(nn.LayerNorm()(x)))
            return x + nn.Dense(d_model)(h)

    return Layer


def build(kind: str, layers: int, d_model: int, heads: int, seq: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    Layer = _layers(d_model, heads, causal=(kind == "dec"))

    class Encoder(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, S, D) real-valued inputs
            x = nn.Dense(d_model)(x)
            for _ in range(layers):
                x = Layer()(x)
            return nn.Dense(1)(nn.LayerNorm()(x).mean(axis=1))[:, 0]  # (B,)

    class Decoder(nn.Module):
        @nn.compact
        def __call__(self, tokens):  # tokens: (B, S) int32
            x = nn.Embed(VOCAB, d_model)(tokens)
            x = x + self.param("pos", nn.initializers.normal(0.02), (seq, d_model))
            for _ in range(layers):
                x = Layer()(x)
            return nn.Dense(VOCAB)(nn.LayerNorm()(x))  # (B, S, VOCAB) logits

    key = jax.random.PRNGKey(3)
    if kind == "enc":
        x = jax.random.normal(key, (batch, seq, d_model), jnp.float32)
        y = jax.random.normal(key, (batch,), jnp.float32)
        return make_program(Encoder(), (x,), y, mode, loss="mse", optimizer="adam")
    tokens = jax.random.randint(key, (batch, seq), 0, VOCAB)
    return make_program(Decoder(), (tokens,), jnp.roll(tokens, -1, axis=1), mode, loss="xent", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for kind in ("enc", "dec"):
        for hp in grid(layers=[1, 2, 4], d_model=[64, 128], heads=[2, 4], seq=[32, 64, 128], batch=[2, 8], mode=["fwd", "train"]):
            name = f"tf{kind}-l{hp['layers']}-d{hp['d_model']}-h{hp['heads']}-s{hp['seq']}-b{hp['batch']}-{hp['mode']}"
            out.append(ProgramSpec(name, f"tf{kind}", {"kind": kind, **hp}, build))
    return out
