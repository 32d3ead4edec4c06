"""QA: malformed npz files given to prepare_graph fail with a SchemaError naming file and key."""

import dataclasses

import numpy as np
import pytest

from graphcost.data.transforms.preprocess import prepare_graph
from graphcost.data.io.schema import SchemaError
from graphcost.data.io.validate import graph_arrays


def _save_without(graph, path, key):
    arrays = {k: v for k, v in graph_arrays(graph).items() if v is not None and k != key}
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("key", ["node_feat", "node_opcode", "edge_index", "config_runtime"])
def test_missing_key_is_a_schema_error(tmp_path, layout_graph, key):
    src = _save_without(layout_graph, tmp_path / "broken.npz", key)
    with pytest.raises(SchemaError, match=rf"broken\.npz.*{key}.*missing"):
        prepare_graph(src)


def test_missing_key_in_tile_file_is_a_schema_error(tmp_path, tile_graph):
    src = _save_without(tile_graph, tmp_path / "kernel.npz", "node_feat")
    with pytest.raises(SchemaError, match=r"kernel\.npz.*node_feat.*missing"):
        prepare_graph(src)


def test_wrong_width_is_a_schema_error(tmp_path, layout_graph):
    g = dataclasses.replace(layout_graph, node_feat=layout_graph.node_feat[:, :100])
    path = tmp_path / "narrow.npz"
    np.savez(path, **{k: v for k, v in graph_arrays(g).items() if v is not None})
    with pytest.raises(SchemaError, match=r"narrow\.npz.*node_feat.*140"):
        prepare_graph(path)


def test_cache_dir_that_is_a_file_is_a_clear_error(tmp_path, layout_graph):
    """QA: --cache-dir naming a file was a FileExistsError traceback in graphcost evaluate."""
    from graphcost.data.transforms.cache import CacheError
    from graphcost.data.io.tpugraphs_io import save_graph

    src = save_graph(layout_graph, tmp_path / "net.npz")
    not_a_dir = tmp_path / "cache.txt"
    not_a_dir.write_text("x")
    with pytest.raises(CacheError, match=r"cache\.txt: cache directory exists and is not a directory"):
        prepare_graph(src, cache_dir=not_a_dir)
    with pytest.raises(CacheError, match=r"cache\.txt.*cannot write"):
        prepare_graph(src, cache_dir=not_a_dir / "sub")
    assert isinstance(CacheError("x"), ValueError)  # the CLI commands report ValueErrors in one line


def test_cache_dir_tilde_is_the_home_directory(tmp_path, layout_graph, monkeypatch):
    """QA: the README's cache_dir="~/.cache/graphcost" created a directory literally named '~'."""
    from graphcost.data.io.tpugraphs_io import save_graph

    src = save_graph(layout_graph, tmp_path / "net.npz")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    prepare_graph(src, cache_dir="~/.cache/graphcost")
    assert len(list((home / ".cache" / "graphcost").glob("*.npz"))) == 1
    assert not (work / "~").exists()


def test_source_path_tilde_is_the_home_directory(tmp_path, layout_graph, monkeypatch):
    from graphcost.data.io.tpugraphs_io import save_graph

    save_graph(layout_graph, tmp_path / "net.npz")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert prepare_graph("~/net.npz").name == "net"
    with pytest.raises(FileNotFoundError, match="no such graph file"):
        prepare_graph(tmp_path / "missing.npz")


@pytest.mark.parametrize("bad", [np.array([0.5, 1.0]), np.array([True, False]), np.array(["0", "1"])])
def test_make_batch_rejects_non_integer_indices(layout_graph, bad):
    """QA: make_batch(p, [0.5]) silently truncated to configuration 0."""
    from graphcost.data.transforms.batching import make_batch

    p = prepare_graph(layout_graph)
    with pytest.raises(TypeError, match="config indices must be integers"):
        make_batch(p, bad, None)
    assert make_batch(p, np.array([1.0, 0.0]), None).config_index.tolist() == [1, 0]  # integral floats are fine


def _damaged_copy(tmp_path, layout_graph, how):
    from graphcost.data.io.tpugraphs_io import save_graph

    src = save_graph(layout_graph, tmp_path / "net.npz")
    raw = bytearray(src.read_bytes())
    if how == "crc":  # flip a byte in the middle of the node_config_feat member's data (deflated or stored)
        at = raw.index(b"node_config_feat.npy") + 200
        raw[at] ^= 0xFF
    else:  # unknown compression method in every central-directory entry
        at = raw.find(b"PK\x01\x02")
        while at >= 0:
            raw[at + 10 : at + 12] = (99).to_bytes(2, "little")
            at = raw.find(b"PK\x01\x02", at + 4)
    bad = tmp_path / f"damaged_{how}.npz"
    bad.write_bytes(bytes(raw))
    return bad


@pytest.mark.parametrize("how", ["crc", "method"])
def test_damaged_archive_is_a_schema_error(tmp_path, layout_graph, how):
    """QA (byte-flip fuzzing): BadZipFile / zlib.error / NotImplementedError escaped as tracebacks."""
    bad = _damaged_copy(tmp_path, layout_graph, how)
    with pytest.raises(ValueError, match=rf"damaged_{how}\.npz"):
        prepare_graph(bad)


def test_damaged_cache_entry_is_a_miss(tmp_path, layout_graph):
    """A cache entry with a corrupt zip directory is rebuilt, not a NotImplementedError traceback."""
    from graphcost.data.io.tpugraphs_io import save_graph

    src = save_graph(layout_graph, tmp_path / "net.npz")
    cache = tmp_path / "cache"
    first = prepare_graph(src, cache_dir=cache)
    (entry,) = cache.glob("*.npz")
    raw = bytearray(entry.read_bytes())
    at = raw.find(b"PK\x01\x02")
    while at >= 0:
        raw[at + 10 : at + 12] = (99).to_bytes(2, "little")
        at = raw.find(b"PK\x01\x02", at + 4)
    entry.write_bytes(bytes(raw))
    again = prepare_graph(src, cache_dir=cache)
    assert np.array_equal(again.config_codes, first.config_codes)
