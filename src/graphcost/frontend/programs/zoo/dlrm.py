"""DLRM family: embedding-bag recommender with pairwise dot-product feature interaction (CTR model).

"Deep Learning Recommendation Model for Personalization and Recommendation Systems"
(arXiv:1906.00091). Each of T categorical features is a multi-hot *bag* of indices into its own
embedding table (vocabularies of different sizes); a bag is embedded by gathering its rows
(``jnp.take``) and reducing them:

- ``sum``: ragged bags as in an EmbeddingBag with offsets: a flat (B * bag,) index list, a
  per-lookup segment id and per-lookup validity weights, reduced with ``jax.ops.segment_sum``;
- ``mean``: a padded (B, bag) index array with a 0/1 mask, averaged over the bag axis.

The dense features go through a bottom MLP to the embedding width D; with z_0 = bottom output and
z_t = bag embeddings, the interaction is the strictly lower triangle of Z Z^T (z_i . z_j, i > j),
concatenated with z_0 and fed to a top MLP and a sigmoid: p = sigmoid(MLP_top([z_0, (z_i . z_j)_{i>j}])).
Training: binary cross-entropy on click labels (Adagrad, the usual optimiser for embeddings).

Names: ``dlrm-{sum|mean}-t{tables}-v{vocab}-d{dim}-k{bag}-b{batch}-{fwd|train}`` (table t has
``vocab * (1 + t % 3)`` rows; bags hold 1..k valid indices).
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, optax_train_step

FAMILY = "dlrm"
DENSE_IN = 13  # dense (continuous) features, as in the Criteo data
BOTTOM, TOP = (64,), (128, 64)  # hidden widths of the bottom / top MLPs


def build(pool: str, tables: int, vocab: int, dim: int, bag: int, batch: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    sizes = [vocab * (1 + t % 3) for t in range(tables)]
    tri_i, tri_j = np.tril_indices(tables + 1, k=-1)  # strictly lower triangle of the (T+1)^2 grid

    class DLRM(nn.Module):
        @nn.compact
        def __call__(self, dense, ids, weights):
            # dense: (B, DENSE_IN); ids: (T, B, bag) int32 [mean] or (T, B*bag) int32 [sum];
            # weights: (T, B, bag) mask [mean] or (T, B*bag) lookup weights [sum]
            z0 = dense
            for w in BOTTOM:
                z0 = nn.relu(nn.Dense(w)(z0))
            z0 = nn.relu(nn.Dense(dim)(z0))  # (B, D)
            embs = []
            for t in range(tables):
                table = self.param(f"table{t}", nn.initializers.uniform(1.0 / sizes[t] ** 0.5), (sizes[t], dim))
                rows = jnp.take(table, ids[t], axis=0)  # (B, bag, D) [mean] or (B*bag, D) [sum]
                if pool == "mean":
                    m = weights[t]  # (B, bag)
                    e = jnp.einsum("bk,bkd->bd", m, rows) / jnp.maximum(m.sum(-1, keepdims=True), 1.0)
                else:
                    seg = jnp.repeat(jnp.arange(batch, dtype=jnp.int32), bag)  # (B*bag,) bag of each lookup
                    e = jax.ops.segment_sum(rows * weights[t][:, None], seg, batch)  # (B, D)
                embs.append(e)
            z = jnp.stack([z0, *embs], axis=1)  # (B, T+1, D)
            gram = jnp.einsum("bid,bjd->bij", z, z)  # (B, T+1, T+1)
            inter = gram.reshape(batch, -1)[:, tri_i * (tables + 1) + tri_j]  # (B, T(T+1)/2)
            h = jnp.concatenate([z0, inter], axis=-1)
            for w in TOP:
                h = nn.relu(nn.Dense(w)(h))
            return nn.Dense(1)(h)[:, 0]  # (B,) click logit

    keys = jax.random.split(jax.random.PRNGKey(31), 5)
    dense = jax.random.normal(keys[0], (batch, DENSE_IN), jnp.float32)
    lengths = jax.random.randint(keys[1], (tables, batch, 1), 1, bag + 1)  # valid lookups per bag
    mask = (jnp.arange(bag)[None, None, :] < lengths).astype(jnp.float32)  # (T, B, bag)
    u = jax.random.uniform(keys[2], (tables, batch, bag))
    ids = (u * jnp.asarray(sizes, jnp.float32)[:, None, None]).astype(jnp.int32)  # (T, B, bag)
    ids = jnp.where(mask > 0, ids, 0)  # padding slots point at row 0 (masked out)
    if pool == "sum":
        ids, mask = ids.reshape(tables, batch * bag), mask.reshape(tables, batch * bag)
    y = (jax.random.uniform(keys[3], (batch,)) < 0.25).astype(jnp.float32)  # click labels
    inputs = (dense, ids, mask)

    model = DLRM()
    params = model.init(jax.random.PRNGKey(0), *inputs)
    if mode == "fwd":

        def forward(params, dense, ids, weights):
            return jax.nn.sigmoid(model.apply(params, dense, ids, weights))  # (B,) click probability

        return forward, (params, *inputs)

    tx = optax.adagrad(1e-2)
    opt_state = tx.init(params)

    def loss_fn(params, inputs, y):
        logits = model.apply(params, *inputs)
        return jnp.mean(optax.sigmoid_binary_cross_entropy(logits, y))

    return optax_train_step(loss_fn, tx), (params, opt_state, inputs, y)


_SHAPES = [(3, 10), (8, 4)]  # (tables, bag): few long bags, many short ones


def variants() -> list[ProgramSpec]:
    out = []
    for g in grid(pool=["sum", "mean"], shape=_SHAPES, dim=[16, 32], batch=[32, 128], mode=["fwd", "train"]):
        tables, bag = g["shape"]
        hp = {"pool": g["pool"], "tables": tables, "vocab": 500, "dim": g["dim"], "bag": bag, "batch": g["batch"],
              "mode": g["mode"]}
        name = f"dlrm-{hp['pool']}-t{tables}-v500-d{hp['dim']}-k{bag}-b{hp['batch']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
