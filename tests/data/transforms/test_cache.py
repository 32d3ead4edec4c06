import os

import numpy as np

from graphcost.data.transforms import cache as cache_mod
from graphcost.data.transforms import preprocess
from graphcost.data.io.tpugraphs_io import save_graph


def _write_npz(g, path):
    save_graph(g, path)  # data-io's atomic writer (np.savez_compressed layout)


def _counting_loader(monkeypatch):
    """Wrap the real loader (data-io's load_graph) to count cache misses."""
    calls = []
    real = preprocess._load

    def load(path, validate, *args):
        calls.append(path)
        return real(path, validate, *args)

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


def test_prepare_graphs_resumes_from_cache(tmp_path, layout_factory, rng, monkeypatch):
    calls = _counting_loader(monkeypatch)
    files = []
    for i in range(3):
        files.append(tmp_path / f"g{i}.npz")
        _write_npz(layout_factory(rng, n=20, c=3, k=10), files[-1])
    cdir = tmp_path / "cache"
    preprocess.prepare_graph(files[0], cache_dir=cdir)  # an "interrupted" earlier run did one file
    out = preprocess.prepare_graphs(files, cache_dir=cdir, progress=False)
    assert [p.name for p in out] == ["g0", "g1", "g2"]
    assert len(calls) == 3  # g0 came from the cache
