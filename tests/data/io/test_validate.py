"""Every validation error, triggered by a REAL malformed npz file on disk."""

import numpy as np
import pytest

from graphcost.data.io.schema import SchemaError
from graphcost.data.io.tpugraphs_io import load_graph
from graphcost.data.io.npz_stream import LazyNpyArray
from graphcost.data.io.validate import find_cycle, validate_arrays, validate_graph


def _expect(path, key, fragment, **kw):
    with pytest.raises(SchemaError) as info:
        load_graph(path, **kw)
    err = info.value
    assert err.key == key, str(err)
    assert err.path == str(path)
    assert str(err).startswith(f"{path}: key '{key}': ")
    assert fragment in err.problem, err.problem
    return err


def test_valid_files_load(layout_arrays, tile_arrays, write_npz):
    g = load_graph(write_npz(layout_arrays, "l.npz"))
    assert g.kind == "layout" and g.node_feat.shape[1] == 140 and g.node_config_feat.shape[2] == 18
    t = load_graph(write_npz(tile_arrays, "t.npz"))
    assert t.kind == "tile" and t.config_feat.shape[1] == 24


@pytest.mark.parametrize("key", ["node_feat", "node_opcode", "edge_index", "node_config_ids", "config_runtime"])
def test_missing_key_layout(layout_arrays, write_npz, key):
    arrays = {k: v for k, v in layout_arrays.items() if k != key}
    _expect(write_npz(arrays), key, "missing")


def test_missing_key_tile(tile_arrays, write_npz):
    arrays = {k: v for k, v in tile_arrays.items() if k != "config_runtime_normalizers"}
    _expect(write_npz(arrays), "config_runtime_normalizers", "missing")


def test_unknown_kind(layout_arrays, write_npz):
    arrays = {k: layout_arrays[k] for k in ("node_feat", "node_opcode", "edge_index", "config_runtime")}
    _expect(write_npz(arrays), "config_feat", "cannot tell tile from layout")


@pytest.mark.parametrize(
    "key,bad",
    [
        ("node_feat", lambda a: a.astype(np.int32)),
        ("edge_index", lambda a: a.astype(np.float32)),
        ("node_opcode", lambda a: a.astype(bool)),
        ("node_config_feat", lambda a: a.astype(np.complex64)),
        ("config_runtime", lambda a: a.astype("U8")),
    ],
)
def test_wrong_dtype(layout_arrays, write_npz, key, bad):
    arrays = dict(layout_arrays, **{key: bad(layout_arrays[key])})
    err = _expect(write_npz(arrays), key, "dtype")
    assert "README" in err.problem


def test_accepted_safe_kinds(layout_arrays, write_npz):
    """The released files use uint8 opcodes and int64 indices: accepted, normalised to int64 indices."""
    arrays = dict(
        layout_arrays,
        node_opcode=layout_arrays["node_opcode"].astype(np.uint8),
        edge_index=layout_arrays["edge_index"].astype(np.int32),
        node_config_ids=layout_arrays["node_config_ids"].astype(np.int32),
        config_runtime=layout_arrays["config_runtime"].astype(np.float64),
    )
    g = load_graph(write_npz(arrays))
    assert g.edge_index.dtype == np.int64 and g.node_config_ids.dtype == np.int64
    assert g.node_opcode.dtype == np.uint8


@pytest.mark.parametrize(
    "key,bad,fragment",
    [
        ("node_feat", lambda a: a[:, :, None], "rank 3"),
        ("edge_index", lambda a: a.reshape(-1), "rank 1"),
        ("node_config_feat", lambda a: a[:, 0, :], "rank 2"),
        ("config_runtime", lambda a: a[:, None], "rank 2"),
    ],
)
def test_wrong_rank(layout_arrays, write_npz, key, bad, fragment):
    arrays = dict(layout_arrays, **{key: bad(layout_arrays[key])})
    _expect(write_npz(arrays), key, fragment)


def test_wrong_widths(layout_arrays, tile_arrays, write_npz):
    _expect(write_npz(dict(layout_arrays, node_feat=layout_arrays["node_feat"][:, :139]), "a.npz"),
            "node_feat", "has 139 columns")
    _expect(write_npz(dict(layout_arrays, node_config_feat=layout_arrays["node_config_feat"][..., :17]), "b.npz"),
            "node_config_feat", "expected 18")
    _expect(write_npz(dict(tile_arrays, config_feat=np.zeros((50, 25), np.float32)), "c.npz"),
            "config_feat", "expected 24")
    _expect(write_npz(dict(layout_arrays, edge_index=np.zeros((3, 3), np.int64)), "d.npz"),
            "edge_index", "expected 2")


def test_shape_mismatches(layout_arrays, tile_arrays, write_npz):
    la = layout_arrays
    _expect(write_npz(dict(la, config_runtime=la["config_runtime"][:-1]), "a.npz"), "node_config_feat",
            "configurations but config_runtime has")
    _expect(write_npz(dict(la, node_config_ids=la["node_config_ids"][:-1]), "b.npz"), "node_config_feat",
            "configurable nodes but node_config_ids has")
    _expect(write_npz(dict(la, node_opcode=la["node_opcode"][:-1]), "c.npz"), "node_opcode", "number of nodes")
    ta = tile_arrays
    _expect(write_npz(dict(ta, config_runtime_normalizers=ta["config_runtime_normalizers"][:-2]), "d.npz"),
            "config_runtime_normalizers", "rows but config_runtime has")
    _expect(write_npz(dict(ta, config_feat=ta["config_feat"][:-1]), "e.npz"), "config_feat", "rows")


def test_index_out_of_range(layout_arrays, write_npz):
    n = layout_arrays["node_feat"].shape[0]
    edges = layout_arrays["edge_index"].copy()
    edges[3, 1] = n
    _expect(write_npz(dict(layout_arrays, edge_index=edges), "a.npz"), "edge_index", "out of range")
    edges[3, 1] = -1
    _expect(write_npz(dict(layout_arrays, edge_index=edges), "b.npz"), "edge_index", "out of range")
    ids = layout_arrays["node_config_ids"].copy()
    ids[0] = n + 5
    _expect(write_npz(dict(layout_arrays, node_config_ids=ids), "c.npz"), "node_config_ids", "out of range")
    ids = layout_arrays["node_config_ids"].copy()
    ids[-1] = ids[0]
    _expect(write_npz(dict(layout_arrays, node_config_ids=ids), "d.npz"), "node_config_ids", "more than once")


def test_cycle(layout_arrays, write_npz):
    edges = layout_arrays["edge_index"]
    u, v = edges[0]  # u consumes v; add v consumes u -> a 2-cycle
    bad = np.concatenate([edges, [[v, u]]])
    err = _expect(write_npz(dict(layout_arrays, edge_index=bad)), "edge_index", "cycle")
    assert str(int(u)) in err.problem and str(int(v)) in err.problem


def test_find_cycle_unit():
    assert find_cycle(3, np.array([[1, 0], [2, 1]])) is None
    assert find_cycle(3, np.array([[0, 1], [1, 2]])) is None  # not numbered topologically, still a DAG
    cyc = find_cycle(5, np.array([[1, 0], [2, 1], [0, 2], [4, 3]]))
    assert cyc[0] == cyc[-1] and set(cyc) == {0, 1, 2}
    assert find_cycle(2, np.array([[1, 1]])) == [1, 1]  # self-loop
    n = 40_000  # long chain, numbered backwards: exercises Kahn's algorithm, not the fast path
    chain = np.stack([np.arange(n - 1), np.arange(1, n)], 1)
    assert find_cycle(n, chain) is None
    assert find_cycle(n, np.concatenate([chain, [[n - 1, 0]]])) is not None


@pytest.mark.parametrize("value,fragment", [(np.inf, "non-finite"), (np.nan, "non-finite"), (0.0, "non-positive"),
                                            (-5.0, "non-positive")])
def test_bad_runtime(layout_arrays, write_npz, value, fragment):
    rt = layout_arrays["config_runtime"].astype(np.float64)
    rt[4] = value
    err = _expect(write_npz(dict(layout_arrays, config_runtime=rt)), "config_runtime", fragment)
    assert "4" in err.problem


def test_bad_normalizer(tile_arrays, write_npz):
    norm = tile_arrays["config_runtime_normalizers"].copy()
    norm[1] = 0
    _expect(write_npz(dict(tile_arrays, config_runtime_normalizers=norm)), "config_runtime_normalizers",
            "non-positive")


def test_bad_config_values_found_in_chunks(layout_arrays, write_npz):
    feat = layout_arrays["node_config_feat"].copy()
    feat[30, 0, 2] = 7.0  # not a dimension index
    path = write_npz(dict(layout_arrays, node_config_feat=feat), compressed=True)
    err = _expect(path, "node_config_feat", "(30, 0, 2)", lazy_config_feat=True)
    assert "{-1, ..., 5}" in err.problem
    lazy = dict(layout_arrays, node_config_feat=LazyNpyArray(path, "node_config_feat"))
    with pytest.raises(SchemaError, match=r"\(30, 0, 2\)"):  # found in the 4th chunk of 8 rows
        validate_arrays(lazy, path=path, chunk_rows=8)
    feat[30, 0, 2] = np.nan
    path = write_npz(dict(layout_arrays, node_config_feat=feat), name="h.npz")
    _expect(path, "node_config_feat", "non-finite")


def test_non_finite_node_feat_and_bad_opcode(layout_arrays, write_npz):
    nf = layout_arrays["node_feat"].copy()
    nf[2, 21] = np.inf
    _expect(write_npz(dict(layout_arrays, node_feat=nf), "a.npz"), "node_feat", "non-finite")
    op = layout_arrays["node_opcode"].astype(np.int32)
    op[0] = 500
    _expect(write_npz(dict(layout_arrays, node_opcode=op), "b.npz"), "node_opcode", "opcode id")


def test_not_an_npz(tmp_path):
    path = tmp_path / "junk.npz"
    path.write_bytes(b"this is not a zip file")
    with pytest.raises(SchemaError, match=r"junk\.npz: key '\*': not an npz \(zip\) archive") as info:
        load_graph(path)
    assert "pickled" not in str(info.value)  # np.load's message for a non-zip file was misleading
    with pytest.raises(FileNotFoundError):
        load_graph(tmp_path / "missing.npz")


def test_object_array_refused(layout_arrays, tmp_path):
    path = tmp_path / "obj.npz"
    np.savez(path, **dict(layout_arrays, node_opcode=np.array([object()] * 3, dtype=object)))
    with pytest.raises(SchemaError) as info:
        load_graph(path)
    assert info.value.key == "node_opcode"


def test_validate_in_memory_graph_names_path(layout_arrays, tmp_path):
    g = load_graph(_save(layout_arrays, tmp_path / "g.npz"), validate=False)
    g.config_runtime = g.config_runtime.astype(np.float64)
    g.config_runtime[0] = np.nan
    with pytest.raises(SchemaError, match="g.npz: key 'config_runtime'"):
        validate_graph(g)


def _save(arrays, path):
    np.savez(path, **arrays)
    return path
