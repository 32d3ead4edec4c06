"""`PreparedGraph`: one graph after preprocessing (TGraph §2.2), ready for batching.

Built by `graphcost.data.transforms.preprocess.prepare_graph`; cached as one npz (`graphcost.data.transforms.cache`);
turned into model input by `graphcost.data.transforms.batching.make_batch`.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np


@dataclass
class PreparedGraph:
    """A pruned, de-duplicated, compressed and -1 padded graph.

    name: graph name (file stem).
    kind: "layout" or "tile".
    node_feat: (N, 140) float32, UNSCALED; [134:140] -1 padded beyond the tensor rank.
    node_opcode: (N,) int64.
    edge_index: (E, 2) int64, pruned/remapped, TpuGraphs convention (row [u, v]: u consumes v).
    config_node_index: (C,) int64 configurable node ids into [0, N) (layout); (0,) for tile.
    config_codes: (K, C, 3) int32 base-7 layout codes (layout) or None.
    config_feat: (K, 24) float32 tile configs (tile) or None.
    runtime: (K,) float64; tile: config_runtime / config_runtime_normalizers.
    source: path of the npz the graph came from (None for in-memory graphs).
    kept_nodes: (N,) int64 original node id of each kept node (the pruning map).
    config_source_index: (K,) int64 original configuration index of each kept configuration
        (dedup keeps a subset; use it to map predictions back to the file's configurations).
    num_source_configs: K before de-duplication.
    compiled: (K, 7) float64 what the compiler did to each kept configuration (the file's
        ``config_compiled_stats``, `graphcost.frontend.hlo.compiled_stats`), or None without it.
    """

    name: str
    kind: Literal["layout", "tile"]
    node_feat: np.ndarray
    node_opcode: np.ndarray
    edge_index: np.ndarray
    config_node_index: np.ndarray
    runtime: np.ndarray
    config_codes: np.ndarray | None = None
    config_feat: np.ndarray | None = None
    source: Path | None = None
    kept_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    config_source_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    num_source_configs: int = 0
    compiled: np.ndarray | None = None

    @property
    def num_nodes(self) -> int:
        return int(self.node_feat.shape[0])

    @property
    def num_configs(self) -> int:
        return int(self.runtime.shape[0])

    @property
    def num_config_nodes(self) -> int:
        return int(self.config_node_index.shape[0])

    def nbytes(self) -> int:
        """Memory held by the arrays (bytes)."""
        arrays = [self.node_feat, self.node_opcode, self.edge_index, self.config_node_index, self.runtime,
                  self.config_codes, self.config_feat, self.kept_nodes, self.config_source_index, self.compiled]
        return int(sum(a.nbytes for a in arrays if a is not None))

    # ---- npz round trip (no object arrays: loadable with allow_pickle=False) -------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        out = {
            "name": np.array(self.name),
            "kind": np.array(self.kind),
            "source": np.array("" if self.source is None else str(self.source)),
            "node_feat": self.node_feat,
            "node_opcode": self.node_opcode,
            "edge_index": self.edge_index,
            "config_node_index": self.config_node_index,
            "runtime": self.runtime,
            "kept_nodes": self.kept_nodes,
            "config_source_index": self.config_source_index,
            "num_source_configs": np.array(self.num_source_configs, dtype=np.int64),
        }
        if self.config_codes is not None:
            out["config_codes"] = self.config_codes
        if self.config_feat is not None:
            out["config_feat"] = self.config_feat
        if self.compiled is not None:
            out["compiled"] = self.compiled
        return out

    @classmethod
    def from_arrays(cls, d) -> "PreparedGraph":
        source = str(d["source"][()])
        return cls(
            name=str(d["name"][()]),
            kind=str(d["kind"][()]),  # type: ignore[arg-type]
            node_feat=np.asarray(d["node_feat"], dtype=np.float32),
            node_opcode=np.asarray(d["node_opcode"], dtype=np.int64),
            edge_index=np.asarray(d["edge_index"], dtype=np.int64).reshape(-1, 2),
            config_node_index=np.asarray(d["config_node_index"], dtype=np.int64),
            runtime=np.asarray(d["runtime"], dtype=np.float64),
            config_codes=np.asarray(d["config_codes"], dtype=np.int32) if "config_codes" in d else None,
            config_feat=np.asarray(d["config_feat"], dtype=np.float32) if "config_feat" in d else None,
            source=Path(source) if source else None,
            kept_nodes=np.asarray(d["kept_nodes"], dtype=np.int64),
            config_source_index=np.asarray(d["config_source_index"], dtype=np.int64),
            num_source_configs=int(d["num_source_configs"][()]),
            compiled=np.asarray(d["compiled"], dtype=np.float64) if "compiled" in d else None,
        )
