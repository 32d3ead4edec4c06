"""BERT family: a bidirectional post-LayerNorm Transformer encoder over token ids, trained by masked-LM.

BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding (Devlin et al.,
arXiv:1810.04805). Input embedding e_i = E_tok[t_i] + E_pos[i] + E_seg[s_i], then LayerNorm. Each
block is post-LN: x = LN(x + MHA(x)), x = LN(x + W2 gelu(W1 x)); padded keys get an additive
-10000 on the attention logits, softmax(Q K^T / sqrt(d_head) + (1 - m) * -1e4) V. The masked-LM
head gathers the hidden states at the masked positions and applies Dense + gelu + LN and the tied
output embedding: logits = h E_tok^T + b. The example batch is a sentence pair per row (segment
0 / 1), right-padded to `seq` (row lengths from just under `seq` down to `seq / 2`), with ~15% of the
positions replaced by [MASK]; training minimises the cross-entropy of the original tokens at those
fixed positions (adam).

Names: ``bert-l{layers}-d{d_model}-h{heads}-s{seq}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "bert"
VOCAB = 384
PAD, MASK, CLS, SEP = 0, 1, 2, 3  # special token ids; ordinary tokens are >= 4
MAX_WORK = 128**2 * 64  # bound on layers * d_model^2 * seq * batch of a variant


def _example_batch(seq: int, batch: int, n_masked: int):
    """Deterministic MLM batch: (tokens, segments, pad_mask, mlm_positions, mlm_targets)."""
    import jax
    import jax.numpy as jnp

    k_tok, k_pos = jax.random.split(jax.random.PRNGKey(11))
    pos = jnp.arange(seq)  # (S,)
    lengths = seq - ((jnp.arange(batch) + 1) * (seq // 2)) // batch  # (B,) every row padded, the last to seq/2
    valid = pos[None, :] < lengths[:, None]  # (B, S) bool
    sep = lengths // 2  # (B,) end of sentence A
    tokens = jax.random.randint(k_tok, (batch, seq), 4, VOCAB)  # (B, S) int32
    tokens = jnp.where(pos[None, :] == 0, CLS, tokens)
    tokens = jnp.where((pos[None, :] == sep[:, None] - 1) | (pos[None, :] == lengths[:, None] - 1), SEP, tokens)
    tokens = jnp.where(valid, tokens, PAD).astype(jnp.int32)
    segments = ((pos[None, :] >= sep[:, None]) & valid).astype(jnp.int32)  # (B, S)
    # masked positions: n_masked distinct positions in [1, seq/2 - 1) of each row (inside every row's length)
    keys = jax.random.split(k_pos, batch)
    picks = jax.vmap(lambda k: jax.random.permutation(k, seq // 2 - 2)[:n_masked])(keys)  # (B, P)
    positions = (jnp.sort(picks, axis=1) + 1).astype(jnp.int32)  # (B, P)
    targets = jnp.take_along_axis(tokens, positions, axis=1)  # (B, P) original tokens
    rows = jnp.arange(batch)[:, None]
    inputs = tokens.at[rows, positions].set(MASK)
    return inputs, segments, valid.astype(jnp.int32), positions, targets


def build(layers: int, d_model: int, heads: int, seq: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    dh = d_model // heads

    class Attention(nn.Module):
        @nn.compact
        def __call__(self, x, bias):  # x: (B, S, D); bias: (B, 1, 1, S) additive key mask
            b, s, _ = x.shape
            q = nn.Dense(d_model, name="query")(x).reshape(b, s, heads, dh)  # (B, S, H, Dh)
            k = nn.Dense(d_model, name="key")(x).reshape(b, s, heads, dh)
            v = nn.Dense(d_model, name="value")(x).reshape(b, s, heads, dh)
            logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) * (1.0 / dh**0.5) + bias  # (B, H, S, S)
            probs = jax.nn.softmax(logits, axis=-1)
            ctx = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, d_model)  # (B, S, D)
            return nn.Dense(d_model, name="output")(ctx)

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, bias):  # post-LN: LN after each residual add
            x = nn.LayerNorm(epsilon=1e-12)(x + Attention()(x, bias))
            h = nn.gelu(nn.Dense(4 * d_model)(x))  # (B, S, 4D)
            return nn.LayerNorm(epsilon=1e-12)(x + nn.Dense(d_model)(h))

    class Bert(nn.Module):
        @nn.compact
        def __call__(self, tokens, segments, pad_mask, mlm_positions):
            # tokens, segments, pad_mask: (B, S) int32; mlm_positions: (B, P) int32
            wte = nn.Embed(VOCAB, d_model, embedding_init=nn.initializers.normal(0.02), name="word")
            x = wte(tokens) + nn.Embed(2, d_model, name="segment")(segments)  # (B, S, D)
            x = x + self.param("position", nn.initializers.normal(0.02), (seq, d_model))[None]
            x = nn.LayerNorm(epsilon=1e-12)(x)
            bias = ((1.0 - pad_mask.astype(jnp.float32)) * -10000.0)[:, None, None, :]  # (B, 1, 1, S)
            for _ in range(layers):
                x = Block()(x, bias)
            h = jnp.take_along_axis(x, mlm_positions[..., None], axis=1)  # (B, P, D) masked positions only
            h = nn.LayerNorm(epsilon=1e-12)(nn.gelu(nn.Dense(d_model, name="transform")(h)))
            out_bias = self.param("mlm_bias", nn.initializers.zeros, (VOCAB,))
            return wte.attend(h) + out_bias  # (B, P, VOCAB) logits

    n_masked = max(2, (3 * seq) // 20)  # ~15% of the positions
    tokens, segments, pad_mask, positions, targets = _example_batch(seq, batch, n_masked)
    return make_program(Bert(), (tokens, segments, pad_mask, positions), targets, mode, loss="xent", optimizer="adam")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(layers=[1, 2], dims=[(32, 2), (64, 4), (128, 8)], shape=[(16, 4), (32, 4), (64, 4), (128, 2)],
                   mode=["fwd", "train"]):
        (d_model, heads), (seq, batch) = hp["dims"], hp["shape"]
        if hp["layers"] * d_model**2 * seq * batch > MAX_WORK:  # keep one call in the ~0.1-5 ms range
            continue
        name = f"bert-l{hp['layers']}-d{d_model}-h{heads}-s{seq}-b{batch}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, {"layers": hp["layers"], "d_model": d_model, "heads": heads, "seq": seq,
                                              "batch": batch, "mode": hp["mode"]}, build))
    return out
