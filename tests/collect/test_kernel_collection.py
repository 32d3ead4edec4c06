"""`graphcost collect --kernels` end to end on two tiny programs (one with a loop), and what is built on it:
the kernel records, the kernel table and tile-schema dataset, the kernel model, `graphcost rank PROGRAM`."""

import json
import textwrap

import numpy as np
import pytest

pytest.importorskip("jax")

from typer.testing import CliRunner  # noqa: E402

from graphcost.cli import app  # noqa: E402

PROGRAMS = ("mlp-d1-w64-b8-fwd", "odenet-conv-r10-c4-s2-scan-b2-fwd")


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    out = tmp_path_factory.mktemp("kernels") / "col"
    args = ["collect", "--kernels", "--space", "flags", "--programs", ",".join(PROGRAMS), "--configs", "2",
            "--rounds", "1", "--calls", "1", "--warmup", "0", "--limit", "0", "--processes", "2", "--max-load",
            "1000", "--out", str(out)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return out


def _record(collection, name):
    manifest = json.loads((collection / "manifest.json").read_text())
    split = manifest["graphs"][name]["split"]
    with np.load(collection / "kernels" / split / f"{name}.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}, manifest


def test_every_configuration_has_its_kernels_timed_and_identified(collection):
    from graphcost.kernels.records import coverage

    for name in PROGRAMS:
        r, manifest = _record(collection, name)
        assert manifest["collection"]["kernels"] is True
        assert sorted(set(r["occ_config"].tolist())) == [0, 1]
        assert r["occ_samples_ns"].shape == (len(r["occ_name"]), 2) and (r["occ_runtime_ns"] >= 0).all()
        assert r["profile_wall_ns"].shape == (2, 2) and (r["profile_wall_ns"] > 0).all()
        assert len(set(r["kernel_fingerprint"].tolist())) == len(r["kernel_fingerprint"])  # distinct kernels
        assert (0 < coverage(r)).all() and (coverage(r) < 1.5).all()
        leaf_graphs = np.diff(r["kernel_node_offsets"])[r["occ_kernel"][r["occ_leaf"]]]
        assert (leaf_graphs > 0).all()  # every leaf kernel has its graph
        assert r["node_feat"].shape == (r["kernel_node_offsets"][-1], 140)
    loop, _ = _record(collection, "odenet-conv-r10-c4-s2-scan-b2-fwd")
    inside = loop["occ_count"] > 1
    assert inside.any() and (~loop["occ_leaf"]).any()  # a scan's body runs several times per call; its loop encloses it
    np.testing.assert_array_equal(loop["occ_executions"][inside], loop["occ_count"][inside])  # the module says it too


def test_kernel_dataset_loads_as_tile_data_through_the_loaders_and_pyg(collection, tmp_path):
    from graphcost.data.pyg.tpugraphs import TpuGraphsDataset
    from graphcost.data.io.tpugraphs_io import load_graph

    out = tmp_path / "kd"
    res = CliRunner().invoke(app, ["data", "kernels", str(collection), "--out", str(out)])
    assert res.exit_code == 0, res.output
    files = sorted(out.glob("*/*.npz"))
    assert files and "kernels of 2 programs" in res.output
    graph = load_graph(files[0], validate=True)
    assert graph.kind == "tile" and graph.config_feat.shape[1] == 24 and (graph.config_runtime > 0).all()
    from graphcost.data.transforms.preprocess import prepare_graph
    from graphcost.frontend.programs.flags import default_flag_vector

    several = [g for g in map(load_graph, files) if len(g.config_runtime) > 1]
    assert several  # kernels measured under several flag vectors: their normalised times must still rank them
    for g in several:
        assert len(set(g.config_runtime_normalizers.tolist())) == 1
        assert np.ptp(prepare_graph(g).runtime) > 0 or np.ptp(g.config_runtime) == 0
        default = (g.config_feat == default_flag_vector()[None, :]).all(axis=1)
        if default.any():  # the normaliser is the kernel's time under the default flags
            assert g.config_runtime_normalizers[0] == g.config_runtime[default][0]
    ds = TpuGraphsDataset(files, tmp_path / "cache", batch_configs=4)
    assert len(ds) == len(files) and ds[0].x.shape[1] == 140
    again = CliRunner().invoke(app, ["data", "kernels", str(collection), "--out", str(out)])
    assert again.exit_code == 1 and "not empty" in again.output  # nothing overwritten unless asked
    inside = CliRunner().invoke(app, ["data", "kernels", str(collection), "--out", str(collection / "kd")])
    assert inside.exit_code != 0 and "inside the input" in inside.output


def _train_model(collection, out, flag_weight=1.0):
    from graphcost.kernels.table import KernelTable
    from graphcost.kernels.model import FEATURIZER_VERSION
    from graphcost.kernels.trees import (KernelTrees, SumRule, kernel_graph_features, kernel_rows,
                                              program_sums, save_kernel_model)

    t = KernelTable.read(collection)
    feats = np.stack([kernel_graph_features(f, o, t.flops[u], t.transcendentals[u], t.bytes[u])
                      for u, (f, o, _) in enumerate(t.graphs)])
    rows = kernel_rows(feats, t.kernel, t.flags)
    leaf = t.leaf & (t.count > 0)
    trees = KernelTrees.fit(rows[leaf], t.per_execution_ns[leaf] * 1e-9, rounds=20)
    sums = [program_sums(t.config[t.program == p], trees.predict(rows[t.program == p]), t.count[t.program == p],
                         t.leaf[t.program == p], 2) for p in PROGRAMS]
    rule = SumRule.fit(np.concatenate([s[0] for s in sums]), np.concatenate([s[1] for s in sums]),
                       np.concatenate([t.programs[p]["label"] for p in PROGRAMS]) * 1e-9)
    flag_trees = None
    if flag_weight < 1.0:
        from graphcost.kernels.trees import FlagTrees

        flag_trees = FlagTrees.fit([t.programs[p]["config_feat"] for p in PROGRAMS],
                                   [t.programs[p]["label"] for p in PROGRAMS], rounds=5)
    save_kernel_model(out, trees, rule, {"featurizer_version": FEATURIZER_VERSION, "data": "test", "date": "today"},
                      flag_trees, flag_weight)
    return out


def test_the_shipped_models_recipe_fits_on_the_collection(collection):
    """`graphcost.kernels.fit.fit_kernel_model` (release/train_kernel_model.py): kernel trees early-stopped on a
    held-back family, the sum rule, and the flag trees unless the blend's weight is 1."""
    from graphcost.kernels.fit import fit_kernel_model

    fitted = fit_kernel_model(collection, rounds=20, threads=1)
    assert (fitted.programs, fitted.families) == (2, 2) and fitted.leaf_occurrences > 0
    assert 1 <= fitted.trees.rounds <= 20 and fitted.flag_trees is not None
    assert fit_kernel_model(collection, rounds=20, threads=1, flag_weight=1.0).flag_trees is None


def test_rank_of_a_program_through_its_kernels(collection, tmp_path, monkeypatch):
    import graphcost.pretrained as pretrained

    model = _train_model(collection, tmp_path / "model")
    monkeypatch.setattr(pretrained, "shipped_kernel_model_dir", lambda: model)
    prog = tmp_path / "tiny.py"
    prog.write_text(textwrap.dedent("""
        import jax.numpy as jnp

        def make():
            return (lambda x, w: jnp.tanh(x @ w).sum(0)), (jnp.ones((32, 64)), jnp.ones((64, 64)))
    """))
    res = CliRunner().invoke(app, ["rank", f"{prog}:make", "--configs", "4", "--measure", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "kernels that dominate the default" in res.output and "Kendall tau of the ranking" in res.output
    rows = json.loads(res.stdout[res.stdout.index("["):res.stdout.rindex("]") + 1])
    assert sorted(r["config"] for r in rows) == [0, 1, 2, 3]
    assert all(r["predicted_us"] > 0 and r["runtime_us"] > 0 for r in rows)
    assert [r["predicted_us"] for r in rows] == sorted(r["predicted_us"] for r in rows)  # fastest first
    assert [r["score"] for r in rows] == sorted(r["score"] for r in rows)  # no flag trees: the kernel sum's order


def test_the_ranking_blends_the_kernel_sum_with_the_flag_trees(collection, tmp_path):
    from graphcost.kernels.model import KernelCostModel
    from graphcost.kernels.trees import standardised

    model = KernelCostModel.load(_train_model(collection, tmp_path / "model", flag_weight=0.25))
    assert model.blended and model.flag_weight == 0.25
    rng = np.random.default_rng(0)
    seconds, flags = rng.uniform(1e-4, 1e-3, 6), rng.integers(0, 3, (6, 24)).astype(np.float32)
    expected = 0.25 * standardised(np.log(seconds)) + 0.75 * standardised(model.flag_trees.predict(flags))
    np.testing.assert_allclose(model.rank_scores(seconds, flags), expected)
    seconds[2] = np.inf  # a configuration that did not compile ranks last
    scores = model.rank_scores(seconds, flags)
    assert scores[2] == np.inf and np.isfinite(np.delete(scores, 2)).all()
    (tmp_path / "model" / "flag_trees.txt").write_text("tree\nversion=v4\n")
    with pytest.raises(ValueError, match="flag_trees.txt: not a usable LightGBM model"):
        KernelCostModel.load(tmp_path / "model")
    (tmp_path / "model" / "flag_trees.txt").unlink()
    with pytest.raises(ValueError, match="flag_trees.txt: missing"):
        KernelCostModel.load(tmp_path / "model")


def test_a_kernel_model_of_another_featurizer_version_is_refused_in_one_line(collection, tmp_path, monkeypatch):
    import graphcost.pretrained as pretrained

    model = _train_model(collection, tmp_path / "model")
    meta = json.loads((model / "kernel_model.json").read_text())
    (model / "kernel_model.json").write_text(json.dumps({**meta, "featurizer_version": 999}))
    monkeypatch.setattr(pretrained, "shipped_kernel_model_dir", lambda: model)
    res = CliRunner().invoke(app, ["rank", "some_prog.py:make"])
    assert res.exit_code == 1 and "featurizer_version" in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_level_median_of_kernel_samples_follows_the_program_levels():
    from graphcost.kernels.records import combine_profiles

    def proc(scale):
        return {"kernel_config": np.array([0, 0, 1]), "kernel_name": np.array(["a", "b", "a"]),
                "kernel_self_ns": np.array([10.0, 5.0, 20.0]) * scale, "kernel_count": np.array([1, 2, 1]),
                "kernel_leaf": np.array([True, True, True]), "profile_wall_ns": np.array([20.0, 25.0]) * scale}

    samples = np.array([[100.0, 200.0, 100.0], [300.0, 600.0, 300.0]])  # (K, P): process 1 twice as slow throughout
    c = combine_profiles([proc(1), proc(2), proc(1)], samples)
    # divided by each process's level (its median program runtime) the processes agree exactly; times the
    # median level (200, processes 0 and 2) the label is their scale: the slow process moved nothing
    np.testing.assert_allclose(c["occ_runtime_ns"], [10.0, 5.0, 20.0])
    plain = combine_profiles([proc(1), proc(3), proc(3)], samples, statistic="median")
    np.testing.assert_allclose(plain["occ_runtime_ns"], [30.0, 15.0, 60.0])
    assert c["occ_name"].tolist() == ["a", "b", "a"] and c["occ_count"].tolist() == [1, 2, 1]


def test_sum_rule_recovers_a_known_overhead():
    from graphcost.kernels.trees import SumRule

    rng = np.random.default_rng(0)
    ks, th = rng.uniform(1e-4, 1e-3, 50), rng.integers(10, 100, 50).astype(float)
    rule = SumRule.fit(ks, th, 1.1 * ks + 2e-6 * th + 5e-6)
    assert rule.a == pytest.approx(1.1, rel=1e-6) and rule.b == pytest.approx(2e-6, rel=1e-4)
    assert SumRule.fit(np.zeros(5), np.ones(5), np.ones(5)) == SumRule()  # no kernel signal: the plain sum


def test_the_kernel_rows_histogram_covers_every_tpugraphs_opcode():
    from graphcost.frontend.hlo.opcodes import NUM_OPCODE_IDS
    from graphcost.kernels import trees

    assert trees.NUM_OPCODE_IDS == NUM_OPCODE_IDS


def test_a_broken_kernel_collection_is_a_one_line_error(tmp_path):
    (tmp_path / "col").mkdir()
    (tmp_path / "col" / "manifest.json").write_text("{")
    res = CliRunner().invoke(app, ["data", "kernels", str(tmp_path / "col"), "--out", str(tmp_path / "kd")])
    assert res.exit_code == 1 and "manifest.json: not the manifest" in res.output and "Traceback" not in res.output
    (tmp_path / "col" / "manifest.json").write_text('{"graphs": {"a": 5}}')
    res = CliRunner().invoke(app, ["data", "kernels", str(tmp_path / "col"), "--out", str(tmp_path / "kd")])
    assert res.exit_code == 1 and "key 'graphs.a'" in res.output


def test_a_layout_graphs_kernels_ran_under_the_default_flags(collection, tmp_path):
    """A layout collection's graphs have no config_feat: the kernel table gives their kernels the default flag vector
    (the layouts are in the kernels' own graphs and fingerprints)."""
    import shutil

    from graphcost.kernels.table import KernelTable
    from graphcost.frontend.programs.flags import default_flag_vector

    col = tmp_path / "col"
    shutil.copytree(collection, col)
    name = PROGRAMS[0]
    entry = json.loads((col / "manifest.json").read_text())["graphs"][name]
    with np.load(col / entry["file"], allow_pickle=False) as g:
        arrays = {k: g[k] for k in g.files if k != "config_feat"}  # as a layout graph holds it
    np.savez(col / entry["file"], **arrays)
    with pytest.raises(ValueError, match="config_feat is not in it"):
        KernelTable.read(col)  # a layout graph without the flag vector its kernels ran under
    table = KernelTable.read(col, default_flag_vector())
    rows = table.program == name
    assert rows.any() and (table.flags[rows] == default_flag_vector()).all()
    assert table.programs[name]["config_feat"].shape == (len(arrays["config_runtime"]), 24)
    other = table.program == PROGRAMS[1]
    assert not (table.flags[other] == default_flag_vector()).all()  # the flag graph keeps its own flag vectors


def test_a_kernel_record_is_lzma_compressed_and_reads_back_as_any_npz(tmp_path):
    import zipfile

    from graphcost.kernels.records import save_kernel_record

    text = np.asarray(["fused_computation { add(f32[8,8] p0, f32[8,8] p1) }"] * 50 + ["x"], dtype=str)
    arrays = {"kernel_text": text, "node_feat": np.tile(np.arange(140, dtype=np.float32), (300, 1)),
              "occ_leaf": np.asarray([True, False])}
    path = tmp_path / "kernels" / "train" / "p.npz"
    save_kernel_record(arrays, path)
    with zipfile.ZipFile(path) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_LZMA}
    with np.load(path, allow_pickle=False) as z:
        assert set(z.files) == set(arrays)
        for key, value in arrays.items():
            np.testing.assert_array_equal(z[key], value)
            assert z[key].dtype == value.dtype


def test_rank_configs_from_python_ranks_a_function_through_its_kernels(collection, tmp_path):
    import jax
    import jax.numpy as jnp

    import graphcost
    from graphcost.guards.bounds import ArgumentError
    from graphcost.frontend.programs.flags import default_flag_vector, flag_features
    from graphcost.kernels.model import KernelCostModel

    model = KernelCostModel.load(_train_model(collection, tmp_path / "model", flag_weight=0.5))
    fn, x, w = (lambda x, w: jnp.tanh(x @ w).sum(0)), jnp.ones((32, 64)), jnp.ones((64, 64))
    ranking = graphcost.rank_configs(fn, x, w, configs=4, model=model)
    assert isinstance(ranking, graphcost.KernelRanking) and len(ranking.flags) == len(ranking.scores) == 4
    assert (flag_features(ranking.flags[:1]) == default_flag_vector()).all()  # the default first
    np.testing.assert_allclose(ranking.scores, model.rank_scores(ranking.seconds, flag_features(ranking.flags)))
    assert sorted(ranking.order.tolist()) == [0, 1, 2, 3] and ranking.scores[ranking.order[0]] == ranking.scores.min()
    best = ranking.flags[ranking.order[0]]
    np.testing.assert_allclose(jax.jit(fn, compiler_options=best.compiler_options() or None)(x, w), fn(x, w),
                               rtol=1e-5)
    with pytest.raises(ArgumentError, match="configs"):
        graphcost.rank_configs(fn, x, w, configs=1, model=model)
    with pytest.raises(ArgumentError, match="fn must be"):
        graphcost.rank_configs("not a function", x, configs=4, model=model)
