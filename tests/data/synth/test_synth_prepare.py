"""The whole data-prep path on data-io's SYNTHETIC layout/tile graphs (small sizes)."""

import numpy as np
import torch

from graphcost.data.transforms.batching import iter_config_batches
from graphcost.data.transforms.compress import decompress_layout_config
from graphcost.data.transforms.preprocess import prepare_graph
from graphcost.data.transforms.scaler import FeatureScaler
from graphcost.data.synth.collection import synth_layout_graph, synth_tile_graph, write_synthetic_layout_file


def test_synth_layout_file_vs_memory_and_batches(tmp_path):
    kw = dict(num_nodes=300, num_configs=700, seed=3, source="nlp", search="default", config_fraction=0.05)
    g = synth_layout_graph(**kw)
    path = write_synthetic_layout_file(tmp_path / "synthetic_a.npz", **kw)
    p_mem = prepare_graph(g)
    p_file = prepare_graph(path, chunk_size=64, cache_dir=tmp_path / "cache")
    assert p_file.num_nodes < len(g.node_feat)  # pruned
    for name in ("node_feat", "edge_index", "config_codes", "runtime", "config_source_index", "kept_nodes"):
        assert np.array_equal(getattr(p_mem, name), getattr(p_file, name)), name
    # every remaining configuration is distinct and the fastest of its duplicates
    flat = p_file.config_codes.reshape(p_file.num_configs, -1)
    assert len(np.unique(flat, axis=0)) == p_file.num_configs
    src = g.node_config_feat.reshape(len(g.node_config_feat), -1)
    for kept, orig in zip(p_file.runtime, p_file.config_source_index):
        same = (src == src[orig]).all(axis=1)
        assert kept == g.config_runtime[same].min()

    scaler = FeatureScaler().fit([p_file])
    seen = []
    for b in iter_config_batches(p_file, 128, scaler=scaler):
        assert torch.isfinite(b.node_feat).all()
        want = g.node_config_feat[p_file.config_source_index[b.config_index.numpy()]]
        assert np.array_equal(b.node_config_feat.numpy(), want)
        seen.append(b.config_index.numpy())
    assert np.concatenate(seen).tolist() == list(range(p_file.num_configs))
    assert np.array_equal(decompress_layout_config(p_file.config_codes), g.node_config_feat[p_file.config_source_index])


def test_synth_tile_graph():
    g = synth_tile_graph(num_nodes=30, num_configs=300, seed=1)
    p = prepare_graph(g)
    assert p.kind == "tile" and p.num_nodes == len(g.node_feat)
    np.testing.assert_allclose(p.runtime, (g.config_runtime / g.config_runtime_normalizers)[p.config_source_index])
    assert len(np.unique(p.config_feat, axis=0)) == p.num_configs
