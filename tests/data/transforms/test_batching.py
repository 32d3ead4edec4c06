import numpy as np
import pytest
import torch

from graphcost.data.transforms.batching import iter_config_batches, make_batch, sample_config_indices
from graphcost.data.transforms.preprocess import prepare_graph
from graphcost.data.transforms.scaler import FeatureScaler


def test_layout_batch_shapes_and_values(layout_graph, rng):
    g = layout_graph
    p = prepare_graph(g)
    scaler = FeatureScaler().fit([p])
    idx = sample_config_indices(p, 8, rng)
    assert len(set(idx.tolist())) == 8
    b = make_batch(p, idx, scaler)
    n, c = p.num_nodes, len(g.node_config_ids)
    assert b.kind == "layout" and b.num_configs == 8
    assert tuple(b.node_feat.shape) == (n, 140) and b.node_feat.dtype == torch.float32
    assert tuple(b.node_config_feat.shape) == (8, c, 18) and b.node_config_feat.dtype == torch.float32
    assert b.edge_index.shape[0] == 2 and b.edge_index.dtype == torch.int64
    # decompressed configs == the source file's rows for these configurations
    src = g.node_config_feat[p.config_source_index[idx]]
    assert np.array_equal(b.node_config_feat.numpy(), src)
    assert np.allclose(b.runtime.numpy(), g.config_runtime[p.config_source_index[idx]])
    # configurable node ids point at the same original nodes
    assert np.array_equal(p.kept_nodes[b.config_node_index.numpy()], g.node_config_ids)
    # producer -> consumer: every (E,2) row [u, v] becomes column (v, u)
    assert np.array_equal(b.edge_index.numpy(), p.edge_index[:, ::-1].T)
    assert np.allclose(b.node_feat[:, :134].numpy(), scaler.transform(p.node_feat)[:, :134])
    assert np.array_equal(b.node_feat[:, 134:].numpy(), p.node_feat[:, 134:])


def test_tile_batch_runtime_normalised(tile_graph, rng):
    g = tile_graph
    p = prepare_graph(g, dedup=False)
    b = make_batch(p, np.array([3, 0, 7]), None)
    assert tuple(b.config_feat.shape) == (3, 24) and b.node_config_feat is None
    np.testing.assert_allclose(
        b.runtime.numpy(), (g.config_runtime / g.config_runtime_normalizers)[[3, 0, 7]], rtol=1e-6
    )
    assert np.array_equal(b.config_feat.numpy(), g.config_feat[[3, 0, 7]])


def test_sampling_and_full_iteration(layout_graph):
    p = prepare_graph(layout_graph)
    rng = np.random.default_rng(0)
    small = sample_config_indices(p, 10_000, rng)
    assert sorted(small.tolist()) == list(range(p.num_configs))
    seen = [b.config_index.numpy() for b in iter_config_batches(p, 4, shuffle=True, rng=rng)]
    assert sorted(np.concatenate(seen).tolist()) == list(range(p.num_configs))
    assert all(len(s) <= 4 for s in seen)
    ordered = np.concatenate([b.config_index.numpy() for b in iter_config_batches(p, 5)])
    assert ordered.tolist() == list(range(p.num_configs))
    with pytest.raises(IndexError):
        make_batch(p, np.array([p.num_configs]), None)
