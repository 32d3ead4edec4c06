"""The DAG record used by LayerDAG (`graphcost.layerdag`): one directed acyclic graph with one
categorical attribute per node and an optional scalar label.

Flat on-disk format (same as ../shared/data/tpu_tile_graphs/val.npz): a collection of G graphs is
`node_offsets` (G+1,), `edge_offsets` (G+1,), `node_cat` (N,), `src`/`dst` (E,) local ids,
`y` (G,). `graphcost.layerdag.io` reads and writes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class DAG:
    node_attr: np.ndarray  # (N,) int64 categorical attribute (e.g. remapped opcode)
    src: np.ndarray  # (E,) int64 edge src -> dst, local node ids
    dst: np.ndarray  # (E,) int64
    label: float | None = None  # graph-level condition (runtime / latency), if any

    @property
    def num_nodes(self) -> int:
        return int(self.node_attr.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])
