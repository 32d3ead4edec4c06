"""In-memory records shared by every part of graphcost.

One schema carries graphs everywhere, from collection and synthesis through preprocessing to the
models: the official TpuGraphs npz keys (`graphcost.data.io.schema`).

* `LayoutGraph` / `TileGraph` hold one npz file as read (validated) from disk.
* `GraphBatch` is what every cost model consumes: one graph x a sample of B configurations,
  as torch tensors, after preprocessing (pruning, scaling, decompression).

Edge conventions. On disk (TpuGraphs), `edge_index` is (E, 2) and row ``[u, v]`` means
"u consumes v's output". In a `GraphBatch`, `edge_index` is (2, E) in PyTorch Geometric's
source->target convention along the data flow: ``edge_index[0]`` = producer v,
``edge_index[1]`` = consumer u.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

NODE_FEAT_DIM = 140  # TpuGraphs README node feature table
NODE_FEAT_SCALED = 134  # node_feat[:134] are standard-scaled; [134:140] = layout minor_to_major
LAYOUT_CONFIG_DIM = 18  # output / input0 / input1 layouts, 6 values each, in {-1..5}
TILE_CONFIG_DIM = 24  # TpuGraphs README tile config table
# graphcost's own optional per-configuration key ``config_compiled_stats``: what the compiler did to
# each configuration (`graphcost.frontend.hlo.compiled_stats`, whose COMPILED_STATS name the columns)
COMPILED_STATS_DIM = 7
# Version of what the features MEAN (the node / configuration feature definitions written by
# graphcost.frontend's featurizer and flag/layout encoders). A checkpoint records the version it was
# trained on; `graphcost.inference.ensemble.load_trained` refuses a model of another version, whose
# inputs would be read with the wrong meaning. Raise it whenever a feature column changes meaning.
FEATURE_VERSION = 1


@dataclass
class LayoutGraph:
    """One layout-collection npz file (TpuGraphs schema).

    `node_config_feat` may be a lazily read array (see `graphcost.data.io.tpugraphs_io`) for the
    NLP collections, whose full (K, C, 18) float32 array reaches 720 MB.
    """

    path: Path | None
    node_feat: np.ndarray  # (N, 140) float32
    node_opcode: np.ndarray  # (N,) uint8 / int
    edge_index: np.ndarray  # (E, 2) int64, row [u, v]: u consumes v
    node_config_ids: np.ndarray  # (C,) int64, configurable node indices into [0, N)
    node_config_feat: np.ndarray  # (K, C, 18) float32 (or a chunk-readable stand-in)
    config_runtime: np.ndarray  # (K,) runtimes (positive, finite)
    node_splits: np.ndarray | None = None  # per-computation split points, as in the npz
    config_compiled_stats: np.ndarray | None = None  # (K, 7) float64, graphcost's extension (COMPILED_STATS_DIM)
    kind: Literal["layout"] = "layout"


@dataclass
class TileGraph:
    """One tile-collection npz file (TpuGraphs schema): a fused kernel and its tile configs."""

    path: Path | None
    node_feat: np.ndarray  # (N, 140) float32
    node_opcode: np.ndarray  # (N,) uint8 / int
    edge_index: np.ndarray  # (E, 2) int64, row [u, v]: u consumes v
    config_feat: np.ndarray  # (K, 24) float32
    config_runtime: np.ndarray  # (K,) runtimes
    config_runtime_normalizers: np.ndarray  # (K,) runtime of the default config
    config_compiled_stats: np.ndarray | None = None  # (K, 7) float64, graphcost's extension (COMPILED_STATS_DIM)
    kind: Literal["tile"] = "tile"


@dataclass
class GraphBatch:
    """One graph x B configurations, ready for a model. Built by `graphcost.data.transforms.batching`.

    Tensors are torch tensors (annotated loosely to keep this module torch-free).
    """

    graph_name: str
    kind: Literal["layout", "tile"]
    node_feat: "object"  # (N, 140) float32; [:134] standard-scaled, [134:140] -1 padded beyond rank
    node_opcode: "object"  # (N,) int64
    edge_index: "object"  # (2, E) int64, row 0 producer (source), row 1 consumer (target)
    runtime: "object"  # (B,) float32; tile: config_runtime / config_runtime_normalizers
    config_index: "object"  # (B,) int64, indices of these configurations in the prepared graph
    config_node_index: "object | None" = None  # layout: (C,) int64 configurable node ids
    node_config_feat: "object | None" = None  # layout: (B, C, 18) float32, -1 where unset
    config_feat: "object | None" = None  # tile: (B, 24) float32
    config_compiled: "object | None" = None  # (B, 7) float32 what the compiler did (transforms.compiled), or None

    @property
    def num_configs(self) -> int:
        return int(self.runtime.shape[0])

    def to(self, device) -> "GraphBatch":
        """Move every tensor field to `device`."""
        moved = {}
        for name, value in self.__dict__.items():
            moved[name] = value.to(device) if hasattr(value, "to") and not isinstance(value, str) else value
        return GraphBatch(**moved)
