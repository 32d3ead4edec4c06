"""Batches of one prepared graph x B configurations, as torch tensors (`GraphBatch`).

TGraph §2.2.3/§2.2.5: configurations are sampled per graph, and only the sampled base-7 codes are
decompressed (on the fly) to (B, C, 18) float32. node_feat[:134] is standard-scaled with the
scaler fitted on training graphs; [134:140] keeps its -1 padded layout indices.

Edge convention: PreparedGraph.edge_index is (E, 2) with row [u, v] = "u consumes v" (TpuGraphs);
GraphBatch.edge_index is (2, E) producer -> consumer: row 0 = v, row 1 = u (graph.py).

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch

from graphcost.data.transforms.compiled import compiled_columns
from graphcost.data.transforms.compress import decompress_layout_config
from graphcost.data.graph import GraphBatch
from graphcost.data.transforms.prepared import PreparedGraph
from graphcost.data.transforms.scaler import FeatureScaler


def sample_config_indices(prepared: PreparedGraph, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """(B,) int64 distinct config indices drawn uniformly without replacement; all K if K <= B."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    k = prepared.num_configs
    if k <= batch_size:
        return rng.permutation(k).astype(np.int64)
    return rng.choice(k, size=batch_size, replace=False).astype(np.int64)


def producer_consumer_edges(edge_index: np.ndarray) -> torch.Tensor:
    """(E, 2) [consumer, producer] rows -> (2, E) int64 tensor, row 0 producer, row 1 consumer."""
    e = np.asarray(edge_index, dtype=np.int64).reshape(-1, 2)
    # A fresh (2, E) array: ascontiguousarray(e[:, ::-1].T) keeps the negative stride when E == 0.
    return torch.from_numpy(np.stack([e[:, 1], e[:, 0]]))


def make_batch(prepared: PreparedGraph, config_idx, scaler: FeatureScaler | None) -> GraphBatch:
    """Build the model input for configurations `config_idx` of one prepared graph.

    Args:
        prepared: output of `prepare_graph`.
        config_idx: (B,) int indices into the prepared configurations.
        scaler: fitted FeatureScaler for node_feat[:134]; None leaves features unscaled.
    Returns:
        GraphBatch: node_feat (N, 140) f32, node_opcode (N,) i64, edge_index (2, E) i64,
        runtime (B,) f32, config_index (B,) i64, and for layout config_node_index (C,) i64 +
        node_config_feat (B, C, 18) f32; for tile config_feat (B, 24) f32; config_compiled (B, 7)
        f32 (`transforms.compiled`) when the graph carries ``config_compiled_stats``, else None.
    """
    raw = np.asarray(config_idx).reshape(-1)
    if raw.size and not (raw.dtype.kind in "iu" or (raw.dtype.kind == "f" and np.all(raw == np.floor(raw)))):
        raise TypeError(f"{prepared.name}: config indices must be integers, got dtype {raw.dtype} ({raw[:3]}...)")
    idx = raw.astype(np.int64)  # (B,)
    k = prepared.num_configs
    if idx.size and (idx.min() < 0 or idx.max() >= k):
        raise IndexError(f"{prepared.name}: config indices must lie in [0, {k}), got [{idx.min()}, {idx.max()}]")
    node_feat = scaler.transform(prepared.node_feat) if scaler is not None else prepared.node_feat
    batch = GraphBatch(
        graph_name=prepared.name,
        kind=prepared.kind,
        node_feat=torch.from_numpy(np.ascontiguousarray(node_feat, dtype=np.float32)),  # (N, 140)
        node_opcode=torch.from_numpy(np.asarray(prepared.node_opcode, dtype=np.int64)),  # (N,)
        edge_index=producer_consumer_edges(prepared.edge_index),  # (2, E)
        runtime=torch.from_numpy(prepared.runtime[idx].astype(np.float32)),  # (B,)
        config_index=torch.from_numpy(idx.copy()),  # (B,)
    )
    if prepared.kind == "layout":
        if prepared.config_codes is None:
            raise ValueError(f"{prepared.name}: layout graph without config_codes")
        codes = torch.from_numpy(np.ascontiguousarray(prepared.config_codes[idx]))  # (B, C, 3) int32
        batch.node_config_feat = decompress_layout_config(codes)  # (B, C, 18) f32, TGraph §2.2.3
        batch.config_node_index = torch.from_numpy(np.asarray(prepared.config_node_index, dtype=np.int64))
    else:
        if prepared.config_feat is None:
            raise ValueError(f"{prepared.name}: tile graph without config_feat")
        batch.config_feat = torch.from_numpy(np.ascontiguousarray(prepared.config_feat[idx], dtype=np.float32))
    if prepared.compiled is not None:
        batch.config_compiled = torch.from_numpy(compiled_columns(prepared.compiled[idx], prepared.node_feat, len(idx)))
    return batch


def iter_config_batches(
    prepared: PreparedGraph,
    batch_size: int,
    shuffle: bool = False,
    rng: np.random.Generator | None = None,
    scaler: FeatureScaler | None = None,
) -> Iterator[GraphBatch]:
    """Batches covering every configuration exactly once (evaluation / inference).

    Order is 0..K-1 unless `shuffle`, then a permutation drawn from `rng` (required). The last
    batch may be smaller.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    k = prepared.num_configs
    if shuffle:
        if rng is None:
            raise ValueError("iter_config_batches: shuffle=True needs an rng for determinism")
        order = rng.permutation(k).astype(np.int64)
    else:
        order = np.arange(k, dtype=np.int64)
    for start in range(0, k, batch_size):
        yield make_batch(prepared, order[start : start + batch_size], scaler)
