"""LayerDAG evaluation: MMD statistics, WL-hash uniqueness/novelty, surrogate regressor."""

from dataclasses import replace

import numpy as np
import pytest

from graphcost.dag.datasets.lp import generate_lp_dataset
from graphcost.dag.evaluate.novelty import novelty, uniqueness, wl_hash
from graphcost.dag.evaluate.statistics import graph_histograms, mmd, mmd_table
from graphcost.dag.evaluate.surrogate import (
    SurrogateConfig,
    fit_real_surrogates,
    fit_surrogate,
    pearson,
    score_predictions,
    surrogate_pearson,
)
from graphcost.dag.graph import DAG


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
