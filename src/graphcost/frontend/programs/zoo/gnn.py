"""GNN family: message passing over a fixed random graph, node classification.

The graph is an edge list given as program arguments (``senders``, ``receivers``: (E,) int32);
node features are gathered per edge (``x[senders]``) and scattered back with
``jax.ops.segment_sum`` over the receivers. Two layer kinds:

- ``gcn``: symmetric degree-normalised aggregation with self loops, "Semi-Supervised
  Classification with Graph Convolutional Networks" (arXiv:1609.02907):
  h' = relu(W (sum_{j->i} h_j / sqrt(d_i d_j) + h_i / d_i)), d_i = 1 + in-degree(i).
- ``mpnn``: an edge MLP on the concatenated endpoint features, summed at the receiver, then a
  node-update MLP, "Neural Message Passing for Quantum Chemistry" (arXiv:1704.01212):
  m_ij = MLP_e([h_i, h_j]), h_i' = LayerNorm(h_i + MLP_v([h_i, sum_j m_ij])).

An input encoder (Dense) precedes the layers; a Dense head gives per-node class logits; training
uses softmax cross-entropy over all nodes (Adam).

Names: ``gnn-{gcn|mpnn}-n{nodes}-e{edges}-d{dim}-l{layers}-{fwd|train}``.
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid, make_program

FAMILY = "gnn"
IN_DIM, N_CLASSES = 12, 6


def build(kind: str, nodes: int, edges: int, dim: int, layers: int, mode: str):
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class GCNLayer(nn.Module):
        @nn.compact
        def __call__(self, h, senders, receivers):  # h: (N, D); senders, receivers: (E,)
            n = h.shape[0]
            deg = jax.ops.segment_sum(jnp.ones_like(receivers, h.dtype), receivers, n) + 1.0  # (N,)
            coef = jax.lax.rsqrt(deg[senders] * deg[receivers])  # (E,)
            msg = h[senders] * coef[:, None]  # (E, D)
            agg = jax.ops.segment_sum(msg, receivers, n) + h / deg[:, None]  # (N, D)
            return nn.relu(nn.Dense(dim)(agg))

    class MPNNLayer(nn.Module):
        @nn.compact
        def __call__(self, h, senders, receivers):  # h: (N, D)
            n, d = h.shape
            pair = jnp.concatenate([h[receivers], h[senders]], axis=-1)  # (E, 2D)
            m = nn.Dense(d)(nn.relu(nn.Dense(d)(pair)))  # edge MLP: (E, D)
            agg = jax.ops.segment_sum(m, receivers, n)  # (N, D)
            upd = nn.Dense(d)(nn.relu(nn.Dense(d)(jnp.concatenate([h, agg], axis=-1))))  # (N, D)
            return nn.LayerNorm()(h + upd)

    class GNN(nn.Module):
        @nn.compact
        def __call__(self, x, senders, receivers):  # x: (N, IN_DIM)
            h = nn.relu(nn.Dense(dim)(x))  # (N, D)
            for _ in range(layers):
                h = (GCNLayer() if kind == "gcn" else MPNNLayer())(h, senders, receivers)
            return nn.Dense(N_CLASSES)(h)  # (N, N_CLASSES)

    key_x, key_s, key_r, key_y = jax.random.split(jax.random.PRNGKey(11), 4)
    x = jax.random.normal(key_x, (nodes, IN_DIM), jnp.float32)
    senders = jax.random.randint(key_s, (edges,), 0, nodes, jnp.int32)
    receivers = jax.random.randint(key_r, (edges,), 0, nodes, jnp.int32)
    y = jax.random.randint(key_y, (nodes,), 0, N_CLASSES, jnp.int32)
    return make_program(GNN(), (x, senders, receivers), y, mode, loss="xent", optimizer="adam")


_GRAPHS = [(96, 384), (256, 1280)]  # (nodes, edges)


def variants() -> list[ProgramSpec]:
    out = []
    for g in grid(kind=["gcn", "mpnn"], graph=_GRAPHS, dim=[16, 32], layers=[2, 3], mode=["fwd", "train"]):
        nodes, edges = g["graph"]
        hp = {"kind": g["kind"], "nodes": nodes, "edges": edges, "dim": g["dim"], "layers": g["layers"],
              "mode": g["mode"]}
        name = f"gnn-{hp['kind']}-n{nodes}-e{edges}-d{hp['dim']}-l{hp['layers']}-{hp['mode']}"
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
