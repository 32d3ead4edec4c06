"""Graph pruning around configurable nodes (TGraph §2.2.1).

For layout graphs only Convolution, Dot and Reshape nodes are configurable, and most of the
graph is identical across the configuration set. We keep a node iff it is configurable or is a
direct input (producer) or output (consumer) of a configurable node; edges are kept iff both
their ends are kept; node ids are renumbered in their original (topological) order. The result
may be several disconnected sub-graphs, which global pooling fuses (TGraph Fig. 2).

Tile graphs are NOT pruned: a tile configuration applies to the whole fused kernel (there are no
configurable nodes), so every node is relevant. `prepare_graph` leaves them untouched.

Edge convention (TpuGraphs, on disk): row [u, v] of `edge_index` (E, 2) means u consumes v.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PruneResult:
    """What pruning keeps, and how old ids map to new ones.

    kept_nodes: (M,) int64, old ids of kept nodes, ascending (new id i <- old id kept_nodes[i]).
    old_to_new: (N,) int64, new id of each old node, -1 where dropped.
    edge_index: (E', 2) int64, kept edges in new ids, same [consumer, producer] convention.
    node_config_ids: (C,) int64, configurable nodes in new ids (same order as before).
    """

    kept_nodes: np.ndarray
    old_to_new: np.ndarray
    edge_index: np.ndarray
    node_config_ids: np.ndarray

    @property
    def num_nodes(self) -> int:
        return int(self.kept_nodes.shape[0])


def prune_around_configurable(
    num_nodes: int, edge_index: np.ndarray, node_config_ids: np.ndarray
) -> PruneResult:
    """Keep configurable nodes and their direct producers/consumers (TGraph §2.2.1).

    Args:
        num_nodes: N, number of nodes before pruning.
        edge_index: (E, 2) int, row [u, v]: u consumes v's output.
        node_config_ids: (C,) int, configurable node ids in [0, N).
    Returns:
        PruneResult with the kept-node index map and remapped edges / configurable ids.
    """
    edge_index = np.asarray(edge_index, dtype=np.int64).reshape(-1, 2)  # (E, 2)
    config_ids = np.asarray(node_config_ids, dtype=np.int64).reshape(-1)  # (C,)
    if config_ids.size and (config_ids.min() < 0 or config_ids.max() >= num_nodes):
        raise ValueError(f"node_config_ids: ids must lie in [0, {num_nodes}), got range "
                         f"[{config_ids.min()}, {config_ids.max()}]")
    if edge_index.size and (edge_index.min() < 0 or edge_index.max() >= num_nodes):
        raise ValueError(f"edge_index: node ids must lie in [0, {num_nodes})")

    is_config = np.zeros(num_nodes, dtype=bool)
    is_config[config_ids] = True
    keep = is_config.copy()
    consumer, producer = edge_index[:, 0], edge_index[:, 1]
    keep[producer[is_config[consumer]]] = True  # inputs of configurable nodes
    keep[consumer[is_config[producer]]] = True  # outputs of configurable nodes

    kept_nodes = np.flatnonzero(keep).astype(np.int64)  # (M,) ascending: keeps topological order
    old_to_new = np.full(num_nodes, -1, dtype=np.int64)
    old_to_new[kept_nodes] = np.arange(kept_nodes.size, dtype=np.int64)
    edge_mask = keep[consumer] & keep[producer]
    new_edges = old_to_new[edge_index[edge_mask]]  # (E', 2)
    return PruneResult(
        kept_nodes=kept_nodes,
        old_to_new=old_to_new,
        edge_index=new_edges.reshape(-1, 2),
        node_config_ids=old_to_new[config_ids],
    )


def identity_prune(num_nodes: int, edge_index: np.ndarray, node_config_ids: np.ndarray | None = None) -> PruneResult:
    """The no-op PruneResult (pruning disabled, or tile graphs)."""
    ids = np.arange(num_nodes, dtype=np.int64)
    config_ids = np.zeros(0, np.int64) if node_config_ids is None else np.asarray(node_config_ids, np.int64)
    return PruneResult(ids, ids.copy(), np.asarray(edge_index, np.int64).reshape(-1, 2), config_ids)
