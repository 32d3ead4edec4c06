"""LayerDAG evaluation: MMD statistics, WL-hash uniqueness/novelty, surrogate regressor."""

from dataclasses import replace

import numpy as np
import pytest

from graphcost.layerdag.datasets.lp import generate_lp_dataset
from graphcost.layerdag.quality import statistics
from graphcost.layerdag.quality.novelty import novelty, uniqueness, wl_hash
from graphcost.layerdag.quality.statistics import emd_1d, graph_histograms, mmd, mmd_report, mmd_table
from graphcost.layerdag.quality.surrogate import (
    SurrogateConfig,
    fit_real_surrogates,
    fit_surrogate,
    pearson,
    score_predictions,
    surrogate_pearson,
)
from graphcost.layerdag.dag_record import DAG


def chain(n, attr=0):
    return DAG(np.full(n, attr, np.int64), np.arange(n - 1), np.arange(1, n), float(n))


def star(n):
    return DAG(np.zeros(n, np.int64), np.zeros(n - 1, np.int64), np.arange(1, n), float(n))


def test_histograms_of_a_chain():
    h = graph_histograms(chain(4))
    np.testing.assert_array_equal(h["in_degree"], [1, 3])  # one source, three nodes with in-degree 1
    np.testing.assert_array_equal(h["layer_size"], [0, 4])  # four layers of size 1
    assert h["num_layers"].argmax() == 4


def test_mmd_zero_for_identical_sets_and_positive_for_different():
    lp = generate_lp_dataset(30, seed=0)
    assert all(v == pytest.approx(0.0, abs=1e-12) for v in mmd_table(lp, lp).values())
    chains = [chain(n) for n in range(3, 12)]
    stars = [star(n) for n in range(3, 12)]
    table = mmd_table(chains, stars)
    assert table["out_degree"] > 0.1 and table["num_layers"] > 0.1
    with pytest.raises(ValueError):
        mmd([], [np.ones(2)])


def test_emd_kernel_mmd_matches_hand_computed_values():
    p, q, r = np.array([1, 0, 1]), np.array([0, 2]), np.array([0, 0, 0, 5])  # pmfs: {0,2} halves, delta 1, delta 3
    # CDFs on 0..3: P = .5 .5 1 1, Q = 0 1 1 1, R = 0 0 0 1
    assert emd_1d(p, q) == pytest.approx(1.0) and emd_1d(p, r) == pytest.approx(2.0) and emd_1d(q, r) == pytest.approx(2.0)
    assert mmd([p], [q]) == pytest.approx(2 - 2 * np.exp(-0.5))  # k = exp(-EMD^2 / 2), sigma 1
    # X = {p, q}, Y = {r}: mean k(X, X) = (2 + 2 e^-1/2) / 4, k(r, r) = 1, k(x, r) = e^-2
    assert mmd([p, q], [r]) == pytest.approx((1 + np.exp(-0.5)) / 2 + 1 - 2 * np.exp(-2))
    assert mmd([p, 2 * p], [p]) == pytest.approx(0.0, abs=1e-12)  # histograms are compared as pmfs


def test_blockwise_mmd_equals_the_pairwise_definition(monkeypatch):
    from scipy.stats import wasserstein_distance

    rng = np.random.default_rng(0)
    xs = [rng.integers(0, 4, size=rng.integers(1, 9)) + 0.0 for _ in range(23)]
    ys = [rng.integers(0, 4, size=rng.integers(1, 12)) + 0.0 for _ in range(17)]
    xs = [h if h.sum() else np.ones(1) for h in xs] + [xs[0].copy(), xs[0].copy()]  # repeats are merged with a count
    ys = [h if h.sum() else np.ones(1) for h in ys]

    def k(a, b):
        return np.exp(-(wasserstein_distance(np.arange(len(a)), np.arange(len(b)), a, b) ** 2) / 2)

    def mean_k(a_set, b_set):
        return np.mean([k(a, b) for a in a_set for b in b_set])

    expected = mean_k(xs, xs) + mean_k(ys, ys) - 2 * mean_k(xs, ys)
    assert mmd(xs, ys) == pytest.approx(expected, rel=1e-9)
    monkeypatch.setattr(statistics, "BLOCK_ELEMENTS", 8)  # 2-row blocks, 2 support points per chunk
    assert mmd(xs, ys) == pytest.approx(expected, rel=1e-9)


def test_hostile_inputs_take_memory_linear_in_the_input():
    import tracemalloc

    assert graph_histograms(chain(4000))["num_layers"].shape == (4001,)  # was a row of np.eye(4001): 128 MB
    rng = np.random.default_rng(0)
    xs = [rng.integers(0, 9, size=rng.integers(1, 60)) + 1.0 for _ in range(1500)]
    wide = np.zeros(20_001)
    wide[[0, -1]] = 1.0
    ys = [rng.integers(0, 9, size=rng.integers(1, 60)) + 1.0 for _ in range(50)] + [wide]
    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    try:
        value = mmd(xs, ys)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # padded pairwise arrays took 1500^2 x 20,001 float64 (337 GB); blocks hold BLOCK_ELEMENTS (8 MiB) numbers
    assert peak < 48 * 2**20, peak
    assert 0 < value < 2


def test_mmd_report_names_its_kernel_and_caps_the_graphs_compared():
    many = [chain(2 + i % 40) for i in range(300)]
    report = mmd_report(many, [chain(3), star(5)])
    assert report["mmd_kernel"] == "gaussian_emd(sigma=1, unit bin spacing)"
    assert report["mmd_graphs"] == {"generated": 300, "real": 2, "of_generated": 300, "of_real": 2, "max": 2048}
    capped = mmd_report(many, [chain(3), star(5)], max_graphs=100)
    assert capped["mmd_graphs"] == {"generated": 100, "real": 2, "of_generated": 300, "of_real": 2, "max": 100}
    assert capped == mmd_report(many, [chain(3), star(5)], max_graphs=100)  # a seeded subsample
    assert capped["mmd"]["num_layers"] != report["mmd"]["num_layers"]
    assert capped["mmd"]["num_layers"] == pytest.approx(report["mmd"]["num_layers"], abs=0.05)


def test_graphs_without_nodes_have_a_layer_count_but_no_degree_distribution():
    empty = DAG(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    table = mmd_table([empty, chain(3)], [chain(3)])
    assert table["in_degree"] == pytest.approx(0.0, abs=1e-12)  # the empty graph is left out
    assert table["num_layers"] > 0  # 0 layers vs 3
    with pytest.raises(ValueError, match="graph with nodes"):
        mmd_table([empty], [chain(3)])


def test_wl_hash_is_permutation_invariant_and_attribute_aware():
    g = DAG(np.array([0, 1, 2]), np.array([0, 0]), np.array([1, 2]))
    perm = np.array([2, 0, 1])  # old id -> new id
    h = DAG(np.empty(3, np.int64), perm[g.src], perm[g.dst])
    h.node_attr[perm] = g.node_attr
    assert wl_hash(g) == wl_hash(h)
    assert wl_hash(g) != wl_hash(DAG(np.array([0, 2, 2]), g.src, g.dst))
    assert wl_hash(chain(3)) != wl_hash(star(3))  # same counts, different direction structure


def test_uniqueness_and_novelty():
    gen = [chain(3), chain(3), star(4), chain(5)]
    assert uniqueness(gen) == pytest.approx(3 / 4)
    assert novelty(gen, [chain(3)]) == pytest.approx(2 / 4)


def test_surrogate_learns_a_structural_label():
    rng = np.random.default_rng(0)
    dags = [chain(int(n)) if i % 2 else star(int(n)) for i, n in enumerate(rng.integers(3, 30, size=120))]
    for d in dags:
        d.label = float(d.num_nodes)
    cfg = SurrogateConfig(hidden=16, epochs=40, patience=10)
    pred = fit_surrogate(dags[:80], dags[80:100], 1, cfg)(dags[100:])
    assert pearson(pred, [d.label for d in dags[100:]]) > 0.9
    out = surrogate_pearson({"train": dags[:80], "valid": dags[80:100], "test": dags[100:]}, dags[:80], dags[80:100], 1, cfg)
    assert out["ratio"] == pytest.approx(1.0, abs=1e-6)  # same data on both sides -> same regressor
    assert out["label_fidelity"] > 0.9  # "synthetic" graphs that really have their labels' sizes
    shuffled = [DAG(d.node_attr, d.src, d.dst, float(y)) for d, y in zip(dags[:100], rng.permutation([d.label for d in dags[:100]]))]
    out = surrogate_pearson({"train": dags[:80], "valid": dags[80:100], "test": dags[100:]}, shuffled[:80], shuffled[80:], 1, cfg)
    assert abs(out["label_fidelity"]) < 0.4  # labels unrelated to the graphs: conditioning did nothing


def test_surrogate_repeats_average_the_per_seed_fits():
    rng = np.random.default_rng(1)
    dags = [chain(int(n)) if i % 2 else star(int(n)) for i, n in enumerate(rng.integers(3, 30, size=60))]
    for d in dags:
        d.label = float(d.num_nodes) + rng.uniform(0, 20)  # noisy, so the seeds disagree
    real = {"train": dags[:30], "valid": dags[30:40], "test": dags[40:]}
    syn = [DAG(d.node_attr, d.src, d.dst, float(y)) for d, y in zip(dags[:40], rng.permutation([d.label for d in dags[:40]]))]
    cfg = SurrogateConfig(hidden=8, epochs=6, patience=3)
    one = [surrogate_pearson(real, syn[:30], syn[30:], 1, replace(cfg, seed=k)) for k in (3, 4)]
    both = surrogate_pearson(real, syn[:30], syn[30:], 1, replace(cfg, seed=3, repeats=2))
    for key in ("pearson_real", "pearson_synthetic"):
        per_seed = [o[key] for o in one]
        assert both[f"{key}_by_seed"] == pytest.approx(per_seed) and both[key] == pytest.approx(np.mean(per_seed))
    assert per_seed[0] != pytest.approx(per_seed[1])
    assert both["ratio"] == pytest.approx(both["pearson_synthetic"] / both["pearson_real"])
    assert both["label_fidelity"] == pytest.approx(np.mean([o["label_fidelity"] for o in one]))
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        SurrogateConfig(repeats=0)


def test_real_fits_are_reused_without_changing_the_result():
    rng = np.random.default_rng(2)
    dags = [chain(int(n)) if i % 2 else star(int(n)) for i, n in enumerate(rng.integers(3, 30, size=60))]
    for d in dags:
        d.label = float(d.num_nodes) + rng.uniform(0, 20)
    real = {"train": dags[:30], "valid": dags[30:40], "test": dags[40:]}
    syn = [DAG(d.node_attr, d.src, d.dst, float(y)) for d, y in zip(dags[:40], rng.permutation([d.label for d in dags[:40]]))]
    cfg = SurrogateConfig(hidden=8, epochs=6, patience=3, repeats=2)
    fits = fit_real_surrogates(real, 1, cfg)
    y = np.array([d.label for d in real["test"]])
    per_fit = [pearson(p, y) for p in fits.test_predictions]
    assert len(fits.predictors) == 2 and per_fit[0] != pytest.approx(per_fit[1])
    fresh = surrogate_pearson(real, syn[:30], syn[30:], 1, cfg)
    reused = surrogate_pearson(real, syn[:30], syn[30:], 1, cfg, real_fits=fits)
    assert reused == fresh  # bit-for-bit: the fits are deterministic given their seeds
    assert fresh["pearson_real_by_seed"] == pytest.approx(per_fit)
    log_fit = [pearson(np.log(p), np.log(y)) for p in fits.test_predictions]
    assert fresh["pearson_real_log_by_seed"] == pytest.approx(log_fit) and log_fit != pytest.approx(per_fit)
    assert fresh["ratio_log"] == pytest.approx(fresh["pearson_synthetic_log"] / np.mean(log_fit))
    with pytest.raises(ValueError, match="another SurrogateConfig"):
        surrogate_pearson(real, syn[:30], syn[30:], 1, replace(cfg, seed=5), real_fits=fits)
    other_test = {**real, "test": dags[35:55]}
    with pytest.raises(ValueError, match="another real test set"):
        surrogate_pearson(other_test, syn[:30], syn[30:], 1, cfg, real_fits=fits)


def test_score_predictions_averages_fits_then_divides():
    y = np.array([1.0, 2.0, 4.0, 8.0])
    real = [y * 2, np.array([1.0, 3.0, 2.0, 8.0])]
    syn = [np.array([2.0, 1.0, 4.0, 8.0])]
    out = score_predictions(y, real, syn)
    p_real = [1.0, pearson(real[1], y)]
    assert out["pearson_real_by_seed"] == pytest.approx(p_real) and out["pearson_real"] == pytest.approx(np.mean(p_real))
    assert out["ratio"] == pytest.approx(pearson(syn[0], y) / np.mean(p_real))
    assert out["pearson_synthetic_log"] == pytest.approx(pearson(np.log(syn[0]), np.log(y)))
    assert out["ratio"] != pytest.approx(out["ratio_log"])


def test_surrogate_rejects_unlabelled_graphs():
    with pytest.raises(ValueError, match="label"):
        fit_surrogate([DAG(np.zeros(2, np.int64), np.array([0]), np.array([1]))] * 2, [chain(3)], 1)
    real = {"train": [chain(3), chain(4)], "valid": [chain(5)], "test": [chain(3), DAG(np.zeros(2, np.int64), np.array([0]), np.array([1]), 0.0)]}
    with pytest.raises(ValueError, match="real test: every graph needs a finite positive label"):
        fit_real_surrogates(real, 1, SurrogateConfig(epochs=1))
