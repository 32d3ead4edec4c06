"""GPT family: a pre-LN causal Transformer language model, as one KV-cached decoding step or a training step.

Language Models are Unsupervised Multitask Learners (GPT-2, Radford et al. 2019) on the Transformer
of Attention Is All You Need (arXiv:1706.03762); KV caching as in Efficiently Scaling Transformer
Inference (arXiv:2211.05102). Block: x += W_o MHA(LN(x)); x += W_2 gelu(W_1 LN(x)); learned
position embeddings, final LN and an output layer tied to the token embedding (logits = h E^T).

Decoding step (``dec``, forward only): inputs the caches K, V (B, L, S_max, H, Dh), one new token
per sequence (B,) and the position p. Each layer writes its new k_p, v_p into the cache
(``dynamic_update_slice`` at [:, l, p]) and attends with softmax(q K^T / sqrt(Dh) + mask) V over
the keys j <= p; the program returns the next-token logits (B, V) and the updated caches.
Training step (``tr``): teacher forcing on a full causal sequence, next-token cross-entropy, adam.

Names: ``gpt-dec-l{layers}-d{d_model}-h{heads}-c{cache_len}-b{batch}-fwd`` and
``gpt-tr-l{layers}-d{d_model}-h{heads}-s{seq}-b{batch}-train``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "gpt"
VOCAB = 320
MAX_WORK = 128**2 * 64  # bound on layers * d_model^2 * seq * batch of a training variant


def build(kind: str, layers: int, d_model: int, heads: int, seq: int, batch: int, mode: str):
    """kind 'dec': one decoding step with a cache of `seq` positions; kind 'tr': a sequence of `seq` tokens."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    dh = d_model // heads
    neg = jnp.finfo(jnp.float32).min

    class Block(nn.Module):
        def setup(self):
            self.ln1, self.ln2 = nn.LayerNorm(), nn.LayerNorm()
            self.c_attn = nn.Dense(3 * d_model)  # fused q, k, v projection
            self.c_proj = nn.Dense(d_model)
            self.c_fc, self.c_out = nn.Dense(4 * d_model), nn.Dense(d_model)

        def mlp(self, x):
            return self.c_out(nn.gelu(self.c_fc(self.ln2(x))))

        def __call__(self, x):  # full causal sequence, x: (B, S, D)
            b, s, _ = x.shape
            qkv = self.c_attn(self.ln1(x)).reshape(b, s, 3, heads, dh)  # (B, S, 3, H, Dh)
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # (B, S, H, Dh)
            att = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(jnp.float32(dh))  # (B, H, S, S)
            att = jnp.where(jnp.tril(jnp.ones((s, s), bool))[None, None], att, neg)
            y = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(att, axis=-1), v).reshape(b, s, d_model)
            x = x + self.c_proj(y)
            return x + self.mlp(x)

        def step(self, x, kcache, vcache, layer, pos):
            # x: (B, D) new token's state; kcache, vcache: (B, L, S_max, H, Dh); pos: () int32
            b = x.shape[0]
            qkv = self.c_attn(self.ln1(x)).reshape(b, 3, heads, dh)  # (B, 3, H, Dh)
            q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]  # (B, H, Dh)
            zero = jnp.zeros((), jnp.int32)
            start = (zero, jnp.int32(layer), pos, zero, zero)
            kcache = jax.lax.dynamic_update_slice(kcache, k[:, None, None], start)
            vcache = jax.lax.dynamic_update_slice(vcache, v[:, None, None], start)
            keys, values = kcache[:, layer], vcache[:, layer]  # (B, S_max, H, Dh)
            att = jnp.einsum("bhd,bshd->bhs", q, keys) / jnp.sqrt(jnp.float32(dh))  # (B, H, S_max)
            visible = jnp.arange(keys.shape[1]) <= pos  # (S_max,) keys written so far
            att = jnp.where(visible[None, None], att, neg)
            y = jnp.einsum("bhs,bshd->bhd", jax.nn.softmax(att, axis=-1), values).reshape(b, d_model)
            x = x + self.c_proj(y)
            return x + self.mlp(x), kcache, vcache

    class GPT(nn.Module):
        @nn.compact
        def __call__(self, *inputs):
            wte = nn.Embed(VOCAB, d_model, embedding_init=nn.initializers.normal(0.02), name="wte")
            wpe = nn.Embed(seq, d_model, embedding_init=nn.initializers.normal(0.01), name="wpe")
            blocks = [Block(name=f"h{i}") for i in range(layers)]
            ln_f = nn.LayerNorm(name="ln_f")
            if kind == "tr":
                (tokens,) = inputs  # (B, S) int32
                x = wte(tokens) + wpe(jnp.arange(tokens.shape[1]))[None]  # (B, S, D)
                for blk in blocks:
                    x = blk(x)
                return wte.attend(ln_f(x))  # (B, S, VOCAB)
            kcache, vcache, token, pos = inputs  # caches (B, L, S_max, H, Dh); token (B,); pos ()
            x = wte(token) + wpe(pos)[None]  # (B, D)
            for i, blk in enumerate(blocks):
                x, kcache, vcache = blk.step(x, kcache, vcache, i, pos)
            return wte.attend(ln_f(x)), kcache, vcache  # (B, VOCAB), new caches

    key_tok, key_k, key_v = jax.random.split(jax.random.PRNGKey(5), 3)
    if kind == "tr":
        tokens = jax.random.randint(key_tok, (batch, seq + 1), 0, VOCAB)
        return make_program(GPT(), (tokens[:, :-1],), tokens[:, 1:], mode, loss="xent", optimizer="adam")
    if mode != "fwd":
        raise ValueError("gpt 'dec' programs are decoding steps (forward only)")
    pos = seq // 2 + 3  # decode the token at this position; the cache holds the earlier ones
    filled = (jnp.arange(seq) < pos)[None, None, :, None, None]
    shape = (batch, layers, seq, heads, dh)
    kcache = jnp.where(filled, jax.random.normal(key_k, shape, jnp.float32), 0.0)
    vcache = jnp.where(filled, jax.random.normal(key_v, shape, jnp.float32), 0.0)
    token = jax.random.randint(key_tok, (batch,), 0, VOCAB)
    return make_program(GPT(), (kcache, vcache, token, jnp.int32(pos)), None, "fwd", loss="xent")


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(layers=[1, 2, 4], dims=[(64, 4), (128, 8)], shape=[(64, 8), (128, 1), (128, 4)]):  # decoding
        (d_model, heads), (hp["seq"], hp["batch"]) = hp.pop("dims"), hp.pop("shape")
        name = f"gpt-dec-l{hp['layers']}-d{d_model}-h{heads}-c{hp['seq']}-b{hp['batch']}-fwd"
        out.append(ProgramSpec(name, FAMILY, {"kind": "dec", **hp, "d_model": d_model, "heads": heads, "mode": "fwd"}, build))
    for hp in grid(layers=[1, 2], dims=[(32, 2), (64, 4), (128, 8)], shape=[(16, 4), (32, 4), (64, 2), (128, 1)]):
        (d_model, heads), (seq, batch) = hp.pop("dims"), hp.pop("shape")
        if hp["layers"] * d_model**2 * seq * batch > MAX_WORK:  # keep one call in the ~0.1-5 ms range
            continue
        name = f"gpt-tr-l{hp['layers']}-d{d_model}-h{heads}-s{seq}-b{batch}-train"
        out.append(ProgramSpec(name, FAMILY, {"kind": "tr", **hp, "d_model": d_model, "heads": heads, "seq": seq,
                                              "batch": batch, "mode": "train"}, build))
    return out

