"""Encoder-decoder family: a T5-style sequence-to-sequence Transformer with cross-attention.

Attention Is All You Need (Vaswani et al., arXiv:1706.03762) with the T5 block layout of
Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer (Raffel et al.,
arXiv:1910.10683): pre-norm RMSNorm, x += Attn(RMS(x)), bias-free projections, a ReLU MLP, a
shared token embedding for source, target and the (tied, d^-1/2 scaled) output layer. Fixed
sinusoidal position encodings are added to both embeddings. Encoder self-attention and decoder
cross-attention mask the padded source keys; decoder self-attention is causal:
Attn(Q, K, V) = softmax(Q K^T / sqrt(d_head) + mask) V, with Q from the decoder and K, V from the
encoder output in cross-attention. The example batch pads source rows to lengths between `src`
and `src / 2`; training is teacher-forced seq2seq cross-entropy (target shifted right behind a
BOS token), adam.

Names: ``encdec-l{layers}-d{d_model}-h{heads}-s{src_len}-t{tgt_len}-b{batch}-{fwd|train}`` with
`layers` encoder and `layers` decoder blocks.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "encdec"
VOCAB = 256
PAD, BOS = 0, 1
MAX_WORK = 128**2 * 64  # bound on layers * d_model^2 * (src_len + tgt_len) * batch of a variant


def _sinusoid(length: int, d_model: int):
    """(length, d_model) fixed position encoding: sin / cos of pos / 10000^(2i/d)."""
    import numpy as np

    pos = np.arange(length)[:, None]
    inv = 1.0 / 10000 ** (np.arange(0, d_model, 2) / d_model)
    table = np.zeros((length, d_model), np.float32)
    table[:, 0::2], table[:, 1::2] = np.sin(pos * inv), np.cos(pos * inv)
    return table


def build(layers: int, d_model: int, heads: int, src_len: int, tgt_len: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    dh = d_model // heads
    neg = jnp.finfo(jnp.float32).min

    class MultiHeadAttention(nn.Module):
        @nn.compact
        def __call__(self, xq, xkv, mask):
            # xq: (B, Sq, D) queries; xkv: (B, Sk, D) keys/values; mask: bool, broadcastable to (B, 1, Sq, Sk)
            b, sq, _ = xq.shape
            sk = xkv.shape[1]
            q = nn.Dense(d_model, use_bias=False, name="q")(xq).reshape(b, sq, heads, dh)  # (B, Sq, H, Dh)
            kv = nn.Dense(2 * d_model, use_bias=False, name="kv")(xkv).reshape(b, sk, 2, heads, dh)
            k, v = kv[:, :, 0], kv[:, :, 1]  # (B, Sk, H, Dh)
            logits = jnp.einsum("bqhd,bkhd->bhqk", q * dh**-0.5, k)  # (B, H, Sq, Sk)
            probs = jax.nn.softmax(jnp.where(mask, logits, neg), axis=-1)
            out = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, sq, d_model)
            return nn.Dense(d_model, use_bias=False, name="o")(out)

    class FeedForward(nn.Module):
        @nn.compact
        def __call__(self, x):  # (B, S, D) -> (B, S, D)
            h = nn.relu(nn.Dense(4 * d_model, use_bias=False, name="wi")(x))
            return nn.Dense(d_model, use_bias=False, name="wo")(h)

    class EncoderBlock(nn.Module):
        @nn.compact
        def __call__(self, x, src_mask):  # x: (B, S, D); src_mask: (B, 1, 1, S)
            h = nn.RMSNorm()(x)
            x = x + MultiHeadAttention(name="self_attn")(h, h, src_mask)
            return x + FeedForward()(nn.RMSNorm()(x))

    class DecoderBlock(nn.Module):
        @nn.compact
        def __call__(self, y, enc, causal, src_mask):  # y: (B, T, D); enc: (B, S, D)
            h = nn.RMSNorm()(y)
            y = y + MultiHeadAttention(name="self_attn")(h, h, causal)
            y = y + MultiHeadAttention(name="cross_attn")(nn.RMSNorm()(y), enc, src_mask)
            return y + FeedForward()(nn.RMSNorm()(y))

    class EncoderDecoder(nn.Module):
        @nn.compact
        def __call__(self, src, src_valid, tgt_in):
            # src: (B, S) int32; src_valid: (B, S) bool; tgt_in: (B, T) int32
            embed = nn.Embed(VOCAB, d_model, embedding_init=nn.initializers.normal(1.0), name="shared")
            src_mask = src_valid[:, None, None, :]  # (B, 1, 1, S) key mask
            x = embed(src) + _sinusoid(src.shape[1], d_model)[None]  # (B, S, D)
            for i in range(layers):
                x = EncoderBlock(name=f"enc{i}")(x, src_mask)
            enc = nn.RMSNorm(name="enc_norm")(x)
            t = tgt_in.shape[1]
            causal = jnp.tril(jnp.ones((t, t), bool))[None, None]  # (1, 1, T, T)
            y = embed(tgt_in) + _sinusoid(t, d_model)[None]  # (B, T, D)
            for i in range(layers):
                y = DecoderBlock(name=f"dec{i}")(y, enc, causal, src_mask)
            return embed.attend(nn.RMSNorm(name="dec_norm")(y) * d_model**-0.5)  # (B, T, VOCAB)

    k_src, k_tgt = jax.random.split(jax.random.PRNGKey(7))
    lengths = src_len - ((jnp.arange(batch) + 1) * (src_len // 2)) // (batch + 1)  # (B,) all rows padded
    src_valid = jnp.arange(src_len)[None, :] < lengths[:, None]  # (B, S)
    src = jnp.where(src_valid, jax.random.randint(k_src, (batch, src_len), 2, VOCAB), PAD).astype(jnp.int32)
    tgt = jax.random.randint(k_tgt, (batch, tgt_len), 2, VOCAB)  # (B, T) target tokens
    tgt_in = jnp.concatenate([jnp.full((batch, 1), BOS, jnp.int32), tgt[:, :-1]], axis=1)  # shifted right
    return make_program(EncoderDecoder(), (src, src_valid, tgt_in), tgt, mode, loss="xent", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(layers=[1, 2], dims=[(32, 4), (64, 4), (128, 8)], shape=[(16, 8, 2), (16, 16, 4), (32, 16, 4), (64, 32, 2), (128, 32, 1)],
                   mode=["fwd", "train"]):
        (d_model, heads), (src_len, tgt_len, batch) = hp["dims"], hp["shape"]
        if hp["layers"] * d_model**2 * (src_len + tgt_len) * batch > MAX_WORK:  # keep a call in the ~0.1-5 ms range
            continue
        name = f"encdec-l{hp['layers']}-d{d_model}-h{heads}-s{src_len}-t{tgt_len}-b{batch}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, {"layers": hp["layers"], "d_model": d_model, "heads": heads, "src_len": src_len,
                                              "tgt_len": tgt_len, "batch": batch, "mode": hp["mode"]}, build))
    return out
