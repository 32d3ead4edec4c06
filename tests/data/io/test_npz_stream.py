"""Chunked / lazy reading equals full reading; save/load round trips; atomic writes."""

import numpy as np
import pytest

from graphcost.data.graph import LayoutGraph
from graphcost.data.io.npz_stream import LazyNpyArray, NpzWriter
from graphcost.data.io.schema import SchemaError
from graphcost.data.io.tpugraphs_io import iter_node_config_feat_chunks, load_graph, save_graph


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("chunk", [1, 5, 37, 100])
def test_chunks_equal_full(layout_arrays, write_npz, compressed, chunk):
    path = write_npz(layout_arrays, compressed=compressed)
    full = np.load(path)["node_config_feat"]
    starts, parts = zip(*iter_node_config_feat_chunks(path, chunk))
    assert list(starts) == list(range(0, len(full), chunk))
    assert all(p.shape[0] <= chunk and p.dtype == np.float32 for p in parts)
    np.testing.assert_array_equal(np.concatenate(parts), full)


@pytest.mark.parametrize("compressed", [False, True])
def test_lazy_graph_indexing(layout_arrays, write_npz, compressed):
    path = write_npz(layout_arrays, compressed=compressed)
    full = layout_arrays["node_config_feat"]
    g = load_graph(path, lazy_config_feat=True)
    lazy = g.node_config_feat
    assert isinstance(lazy, LazyNpyArray)
    assert lazy.shape == full.shape and lazy.dtype == np.float32 and len(lazy) == len(full)
    idx = np.array([30, 2, 2, 17, 0])
    np.testing.assert_array_equal(lazy[idx], full[idx])
    np.testing.assert_array_equal(lazy[3:20], full[3:20])
    np.testing.assert_array_equal(lazy[::4], full[::4])
    np.testing.assert_array_equal(lazy[-1], full[-1])
    np.testing.assert_array_equal(lazy[idx, 0], full[idx, 0])
    np.testing.assert_array_equal(np.asarray(lazy), full)
    assert (lazy.header.file_data_offset is not None) == (not compressed)  # stored members are memory-mapped
    with pytest.raises(IndexError):
        lazy[len(full)]


def test_streaming_writer_matches_savez(tmp_path, layout_arrays):
    path = tmp_path / "w.npz"
    feat = layout_arrays["node_config_feat"]
    with NpzWriter(path, compressed=True) as w:
        w.write("node_feat", layout_arrays["node_feat"])
        with w.stream("node_config_feat", feat.shape, np.float32) as s:
            for i in range(0, len(feat), 6):
                s.write(feat[i : i + 6])
    d = np.load(path)
    np.testing.assert_array_equal(d["node_config_feat"], feat)
    np.testing.assert_array_equal(d["node_feat"], layout_arrays["node_feat"])
    assert [p.name for p in tmp_path.iterdir()] == ["w.npz"]  # no temporary file left


def test_writer_aborts_atomically(tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, a=np.arange(3))
    with pytest.raises(ValueError, match="declared"):
        with NpzWriter(path) as w:
            with w.stream("a", (10,), np.int64) as s:
                s.write(np.arange(4))  # too few rows
    np.testing.assert_array_equal(np.load(path)["a"], np.arange(3))  # old file intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npz"]


@pytest.mark.parametrize("compressed", [False, True])
def test_save_load_round_trip(layout_arrays, tile_arrays, write_npz, tmp_path, compressed):
    for arrays, name in ((layout_arrays, "l"), (tile_arrays, "t")):
        g = load_graph(write_npz(arrays, f"{name}.npz"))
        out = save_graph(g, tmp_path / "out" / f"{name}.npz", compressed=compressed)
        back = np.load(out)
        assert set(back.files) == set(arrays)
        for k, v in arrays.items():
            np.testing.assert_array_equal(back[k], v)
        g2 = load_graph(out)
        assert g2.kind == g.kind


def test_save_writes_extra_keys_that_the_loader_ignores(layout_arrays, write_npz, tmp_path):
    g = load_graph(write_npz(layout_arrays, "l.npz"))
    samples = np.stack([g.config_runtime] * 3, axis=1)  # (K, P)
    out = save_graph(g, tmp_path / "x.npz", extra={"config_runtime_samples": samples})
    np.testing.assert_array_equal(np.load(out)["config_runtime_samples"], samples)
    assert load_graph(out).kind == "layout"
    with pytest.raises(ValueError, match="would overwrite official"):
        save_graph(g, tmp_path / "y.npz", extra={"config_runtime": g.config_runtime})
    assert not (tmp_path / "y.npz").exists()


def test_save_lazy_graph_streams(layout_arrays, write_npz, tmp_path):
    g = load_graph(write_npz(layout_arrays, compressed=True), lazy_config_feat=True)
    out = save_graph(g, tmp_path / "copy.npz", compressed=False, chunk_rows=4)
    np.testing.assert_array_equal(np.load(out)["node_config_feat"], layout_arrays["node_config_feat"])


def test_save_refuses_invalid_graph(layout_arrays, tmp_path):
    g = LayoutGraph(path=None, **{k: v.copy() for k, v in layout_arrays.items()})
    g.config_runtime[0] = 0
    with pytest.raises(SchemaError, match="non-positive"):
        save_graph(g, tmp_path / "bad.npz")
    assert not list(tmp_path.iterdir())


def test_chunk_reader_errors(tile_arrays, layout_arrays, write_npz, tmp_path):
    with pytest.raises(SchemaError, match="node_config_feat"):
        list(iter_node_config_feat_chunks(write_npz(tile_arrays, "t.npz"), 4))
    bad = dict(layout_arrays, node_config_feat=layout_arrays["node_config_feat"][..., :5])
    with pytest.raises(SchemaError, match="expected"):
        list(iter_node_config_feat_chunks(write_npz(bad, "b.npz"), 4))
    with pytest.raises(FileNotFoundError):
        list(iter_node_config_feat_chunks(tmp_path / "none.npz", 4))


def test_lazy_validation_never_materialises(layout_arrays, write_npz, monkeypatch):
    """Validating / loading lazily must stream: materialising the whole array is an error here."""
    path = write_npz(layout_arrays, compressed=True)

    def boom(self, *a, **k):
        raise AssertionError("whole node_config_feat materialised")

    monkeypatch.setattr(LazyNpyArray, "__array__", boom)
    g = load_graph(path, lazy_config_feat=True)
    assert g.node_config_feat.shape == layout_arrays["node_config_feat"].shape
