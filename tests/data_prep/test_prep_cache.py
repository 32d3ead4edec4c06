import os

import numpy as np

from graphcost.data import cache as cache_mod
from graphcost.data import preprocess
from graphcost.data.graph import LayoutGraph


def _write_npz(g, path):
    np.savez(
        path,
        node_feat=g.node_feat,
        node_opcode=g.node_opcode,
        edge_index=g.edge_index,
        node_config_ids=g.node_config_ids,
        node_config_feat=g.node_config_feat,
        config_runtime=g.config_runtime,
    )


def _counting_loader(monkeypatch):
    calls = []

    def load(path, validate):
        calls.append(path)
        with np.load(path, allow_pickle=False) as d:
            return LayoutGraph(path=path, **{k: d[k] for k in d.files})

    monkeypatch.setattr(preprocess, "_load", load)
    return calls


def test_cache_hit_miss_and_invalidation(tmp_path, layout_graph, monkeypatch):
    calls = _counting_loader(monkeypatch)
    src = tmp_path / "g.npz"
    _write_npz(layout_graph, src)
    cdir = tmp_path / "cache"

    first = preprocess.prepare_graph(src, cache_dir=cdir)
    assert len(calls) == 1 and len(list(cdir.glob("*.npz"))) == 1
    second = preprocess.prepare_graph(src, cache_dir=cdir)  # hit
    assert len(calls) == 1
    for name in ("node_feat", "edge_index", "config_codes", "runtime", "config_source_index", "kept_nodes"):
        a, b = getattr(first, name), getattr(second, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert second.name == "g" and second.source == first.source and second.kind == "layout"

    preprocess.prepare_graph(src, prune=False, cache_dir=cdir)  # other options: miss, own entry
    assert len(calls) == 2 and len(list(cdir.glob("*.npz"))) == 2

    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # source changed: miss
    preprocess.prepare_graph(src, cache_dir=cdir)
    assert len(calls) == 3 and len(list(cdir.glob("*.npz"))) == 2  # stale entry replaced

    monkeypatch.setattr(cache_mod, "FORMAT_VERSION", cache_mod.FORMAT_VERSION + 1)  # format bump: miss
    preprocess.prepare_graph(src, cache_dir=cdir)
    assert len(calls) == 4
    preprocess.prepare_graph(src, cache_dir=cdir)
    assert len(calls) == 4


def test_corrupt_entry_is_a_miss(tmp_path, layout_graph, monkeypatch):
    calls = _counting_loader(monkeypatch)
    src = tmp_path / "g.npz"
    _write_npz(layout_graph, src)
    cdir = tmp_path / "cache"
    preprocess.prepare_graph(src, cache_dir=cdir)
    (entry,) = cdir.glob("*.npz")
    entry.write_bytes(b"not a zip")
    again = preprocess.prepare_graph(src, cache_dir=cdir)
    assert len(calls) == 2 and again.num_configs > 0
    assert not list(cdir.glob("*.tmp"))  # atomic writes leave no temp files
