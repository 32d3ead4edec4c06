"""Mixture-of-Experts family: a small causal Transformer LM whose feed-forward layers are routed experts.

Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts Layer (arXiv:1701.06538),
GShard (arXiv:2006.16668) and Switch Transformers (arXiv:2101.03961). Per token x (T = B*S tokens):
router probabilities p = softmax(x W_r) (E experts), top-k (k = 1 or 2, `jax.lax.top_k`) gates g
(renormalised over the k chosen for k = 2), each expert holds at most C = ceil(1.25 k T / E) tokens
(overflowing tokens are dropped for that choice, first choices take precedence), and
y = sum_k g_k FFN_{e_k}(x) with FFN_e(x) = W2_e gelu(W1_e x + b1_e) + b2_e. Dispatch is either
``dense`` (one-hot dispatch / combine tensors (T, E, C) and einsums, GShard / Switch style) or
``gather`` (a token-index table (E, C) built by scatter, a gather of the tokens into (E, C, D) and
a gather of the expert outputs back per token choice). Training minimises next-token
cross-entropy + 0.01 * the Switch load-balancing loss E * sum_e f_e P_e (f_e: share of tokens whose
first choice is e, P_e: mean router probability of e), adam; forward returns (logits, aux loss).

Names: ``moe-{dense|gather}-l{layers}-d{d_model}-e{experts}-k{top_k}-s{seq}-b{batch}-{fwd|train}``.
"""

from __future__ import annotations

import math

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, optax_train_step

FAMILY = "moe"
VOCAB, HEADS, CAPACITY_FACTOR, AUX_WEIGHT = 256, 4, 1.25, 0.01


def build(dispatch: str, layers: int, d_model: int, experts: int, top_k: int, seq: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    dh, d_ff = d_model // HEADS, 2 * d_model
    tokens_total = batch * seq
    capacity = math.ceil(CAPACITY_FACTOR * top_k * tokens_total / experts)

    def slots(expert_idx):
        """expert_idx: (T, k) -> (slot (T, k) int32 position inside the expert's buffer, keep (T, k) bool)."""
        onehot = jax.nn.one_hot(expert_idx.T.reshape(-1), experts, dtype=jnp.int32)  # (k*T, E) choice-major
        slot = (jnp.cumsum(onehot, axis=0) * onehot).sum(axis=-1) - 1  # (k*T,) rank among the expert's tokens
        slot = slot.reshape(top_k, tokens_total).T  # (T, k)
        return slot, slot < capacity

    class MoEFeedForward(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (T, D) -> (y (T, D), aux ())
            probs = jax.nn.softmax(nn.Dense(experts, use_bias=False, name="router")(x), axis=-1)  # (T, E)
            gate, expert_idx = jax.lax.top_k(probs, top_k)  # (T, k), (T, k)
            if top_k > 1:
                gate = gate / gate.sum(axis=-1, keepdims=True)
            slot, keep = slots(expert_idx)
            gate = gate * keep
            w1 = self.param("w1", nn.initializers.lecun_normal(batch_axis=(0,)), (experts, d_model, d_ff))
            b1 = self.param("b1", nn.initializers.zeros, (experts, 1, d_ff))
            w2 = self.param("w2", nn.initializers.lecun_normal(batch_axis=(0,)), (experts, d_ff, d_model))
            b2 = self.param("b2", nn.initializers.zeros, (experts, 1, d_model))

            def experts_ffn(xe):  # (E, C, D) -> (E, C, D)
                return jnp.einsum("ecf,efd->ecd", nn.gelu(jnp.einsum("ecd,edf->ecf", xe, w1) + b1), w2) + b2

            if dispatch == "dense":
                sel = jax.nn.one_hot(expert_idx, experts) * keep[..., None]  # (T, k, E)
                pos = jax.nn.one_hot(slot, capacity)  # (T, k, C); dropped slots >= C are all-zero rows
                dispatch_t = jnp.einsum("tke,tkc->tec", sel, pos)  # (T, E, C) 0/1
                combine_t = jnp.einsum("tke,tkc,tk->tec", sel, pos, gate)  # (T, E, C) gate weights
                ye = experts_ffn(jnp.einsum("tec,td->ecd", dispatch_t, x))  # (E, C, D)
                y = jnp.einsum("tec,ecd->td", combine_t, ye)  # (T, D)
            else:
                flat = jnp.where(keep, expert_idx * capacity + slot, experts * capacity)  # (T, k); overflow -> OOB
                token_id = jnp.broadcast_to(jnp.arange(tokens_total)[:, None], flat.shape)
                table = jnp.full((experts * capacity,), tokens_total, jnp.int32)  # empty slots -> zero row T
                table = table.at[flat.reshape(-1)].set(token_id.reshape(-1), mode="drop")  # (E*C,)
                x_pad = jnp.concatenate([x, jnp.zeros((1, d_model), x.dtype)], axis=0)  # (T+1, D)
                ye = experts_ffn(x_pad[table].reshape(experts, capacity, d_model))  # (E, C, D)
                picked = ye.reshape(experts * capacity, d_model)[jnp.minimum(flat, experts * capacity - 1)]  # (T, k, D)
                y = jnp.einsum("tkd,tk->td", picked, gate)  # (T, D)
            frac = jax.nn.one_hot(expert_idx[:, 0], experts).mean(axis=0)  # (E,) f_e
            aux = experts * jnp.sum(frac * probs.mean(axis=0))
            return y, aux

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, S, D) -> ((B, S, D), aux)
            b, s, _ = x.shape
            h = nn.LayerNorm()(x)
            qkv = nn.Dense(3 * d_model, use_bias=False)(h).reshape(b, s, 3, HEADS, dh)  # (B, S, 3, H, Dh)
            att = jnp.einsum("bqhd,bkhd->bhqk", qkv[:, :, 0], qkv[:, :, 1]) * dh**-0.5  # (B, H, S, S)
            att = jnp.where(jnp.tril(jnp.ones((s, s), bool)), att, jnp.finfo(jnp.float32).min)
            o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(att, axis=-1), qkv[:, :, 2]).reshape(b, s, d_model)
            x = x + nn.Dense(d_model)(o)
            y, aux = MoEFeedForward()(nn.LayerNorm()(x).reshape(b * s, d_model))  # tokens (T, D)
            return x + y.reshape(b, s, d_model), aux

    class MoELM(nn.Module):
        @nn.compact
        def __call__(self, tokens):  # tokens: (B, S) int32 -> (logits (B, S, VOCAB), aux ())
            x = nn.Embed(VOCAB, d_model)(tokens) + self.param("pos", nn.initializers.normal(0.02), (seq, d_model))
            aux = 0.0
            for _ in range(layers):
                x, a = Block()(x)
                aux = aux + a / layers
            return nn.Dense(VOCAB)(nn.LayerNorm()(x)), aux

    model = MoELM()
    data = jax.random.randint(jax.random.PRNGKey(9), (batch, seq + 1), 0, VOCAB)
    inputs, target = data[:, :-1], data[:, 1:]  # (B, S) each
    params = model.init(jax.random.PRNGKey(0), inputs)
    if mode == "fwd":
        return (lambda params, tokens: model.apply(params, tokens)), (params, inputs)
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)

    def loss_fn(params, tokens, target):
        logits, aux = model.apply(params, tokens)
        logp = jax.nn.log_softmax(logits, axis=-1)  # (B, S, VOCAB)
        return -jnp.mean(jnp.take_along_axis(logp, target[..., None], axis=-1)) + AUX_WEIGHT * aux

    return optax_train_step(loss_fn, tx), (params, opt_state, inputs, target)


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(dispatch=["dense", "gather"], routing=[(4, 1), (8, 1), (8, 2)],
                   size=[(1, 32, 32, 4), (1, 64, 64, 2), (2, 64, 32, 4)], mode=["fwd", "train"]):
        (experts, top_k), (layers, d_model, seq, batch) = hp.pop("routing"), hp.pop("size")
        hp = {"dispatch": hp["dispatch"], "layers": layers, "d_model": d_model, "experts": experts, "top_k": top_k,
              "seq": seq, "batch": batch, "mode": hp["mode"]}
        name = f"moe-{hp['dispatch']}-l{layers}-d{d_model}-e{experts}-k{top_k}-s{seq}-b{batch}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
