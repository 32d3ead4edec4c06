"""Synthetic data passes validation, is deterministic, has the documented structure; stats CLI."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.synth import collection as synth
from graphcost.data.io.discover import find_collection_files
from graphcost.data.io.schema import LAYOUT_CONFIGURABLE_OPCODES, OPCODES
from graphcost.data.stats import _pruned_node_count_local, graph_stats, pruned_node_count
from graphcost.data.io.tpugraphs_io import load_graph
from graphcost.data.io.validate import graph_arrays, validate_graph


@pytest.mark.parametrize("source,search", [("xla", "random"), ("nlp", "default")])
def test_layout_graph_valid_and_realistic(source, search):
    g = synth.synth_layout_graph(num_nodes=600, num_configs=300, seed=1, source=source, search=search)
    validate_graph(g)
    n = g.node_feat.shape[0]
    assert n == 600
    assert set(np.unique(g.node_opcode[g.node_config_ids])) <= set(LAYOUT_CONFIGURABLE_OPCODES)
    is_conf = np.isin(g.node_opcode, LAYOUT_CONFIGURABLE_OPCODES)
    np.testing.assert_array_equal(np.flatnonzero(is_conf), g.node_config_ids)
    assert 0.003 < len(g.node_config_ids) / n < 0.08
    # node_feat semantics: one element-type one-hot per node, rank from shape dims, layout beyond rank = 0
    assert np.all(g.node_feat[:, 2:21].sum(1) == 1)
    assert g.node_feat[-1, 0] == 1 and g.node_feat[:-1, 0].sum() == 0  # only the root is_root
    rank = (g.node_feat[:, 21:27] > 0).sum(1)
    for r in range(5):
        rows = g.node_feat[rank == r, 134:140]
        assert np.all(rows[:, r:] == 0)
        assert np.all(np.sort(rows[:, :r], axis=1) == np.arange(r))  # a permutation of the dims
    # layout configs: permutations within the rank, -1 beyond
    feat = g.node_config_feat
    assert set(np.unique(feat)) <= set(range(-1, 6))
    assert g.config_runtime.dtype == np.int64 and g.config_runtime.min() > 0
    if search == "default":
        default = feat[0]  # configuration 0 is the compiler default
        assert np.mean(np.all(feat == default, axis=(1, 2))) < 0.5


def test_layout_runtime_has_learnable_structure():
    """Noise-free runtime: mismatching a producer's layout costs a copy (simulator eq. 1)."""
    from graphcost.data.synth.programs import synth_program
    from graphcost.data.synth.layout import LayoutSimulator

    sim = LayoutSimulator(synth_program(800, np.random.default_rng(3), "xla", 0.03))
    base = sim.default[None].copy()
    t0 = sim.runtime(base)[0]
    changed = []
    for c in range(sim.num_config_nodes):
        if sim.nperm[c, 1] > 1:
            x = base.copy()
            x[0, c, 1] = (x[0, c, 1] + 1) % sim.nperm[c, 1]
            changed.append(sim.runtime(x)[0] - t0)
    assert changed and max(changed) > 0  # layouts matter
    # configurable nodes joined through layout propagation interact (not an additive per-node cost)
    assert len(sim.ve_cost) > 0
    a, sa, b, sb = sim.ve[0]
    x = (sim.default[a, sa] + 1) % sim.nperm[a, sa]
    both, only_a, only_b = base.copy(), base.copy(), base.copy()
    both[0, a, sa] = only_a[0, a, sa] = x
    both[0, b, sb] = only_b[0, b, sb] = x
    f = lambda c: sim.runtime(c)[0]  # noqa: E731
    assert abs(f(both) - f(only_a) - f(only_b) + t0) > 0
    rng = np.random.default_rng(0)
    rand = sim.sample_choices(rng, 200, "random", first=False)
    assert np.std(sim.runtime(rand)) > 0


def test_deterministic_and_streaming_equals_memory(tmp_path):
    kw = dict(num_nodes=400, num_configs=9000, seed=7, source="xla", search="random")
    a = synth.synth_layout_graph(**kw)
    assert synth.gen_block(len(a.node_config_ids)) < kw["num_configs"]  # spans several RNG blocks
    b = synth.synth_layout_graph(**kw)
    for k, v in graph_arrays(a).items():
        np.testing.assert_array_equal(v, graph_arrays(b)[k])
    path = synth.write_synthetic_layout_file(tmp_path / "s.npz", **kw)
    g = load_graph(path, lazy_config_feat=True)
    np.testing.assert_array_equal(np.asarray(g.node_config_feat), a.node_config_feat)  # several RNG blocks
    np.testing.assert_array_equal(g.config_runtime, a.config_runtime)
    c = synth.synth_layout_graph(**dict(kw, seed=8))
    assert not np.array_equal(c.config_runtime[:10], a.config_runtime[:10])


def test_tile_graph():
    g = synth.synth_tile_graph(num_nodes=40, num_configs=300, seed=4)
    validate_graph(g)
    h = synth.synth_tile_graph(num_nodes=40, num_configs=300, seed=4)
    np.testing.assert_array_equal(g.config_runtime, h.config_runtime)
    assert g.config_feat.shape[0] <= 300 and np.unique(g.config_feat, axis=0).shape[0] == g.config_feat.shape[0]
    ratio = g.config_runtime / g.config_runtime_normalizers
    assert ratio.min() < ratio.max()  # tile sizes matter
    np.testing.assert_allclose(g.config_runtime_normalizers, np.median(g.config_runtime_normalizers), rtol=0.05)
    assert np.all(g.config_feat[:, 16:24] == 0)  # input bounds unset, as in the real data
    np.testing.assert_array_equal(g.config_feat[:, 15], np.prod(np.where(g.config_feat[:, 8:14] > 0, g.config_feat[:, 8:14], 1), 1))


def test_collection_layout_and_labels(tmp_path):
    base = synth.write_synthetic_collection(tmp_path, "layout:nlp:random", num_graphs=4, seed=1, min_nodes=200,
                                            max_nodes=400, min_configs=20, max_configs=50, progress=False)
    assert base == tmp_path / "npz/layout/nlp/random"
    files = {s: find_collection_files(tmp_path, "layout:nlp:random", s) for s in ("train", "valid", "test")}
    assert [len(f) for f in files.values()] == [2, 1, 1]
    assert all(p.name.startswith("synthetic_") for f in files.values() for p in f)
    manifest = json.loads((base / "manifest.json").read_text())
    assert manifest["synthetic"] is True and manifest["files"]["valid"] == [files["valid"][0].name]
    assert "SYNTHETIC" in (base / "SYNTHETIC.md").read_text()
    before = {p: p.stat().st_mtime_ns for f in files.values() for p in f}
    synth.write_synthetic_collection(tmp_path, "layout:nlp:random", num_graphs=4, seed=1, min_nodes=200,
                                     max_nodes=400, min_configs=20, max_configs=50, progress=False)
    assert before == {p: p.stat().st_mtime_ns for p in before}  # resumable: existing files kept


def test_pruned_node_count_matches_definition():
    g = synth.synth_layout_graph(num_nodes=500, num_configs=5, seed=2)
    n = g.node_feat.shape[0]
    conf = set(g.node_config_ids.tolist())
    expected = set(conf)
    for u, v in g.edge_index.tolist():  # u consumes v
        if u in conf:
            expected.add(v)
        if v in conf:
            expected.add(u)
    assert _pruned_node_count_local(n, g.edge_index, g.node_config_ids) == len(expected)
    assert pruned_node_count(n, g.edge_index, g.node_config_ids) == len(expected)
    assert pruned_node_count(n, g.edge_index, None) == n


def test_stats_cli(tmp_path):
    data = tmp_path / "data"  # --json goes beside the data, never into it
    synth.write_synthetic_collection(data, "tile:xla", num_graphs=3, seed=0, max_configs=40, progress=False)
    synth.write_synthetic_collection(data, "layout:xla:default", num_graphs=3, seed=0, min_nodes=150,
                                     max_nodes=300, min_configs=30, max_configs=60, progress=False)
    f = find_collection_files(data, "layout:xla:default", "train")[0]
    s = graph_stats(f)
    assert s.kind == "layout" and s.unique_configs <= s.configs and s.pruned_nodes <= s.nodes
    runner = CliRunner()
    res = runner.invoke(app, ["data", "stats", str(data), "--json", str(tmp_path / "s.json")])
    assert res.exit_code == 0, res.output
    assert "tile:xla/train" in res.output and "layout:xla:default/valid" in res.output
    rows = json.loads((tmp_path / "s.json").read_text())
    assert {r["group"] for r in rows} >= {"tile:xla/train", "layout:xla:default/test"}
    res = runner.invoke(app, ["data", "stats", str(f)])
    assert res.exit_code == 0 and f.name in res.output and str(s.configs) in res.output
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"nope")
    res = runner.invoke(app, ["data", "stats", str(bad)])
    assert res.exit_code == 1 and "not an npz (zip) archive" in res.output


def test_synth_and_download_cli(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["data", "synth", "--collection", "tile:xla", "--out", str(tmp_path), "--graphs", "3",
                              "--max-configs", "30"])
    assert res.exit_code == 0, res.output
    assert "SYNTHETIC" in res.output
    assert len(list((tmp_path / "npz/tile/xla").rglob("synthetic_*.npz"))) == 3
    res = runner.invoke(app, ["data", "download", "--collection", "tile:xla", "--data-dir", str(tmp_path / "d"),
                              "--timeout", "0.001"])
    assert res.exit_code == 1


def test_synth_tile_runtime_op_ids():
    g = synth.synth_tile_graph(num_nodes=30, num_configs=10, seed=0)
    assert set(np.unique(g.node_opcode)) <= set(OPCODES.values())


def test_layout_pad_minus_one():
    g = synth.synth_layout_graph(num_nodes=300, num_configs=5, seed=3, layout_pad=-1.0)
    validate_graph(g)
    rank = (g.node_feat[:, 21:27] > 0).sum(1)
    for r in range(5):
        assert np.all(g.node_feat[rank == r, 134 + r : 140] == -1)


def test_stats_cli_default_root(tmp_path, monkeypatch):
    synth.write_synthetic_collection(tmp_path, "tile:xla", num_graphs=3, seed=1, max_configs=20, progress=False)
    monkeypatch.setenv("GRAPHCOST_DATA_DIR", str(tmp_path))
    res = CliRunner().invoke(app, ["data", "stats"])
    assert res.exit_code == 0, res.output
    assert "tile:xla/test" in res.output
