import dataclasses

import numpy as np

from graphcost.data.transforms.compress import decompress_layout_config
from graphcost.data.transforms.preprocess import prepare_graph


def _assert_same(a, b):
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


def test_chunked_equals_in_memory(layout_graph):
    whole = prepare_graph(layout_graph, chunk_size=10_000)
    for chunk in (1, 7, 59):
        _assert_same(prepare_graph(layout_graph, chunk_size=chunk), whole)


def test_layout_pipeline_matches_reference(layout_graph):
    g = layout_graph
    p = prepare_graph(g)
    assert p.kind == "layout" and p.num_source_configs == 60
    # de-duplicated: distinct configs only, each the fastest of its group
    feats = g.node_config_feat.reshape(60, -1)
    best = {}
    for i, row in enumerate(feats):
        k = row.tobytes()
        if k not in best or g.config_runtime[i] < g.config_runtime[best[k]]:
            best[k] = i
    assert p.config_source_index.tolist() == sorted(best.values())
    assert np.array_equal(decompress_layout_config(p.config_codes), g.node_config_feat[p.config_source_index])
    assert p.runtime.dtype == np.float64
    # pruned node set, -1 padded layout columns, unscaled features otherwise
    assert np.array_equal(p.node_feat[:, :134], g.node_feat[p.kept_nodes, :134])
    assert (p.node_feat[:, 134:] >= -1).all()
    assert np.array_equal(p.node_opcode, g.node_opcode[p.kept_nodes].astype(np.int64))
    full = prepare_graph(g, prune=False, dedup=False)
    assert full.num_nodes == len(g.node_feat) and full.num_configs == 60
    assert np.array_equal(full.edge_index, g.edge_index)


def test_tile_not_pruned_and_dedup_on_normalised_runtime(tile_graph):
    g = tile_graph
    p = prepare_graph(g)
    assert p.num_nodes == len(g.node_feat) and p.config_node_index.shape == (0,)
    norm = g.config_runtime / g.config_runtime_normalizers
    best = {}
    for i, row in enumerate(g.config_feat):
        k = row.tobytes()
        if k not in best or norm[i] < norm[best[k]]:
            best[k] = i
    assert p.config_source_index.tolist() == sorted(best.values())
    np.testing.assert_allclose(p.runtime, norm[p.config_source_index])


def test_no_duplicates_keeps_everything(rng, layout_factory):
    g = layout_factory(rng, n=20, c=3, k=25)
    p = prepare_graph(g)
    assert p.num_configs == 25 and p.config_source_index.tolist() == list(range(25))


def test_file_prepare_streams_chunks_and_equals_in_memory(tmp_path, layout_graph):
    from graphcost.data.io.tpugraphs_io import save_graph

    src = save_graph(layout_graph, tmp_path / "net.npz")
    from_file = prepare_graph(src, chunk_size=7)
    ref = prepare_graph(layout_graph)
    for name in ("node_feat", "node_opcode", "edge_index", "config_node_index", "config_codes", "runtime",
                 "kept_nodes", "config_source_index"):
        assert np.array_equal(getattr(from_file, name), getattr(ref, name)), name
    assert from_file.name == "net" and from_file.source == src


def test_bad_config_value_names_file_and_key(tmp_path, layout_graph):
    import pytest

    from graphcost.data.io.tpugraphs_io import save_graph

    layout_graph.node_config_feat[5, 2, 3] = 6.0
    src = save_graph(layout_graph, tmp_path / "bad.npz", validate=False)
    with pytest.raises(ValueError, match=r"bad\.npz.*node_config_feat.*\(5, 2, 3\)"):
        prepare_graph(src)
    with pytest.raises(ValueError, match=r"bad\.npz.*node_config_feat.*\(5, 2, 3\)"):
        prepare_graph(src, validate=False)  # the compressor's own check


def test_layout_without_configurable_nodes_is_kept_whole(layout_factory, rng):
    g = layout_factory(rng, n=15, c=0, k=4)
    p = prepare_graph(g, validate=False)
    assert p.num_nodes == 15 and p.config_codes.shape == (1, 0, 3)  # all 4 configs identical (empty)
