"""Top-k family: sorting, top-k selection and gather-heavy programs.

Two kinds:

- ``knn``: k-nearest-neighbour retrieval with a learned query encoder, as in kNN-augmented models
  ("Generalization through Memorization: Nearest Neighbor Language Models", arXiv:1911.00172).
  q = MLP(x); candidates = top_k(2 q.K^T - |K|^2) over a (N, D) key bank (the negative squared L2
  distance up to |q|^2, ``jax.lax.top_k``);
  the candidates' keys and values are gathered, re-ranked by cosine similarity (``jnp.argsort``),
  and pooled: o = sum_j softmax(cos_j / tau + p_rank(j)) v_j, with learned per-rank biases p;
  a Dense head classifies [o, q]. The query encoder learns through the re-ranking scores of the
  gathered candidates (the top-k indices themselves carry no gradient).
- ``beam``: S steps of beam search over a small recurrent decoder ("Sequence to Sequence Learning
  with Neural Networks", arXiv:1409.3215, Sec. 3.1): per step, candidate scores
  s_b + log softmax(W_o h_b) over all (beam, token) pairs, ``top_k`` over the flattened
  (beams * vocab) axis, gather of the surviving beams' states (``take_along_axis``), embedding of
  the chosen tokens and a tanh cell update. At the end the beams are ordered by score
  (``jnp.argsort`` / ``jnp.sort``) and pooled with softmax(score) weights into a classifier.
  Gradients flow through the log-probabilities and the gathered states.

Training: softmax cross-entropy of the head (Adam).

Names: ``topk-knn-q{queries}-n{keys}-k{k}-d{dim}-{fwd|train}`` and
``topk-beam-b{batch}-w{beams}-v{vocab}-h{hidden}-s{steps}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "topk"
IN_DIM, VALUE_DIM, N_CLASSES = 24, 16, 8


def _knn(queries: int, keys: int, k: int, dim: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class KNN(nn.Module):
        @nn.compact
        def __call__(self, x, bank, values):  # x: (Q, IN_DIM); bank: (N, D); values: (N, VALUE_DIM)
            q = nn.Dense(dim)(nn.gelu(nn.Dense(2 * dim)(x)))  # (Q, D)
            dist = 2.0 * q @ bank.T - jnp.sum(bank * bank, axis=-1)[None, :]  # (Q, N) = -|q-k|^2 + |q|^2
            _, idx = jax.lax.top_k(dist, k)  # (Q, k) nearest candidates
            cand_k = jnp.take(bank, idx, axis=0)  # (Q, k, D)
            cand_v = jnp.take(values, idx, axis=0)  # (Q, k, VALUE_DIM)
            qn = q / jnp.linalg.norm(q, axis=-1, keepdims=True)
            kn = cand_k / jnp.linalg.norm(cand_k, axis=-1, keepdims=True)
            cos = jnp.einsum("qd,qkd->qk", qn, kn)  # (Q, k) re-ranking score
            order = jnp.argsort(-cos, axis=-1)  # (Q, k) best first
            cos = jnp.take_along_axis(cos, order, axis=-1)
            cand_v = jnp.take_along_axis(cand_v, order[..., None], axis=1)  # (Q, k, VALUE_DIM)
            rank_bias = self.param("rank_bias", nn.initializers.zeros, (k,))
            w = jax.nn.softmax(cos / 0.1 + rank_bias, axis=-1)  # (Q, k)
            o = jnp.einsum("qk,qkv->qv", w, cand_v)  # (Q, VALUE_DIM)
            return nn.Dense(N_CLASSES)(jnp.concatenate([o, q], axis=-1))  # (Q, N_CLASSES)

    kx, kb, kv, ky = jax.random.split(jax.random.PRNGKey(41), 4)
    x = jax.random.normal(kx, (queries, IN_DIM), jnp.float32)
    bank = jax.random.normal(kb, (keys, dim), jnp.float32)
    values = jax.random.normal(kv, (keys, VALUE_DIM), jnp.float32)
    y = jax.random.randint(ky, (queries,), 0, N_CLASSES, jnp.int32)
    return make_program(KNN(), (x, bank, values), y, mode, loss="xent", optimizer="adam")


def _beam(batch: int, beams: int, vocab: int, hidden: int, steps: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class BeamSearch(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, IN_DIM) context features
            b = x.shape[0]
            embed = nn.Embed(vocab, hidden)
            out_proj, cell = nn.Dense(vocab), nn.Dense(hidden)
            h = jnp.tanh(nn.Dense(hidden)(x))  # (B, H)
            h = jnp.broadcast_to(h[:, None, :], (b, beams, hidden))  # (B, W, H)
            scores = jnp.where(jnp.arange(beams) == 0, 0.0, -1e9)[None, :].repeat(b, axis=0)  # only beam 0 alive
            for _ in range(steps):
                logp = jax.nn.log_softmax(out_proj(h), axis=-1)  # (B, W, V)
                cand = (scores[..., None] + logp).reshape(b, beams * vocab)  # (B, W*V)
                scores, flat = jax.lax.top_k(cand, beams)  # (B, W)
                parent, token = flat // vocab, flat % vocab  # (B, W) each
                h = jnp.take_along_axis(h, parent[..., None], axis=1)  # (B, W, H) surviving beams
                h = jnp.tanh(cell(jnp.concatenate([h, embed(token)], axis=-1)))  # (B, W, H)
            order = jnp.argsort(-scores, axis=-1)  # (B, W) best beam first
            h = jnp.take_along_axis(h, order[..., None], axis=1)
            ranked = jnp.flip(jnp.sort(scores, axis=-1), axis=-1)  # (B, W) descending scores
            w = jax.nn.softmax(ranked, axis=-1)
            pooled = jnp.einsum("bw,bwh->bh", w, h)  # (B, H)
            return nn.Dense(N_CLASSES)(jnp.concatenate([pooled, h[:, 0]], axis=-1))  # (B, N_CLASSES)

    kx, ky = jax.random.split(jax.random.PRNGKey(43))
    x = jax.random.normal(kx, (batch, IN_DIM), jnp.float32)
    y = jax.random.randint(ky, (batch,), 0, N_CLASSES, jnp.int32)
    return make_program(BeamSearch(), (x,), y, mode, loss="xent", optimizer="adam")


def build(kind: str, mode: str, **hp):
    return (_knn if kind == "knn" else _beam)(mode=mode, **hp)


def variants() -> list[ProgramSpec]:
    out = []
    for hp in grid(queries=[16, 64], keys=[512, 2048], k=[8, 24], dim=[32], mode=["fwd", "train"]):
        name = f"topk-knn-q{hp['queries']}-n{hp['keys']}-k{hp['k']}-d{hp['dim']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, {"kind": "knn", **hp}, build))
    for hp in grid(batch=[4, 16], beams=[4, 8], vocab=[128, 512], hidden=[32], steps=[3], mode=["fwd", "train"]):
        name = (f"topk-beam-b{hp['batch']}-w{hp['beams']}-v{hp['vocab']}-h{hp['hidden']}-s{hp['steps']}"
                f"-{hp['mode']}")
        out.append(ProgramSpec(name, FAMILY, {"kind": "beam", **hp}, build))
    return out
