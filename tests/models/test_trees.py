"""Tree ranker on the configuration table, and its blend with a graph model (issue 24)."""

import json

import numpy as np
import pytest

from graphcost import metrics
from graphcost.data.transforms.compiled import compiled_columns
from graphcost.data.transforms.preprocess import prepare_graph
from graphcost.datasets import default_dataset_dir
from graphcost.inference.blend import Blend, choose_blend, count_prior
from graphcost.models.config_table import LAYOUT_COLUMNS, SHARE_LAYOUT_COLUMNS, config_table, data_shares, layout_table
from graphcost.models.trees import TreeError, TreeRanker, standardise as z


@pytest.fixture(scope="module")
def shipped():
    root = default_dataset_dir()
    train = [prepare_graph(f, dedup=True) for f in sorted((root / "train").glob("*.npz"))[:12]]
    valid = [prepare_graph(f, dedup=False) for f in sorted((root / "valid").glob("*.npz"))[:4]]
    return train, valid


def test_layout_table_counts_moves_by_class_and_slot():
    node_feat = np.zeros((4, 140), np.float32)
    node_feat[:, 28] = [1, 16, 256, 4]  # output elements
    opcode = np.array([34, 26, 75, 0])  # dot, convolution, reshape, other
    ids = np.array([0, 1, 2])
    default2, moved2, unset = [1, 0, -1, -1, -1, -1], [0, 1, -1, -1, -1, -1], [-1] * 6
    cfg = np.array([[[*default2, *default2, *unset], [*moved2, *default2, *unset], [*unset, *moved2, *unset]]],
                   np.float32)  # one configuration: conv output moved, reshape input moved
    t = layout_table(cfg, node_feat, opcode, ids)[0]
    assert t.shape == (SHARE_LAYOUT_COLUMNS,)
    moved = t[:9].reshape(3, 3)  # class x slot
    assert moved.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    size = t[9:18].reshape(3, 3)
    assert size[1, 0] == pytest.approx(4.0) and size[2, 1] == pytest.approx(8.0)  # log2 16, log2 256
    assert t[27] == pytest.approx(2 / 5)  # 2 of the 5 slots that have a layout are moved
    assert not t[31:].any()  # no data shares given


def test_data_share_columns_weigh_each_move_by_its_tensors_share_of_the_data():
    node_feat = np.zeros((4, 140), np.float32)
    node_feat[:, 28] = [1, 16, 256, 4]  # output elements; 277 in all
    opcode, ids = np.array([34, 26, 75, 0]), np.array([0, 1, 2])
    edges = np.array([[1, 0], [2, 1], [2, 3]])  # [u, v]: u consumes v; the reshape reads 16 and 4 elements
    shares = data_shares(node_feat, edges, ids)
    np.testing.assert_allclose(shares * 277, [[1, 0, 0], [16, 1, 0], [256, 16, 4]])
    default2, moved2, unset = [1, 0, -1, -1, -1, -1], [0, 1, -1, -1, -1, -1], [-1] * 6
    cfg = np.array([[[*default2, *default2, *unset], [*moved2, *default2, *unset], [*unset, *moved2, *unset]]],
                   np.float32)  # conv output moved (16 elements), reshape input moved (its largest operand: 16)
    t = layout_table(cfg, node_feat, opcode, ids, shares)[0]
    frac = t[31:40].reshape(3, 3) * 277  # class x slot
    np.testing.assert_allclose(frac, [[0, 0, 0], [16, 0, 0], [0, 16, 0]], atol=1e-4)
    np.testing.assert_allclose(t[49:] * 277, [32, 16, 32], atol=1e-4)  # all, inputs only, minor-most moved


def test_trees_fitted_on_the_legacy_table_still_score(shipped, tmp_path):
    """The shipped layout model's trees.txt was fitted on the 31 columns before the data shares."""
    import lightgbm as lgb

    from graphcost.models.config_table import LEGACY_LAYOUT_COLUMNS
    from graphcost.pretrained import shipped_model_dir

    train, valid = shipped
    x = np.vstack([config_table(g) for g in train])
    y = np.concatenate([np.log(g.runtime) for g in train])
    params = {"verbose": -1, "num_threads": 1, "min_data_in_leaf": 5}
    legacy = TreeRanker(lgb.train(params, lgb.Dataset(x[:, :LEGACY_LAYOUT_COLUMNS], y), 5), "layout")
    np.testing.assert_allclose(legacy.score(valid[0]), legacy.booster.predict(config_table(valid[0])[:, :31]))
    assert np.isfinite(TreeRanker.load(shipped_model_dir("layout") / "trees.txt").score(valid[0])).all()
    odd = TreeRanker(lgb.train(params, lgb.Dataset(x[:, :20], y), 5), "layout")
    with pytest.raises(TreeError, match="read 20 table columns; this graphcost writes 59"):
        odd.score(valid[0])


def test_trees_rank_real_configurations_and_round_trip(tmp_path, shipped):
    train, valid = shipped
    trees = TreeRanker.fit(train, valid, seed=0, threads=1)
    taus = [metrics.evaluate_graph(trees.score(g), g.runtime, g.kind)["kendall_tau"] for g in valid]
    assert np.mean(taus) > 0.3  # the table carries the signal (the count heuristic alone gets ~0.6 on this data)
    trees.save(tmp_path / "trees.txt")
    again = TreeRanker.load(tmp_path / "trees.txt")
    np.testing.assert_array_equal(again.score(valid[0]), trees.score(valid[0]))
    assert config_table(valid[0]).shape == (valid[0].num_configs, LAYOUT_COLUMNS)


def test_compiled_columns_are_scale_free_per_configuration_and_missing_without_statistics(shipped):
    from dataclasses import replace

    _, valid = shipped
    g = valid[0]
    assert g.compiled is not None  # the shipped cpu_layout is annotated (graphcost collect --annotate)
    table = config_table(g)
    block = table[:, SHARE_LAYOUT_COLUMNS:]
    assert block.shape == (g.num_configs, 7) and np.isfinite(block).all()
    program_bytes, nodes = 4.0 * g.node_feat[:, 28].astype(np.float64).sum(), len(g.node_feat)
    np.testing.assert_allclose(block[:, 0], g.compiled[:, 0] / program_bytes, rtol=1e-5)  # copy bytes / B
    np.testing.assert_allclose(block[:, 6], g.compiled[:, 6] / nodes, rtol=1e-5)  # instructions / N
    np.testing.assert_array_equal(config_table(g, np.array([3]))[0], table[3])  # not relative to the others
    bare = config_table(replace(g, compiled=None))
    assert np.isnan(bare[:, SHARE_LAYOUT_COLUMNS:]).all()
    np.testing.assert_array_equal(bare[:, :SHARE_LAYOUT_COLUMNS], table[:, :SHARE_LAYOUT_COLUMNS])
    assert np.isnan(compiled_columns(None, g.node_feat, 2)).all()


def test_trees_fitted_with_compiled_statistics_rank_graphs_without_them(shipped):
    """Trees learn both paths (each training graph also comes with its compiled columns missing), so a
    graph without statistics (a TpuGraphs file) is still ranked, not sent down one arbitrary branch."""
    from dataclasses import replace

    train, valid = shipped
    trees = TreeRanker.fit(train, valid, seed=0, threads=1)
    bare = [replace(g, compiled=None) for g in valid]
    with_stats = np.mean([metrics.evaluate_graph(trees.score(g), g.runtime, g.kind)["kendall_tau"] for g in valid])
    without = np.mean([metrics.evaluate_graph(trees.score(g), g.runtime, g.kind)["kendall_tau"] for g in bare])
    assert without > 0.3 and with_stats > 0.3
    assert not np.array_equal(trees.score(valid[0]), trees.score(bare[0]))  # the statistics are read


def test_damaged_tree_files_are_named(tmp_path):
    (tmp_path / "a.txt").write_text("not a model")
    with pytest.raises(TreeError, match="a.txt.*first line"):
        TreeRanker.load(tmp_path / "a.txt")
    (tmp_path / "b.txt").write_text("# graphcost trees kind=layout\ngarbage")
    with pytest.raises(TreeError, match="b.txt.*LightGBM"):
        TreeRanker.load(tmp_path / "b.txt")
    for bad in ('{"weight": 1.5}', '{"weight": "x"}', "[]", "{", '{"weight": 0.5, "prior": 0.7}',
                '{"weight": 0.5, "prior": "x"}'):
        (tmp_path / "blend.json").write_text(bad)
        with pytest.raises(TreeError, match="blend.json"):
            Blend.load(tmp_path / "blend.json")


def test_blend_weight_is_chosen_on_validation(shipped):
    _, valid = shipped
    truth = [np.log(g.runtime) for g in valid]
    noise = [np.random.default_rng(i).normal(size=g.num_configs) for i, g in enumerate(valid)]
    assert choose_blend(truth, noise, valid, "kendall_tau").weight == 1.0  # the graph model is right
    assert choose_blend(noise, truth, valid, "kendall_tau").weight == 0.0  # the trees are right
    blend = choose_blend([t + 0.5 * n for t, n in zip(truth, noise)],
                         [t - 0.5 * n for t, n in zip(truth, noise)], valid, "kendall_tau")
    assert 0 < blend.weight < 1 and blend.valid["blend"] >= max(blend.valid["graph model"], blend.valid["trees"])
    a, b = truth[0], noise[0]
    np.testing.assert_allclose(blend.combine(a, b), (blend.weight + 1e-3) * z(a) + (1 - blend.weight) * z(b))


def test_the_graph_model_breaks_the_ties_of_the_trees():
    """Trees can score every candidate the same (a program unlike their training data); the blend must
    still rank them, by the graph model, even at w = 0."""
    graph = np.array([3.0, 1.0, 2.0, 0.0])
    flat = np.zeros(4)
    order = np.argsort(Blend(0.0, "kendall_tau", {}).combine(graph, flat))
    assert order.tolist() == [3, 1, 2, 0]
    steps = np.array([0.0, 0.0, 1.0, 1.0])  # trees decide between the groups, the graph model within them
    assert np.argsort(Blend(0.0, "kendall_tau", {}).combine(graph, steps)).tolist() == [1, 0, 3, 2]


def test_blend_file_round_trip(tmp_path):
    Blend(0.7, "kendall_tau", {"blend": 0.8}, prior=0.2).save(tmp_path / "blend.json")
    assert json.loads((tmp_path / "blend.json").read_text())["trees"] == "trees.txt"
    again = Blend.load(tmp_path / "blend.json")
    assert (again.weight, again.prior) == (0.7, 0.2)
    (tmp_path / "old.json").write_text('{"weight": 0.6, "metric": "kendall_tau"}')  # written before the prior
    assert Blend.load(tmp_path / "old.json").prior == 0.0


def test_count_prior_counts_moved_layouts_and_is_chosen_when_it_wins(shipped):
    _, valid = shipped
    g = valid[0]
    prior = count_prior(g)
    assert prior.shape == (g.num_configs,) and prior.min() >= 0 and prior.max() > 0
    np.testing.assert_array_equal(prior, config_table(g)[:, :9].sum(1))
    # scores that are noise in both the graph model and the trees: the count is what wins on validation
    priors = [count_prior(v) for v in valid]
    noise = [np.random.default_rng(i).normal(size=v.num_configs) for i, v in enumerate(valid)]
    noise2 = [np.random.default_rng(10 + i).normal(size=v.num_configs) for i, v in enumerate(valid)]
    blend = choose_blend(noise, noise2, valid, "kendall_tau", priors)
    assert blend.prior >= 0.5 and blend.valid["count"] > max(blend.valid["graph model"], blend.valid["trees"])
    np.testing.assert_allclose(blend.combine(noise[0], noise2[0], priors[0]),
                               (blend.weight + 1e-3) * z(noise[0]) + blend.prior * z(priors[0])
                               + (1 - blend.weight - blend.prior) * z(noise2[0]))
    truth = [np.log(v.runtime) for v in valid]  # a perfect graph model: all of it, none of the count
    assert (choose_blend(truth, noise2, valid, "kendall_tau", priors).weight,
            choose_blend(truth, noise2, valid, "kendall_tau", priors).prior) == (1.0, 0.0)


def test_describe_names_every_weight():
    from graphcost.inference.blend import describe

    text = describe(Blend(0.9, "kendall_tau", {"blend": 0.9, "graph model": 0.8, "trees": 0.5, "count": 0.7}, prior=0.1))
    assert "0.9 x graph model + 0.0 x trees + 0.1 x count of moved layouts" in text and "-0.0" not in text
    assert "count" not in describe(Blend(0.6, "kendall_tau", {"blend": 0.9, "graph model": 0.8, "trees": 0.5}))


def test_a_count_weight_without_the_counts_is_refused():
    from graphcost.inference.blend import blended

    with pytest.raises(ValueError, match="count"):
        Blend(0.5, "kendall_tau", {}, prior=0.2).combine(np.arange(3.0), np.arange(3.0))
    np.testing.assert_allclose(blended(0.5, np.arange(3.0), np.arange(3.0)), blended(0.5, np.arange(3.0), np.arange(3.0), 0.0, None))


def test_trees_of_one_program_use_its_raw_layouts_and_refuse_another(tmp_path, shipped, caplog):
    """Train and valid from ONE program (split by configuration): program mode, which widens the table
    with the raw layouts, records the program in trees.txt and does not score other programs."""
    import logging

    from graphcost.datasets import shipped_dataset_dir
    from graphcost.models.trees import ProgramMismatch, program_signature, raw_layouts

    [path] = sorted(shipped_dataset_dir("cpu_layout_1k").rglob("*.npz"))
    whole = prepare_graph(path, dedup=False)
    import dataclasses

    rows = np.random.default_rng(0).permutation(whole.num_configs)

    def part(r):
        return dataclasses.replace(whole, config_codes=whole.config_codes[r], runtime=whole.runtime[r],
                                   config_source_index=whole.config_source_index[r])

    train, valid, test = (part(rows[a:b]) for a, b in ((0, 300), (300, 600), (600, None)))
    assert program_signature(train) == program_signature(test) != program_signature(shipped[1][0])
    assert raw_layouts(test).shape == (test.num_configs, len(test.config_node_index) * 18)
    trees = TreeRanker.fit([train], [valid], seed=0, threads=1)
    assert trees.program == program_signature(train)
    tau = metrics.evaluate_graph(trees.score(test), test.runtime, "layout")["kendall_tau"]
    assert tau > 0.75  # the table alone: ~0.73 at 300 configurations (docs/cost-models.md)
    trees.save(tmp_path / "trees.txt")
    again = TreeRanker.load(tmp_path / "trees.txt")
    assert again.program == trees.program
    np.testing.assert_array_equal(again.score(test), trees.score(test))
    other = shipped[1][0]
    with pytest.raises(ProgramMismatch, match="one other program"):
        again.score(other)
    blend = Blend(0.5, "kendall_tau", {})
    graph = np.arange(other.num_configs, dtype=np.float64)
    with caplog.at_level(logging.WARNING):
        np.testing.assert_array_equal(blend.score(graph, again, other), graph)
    assert "graph model alone" in caplog.text
    assert TreeRanker.fit(*shipped, seed=0, threads=1).program is None  # many programs: the table only


def test_a_bad_program_in_the_trees_header_is_refused(tmp_path, shipped):
    trees = TreeRanker.fit(*shipped, seed=0, threads=1)
    trees.save(tmp_path / "trees.txt")
    text = (tmp_path / "trees.txt").read_text()
    (tmp_path / "trees.txt").write_text(text.replace("kind=layout", "kind=layout program=xyz", 1))
    with pytest.raises(TreeError, match="program=<16 hex>"):
        TreeRanker.load(tmp_path / "trees.txt")


def test_copies_prior_reads_the_compiled_statistics_and_falls_back_to_the_count(shipped, caplog):
    import dataclasses
    import logging

    from graphcost.inference import blend

    g = shipped[1][0]
    stats = np.zeros((g.num_configs, 7))
    stats[:, 0], stats[:, 3] = np.arange(g.num_configs), 2.0  # copy bytes, transpose bytes
    annotated = dataclasses.replace(g, compiled=stats)
    np.testing.assert_array_equal(blend.copies_prior(annotated), np.arange(g.num_configs) + 2.0)
    np.testing.assert_array_equal(blend.prior_scores("copies", annotated), np.arange(g.num_configs) + 2.0)
    plain = dataclasses.replace(g, compiled=None)
    assert blend.copies_prior(plain) is None
    blend._warned_fallback.clear()
    with caplog.at_level(logging.WARNING, logger="graphcost.inference.blend"):
        np.testing.assert_array_equal(blend.prior_scores("copies", plain), count_prior(plain))
    assert "collect --action annotate" in caplog.text


def _with_copies(graphs, sign: float):
    """The graphs with copy bytes ranked as their runtimes (sign 1), against them (sign -1) or at random (0)."""
    import dataclasses

    out = []
    for g in graphs:
        stats = np.zeros((g.num_configs, 7))
        order = np.random.default_rng(0).permutation(g.num_configs) if sign == 0 else sign * np.asarray(g.runtime)
        stats[:, 0] = np.argsort(np.argsort(order))
        out.append(dataclasses.replace(g, compiled=stats))
    return out


def test_the_blend_takes_the_compiled_prior_when_it_ranks_better_on_every_graph(shipped):
    """Graph model and trees that know nothing, and compiled statistics that order the configurations as
    their runtimes do: fit_blend must take the copies as its prior, and say so; without statistics, the count."""
    import dataclasses

    from graphcost.inference.blend import describe, fit_blend

    train, valid = shipped
    noise = lambda g: np.random.default_rng(g.num_configs).normal(size=g.num_configs)  # noqa: E731
    blend, _ = fit_blend(noise, _with_copies(train, 1), _with_copies(valid, 1), "kendall_tau", threads=1)
    assert blend.prior_kind == "copies" and blend.prior >= 0.5 and blend.valid["copies"] > blend.valid["count"]
    assert "x bytes the compiler copies" in describe(blend)
    plain, _ = fit_blend(noise, train, [dataclasses.replace(v, compiled=None) for v in valid], "kendall_tau",
                         threads=1)  # no statistics: the count, as before
    assert plain.prior_kind == "count"


def test_the_prior_kind_is_chosen_on_training_and_validation_graphs_together(shipped):
    """blend.PRIOR_RULE: a prior fits nothing, so its kind is chosen on every graph. Copies that rank the 12
    training graphs right and the 4 validation graphs at random are the prior, though the count ranks the
    validation graphs better (the old rule's choice); copies backwards on the training graphs lose to the
    count, however well they rank the validation graphs."""
    from graphcost.inference.blend import fit_blend

    train, valid = shipped
    noise = lambda g: np.random.default_rng(g.num_configs).normal(size=g.num_configs)  # noqa: E731
    right_on_train, _ = fit_blend(noise, _with_copies(train, 1), _with_copies(valid, 0), "kendall_tau", threads=1)
    assert right_on_train.prior_kind == "copies"
    assert right_on_train.valid["copies"] < right_on_train.valid["count"]  # validation alone would take the count
    wrong_on_train, _ = fit_blend(noise, _with_copies(train, -1), _with_copies(valid, 1), "kendall_tau", threads=1)
    assert wrong_on_train.prior_kind == "count"


def test_blend_prior_kind_round_trip_and_check(tmp_path):
    Blend(0.5, "kendall_tau", {}, prior=0.3, prior_kind="copies").save(tmp_path / "blend.json")
    assert Blend.load(tmp_path / "blend.json").prior_kind == "copies"
    (tmp_path / "old.json").write_text('{"weight": 0.6, "prior": 0.2}')  # written before prior_kind: the count
    assert Blend.load(tmp_path / "old.json").prior_kind == "count"
    (tmp_path / "bad.json").write_text('{"weight": 0.6, "prior": 0.2, "prior_kind": "magic"}')
    with pytest.raises(TreeError, match="bad.json: field 'prior_kind' must be one of count, copies"):
        Blend.load(tmp_path / "bad.json")
