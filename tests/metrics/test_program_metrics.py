"""Kaufman et al. metrics (Tile-Size APE, MAPE), evaluation subset, per-graph evaluation and
aggregation, checked on hand-computed cases."""

import math

import numpy as np
import pytest
import scipy.stats

from graphcost import metrics as M


def test_tile_size_ape_hand_case():
    # kernel 0: best 10, model picks idx 1 (runtime 12) -> excess 2
    # kernel 1: best 5, model picks the best -> excess 0
    # kernel 2: best 20, model picks idx 0 (runtime 30) -> excess 10
    preds = [np.array([0.5, 0.1, 0.9]), np.array([3.0, 1.0]), np.array([0.0, 0.0])]
    runtimes = [np.array([10.0, 12.0, 11.0]), np.array([6.0, 5.0]), np.array([30.0, 20.0])]
    # kernel 2 has tied scores -> first index (runtime 30) is the pick
    expected = 100 * (2 + 0 + 10) / (10 + 5 + 20)
    assert M.tile_size_ape(preds, runtimes) == pytest.approx(expected)
    # a perfect model has zero APE
    assert M.tile_size_ape(runtimes, runtimes) == 0.0


def test_tile_size_ape_validation():
    with pytest.raises(ValueError, match="same kernels"):
        M.tile_size_ape([np.ones(2)], [np.ones(2), np.ones(2)])
    with pytest.raises(ValueError, match="kernel 1: .*equal lengths"):
        M.tile_size_ape([np.ones(2), np.ones(3)], [np.ones(2), np.ones(2)])
    with pytest.raises(ValueError, match="at least one kernel"):
        M.tile_size_ape([], [])
    with pytest.raises(ValueError, match="sequence of per-kernel"):
        M.tile_size_ape(np.ones(3), np.ones(3))


def test_mape_hand_case():
    pred = [110.0, 90.0, 5.0]
    true = [100.0, 100.0, 4.0]
    assert M.mape(pred, true) == pytest.approx(100 * (0.1 + 0.1 + 0.25) / 3)
    # Kaufman et al. report kernels >= 5 µs only
    assert M.mape(pred, true, min_runtime=5.0) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="min_runtime"):
        M.mape(pred, true, min_runtime=1e9)
    with pytest.raises(ValueError, match="> 0"):
        M.mape([1.0], [0.0])


def test_eval_subset_indices():
    r = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    assert M.eval_subset_indices(r, num=10).tolist() == [1, 3, 4, 2, 0]  # all, sorted
    rng = np.random.default_rng(0)
    big = rng.permutation(2500).astype(float)
    idx = M.eval_subset_indices(big, num=1000)
    assert len(idx) == 1000 and len(np.unique(idx)) == 1000
    assert big[idx[0]] == 0 and big[idx[-1]] == 2499  # fastest and slowest kept
    assert np.all(np.diff(big[idx]) > 0)
    gaps = np.diff(big[idx])
    assert gaps.min() >= 2 and gaps.max() <= 3  # evenly spaced ranks (2499/999 ≈ 2.5)


def test_evaluate_graph_layout_and_tile():
    rng = np.random.default_rng(2)
    runtime = rng.uniform(1, 10, size=200)
    pred = runtime + rng.normal(scale=2.0, size=200)
    out = M.evaluate_graph(pred, runtime, "layout:xla:random")
    assert set(out) == {"n_configs", "kendall_tau", "opa", "top1_slowdown",
                        "top10_slowdown", "top100_slowdown"}
    assert out["kendall_tau"] == pytest.approx(scipy.stats.kendalltau(pred, runtime).statistic)
    assert out["opa"] == pytest.approx(M.opa(pred, runtime))
    assert out["top10_slowdown"] == pytest.approx(M.top_k_slowdown(pred, runtime, 10))
    assert out["n_configs"] == 200

    tile = M.evaluate_graph(pred[:20], runtime[:20], "tile")
    assert set(tile) == {"n_configs", "kendall_tau", "opa", "top1_slowdown",
                         "top5_slowdown", "top10_slowdown", "tile_score"}
    assert tile["tile_score"] == pytest.approx(1 - tile["top5_slowdown"])
    with pytest.raises(ValueError, match="kind"):
        M.evaluate_graph(pred, runtime, "fusion")


def test_evaluate_graph_constant_prediction_gives_nan_tau():
    out = M.evaluate_graph([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], "layout")
    assert math.isnan(out["kendall_tau"])
    assert out["opa"] == 0.0  # every ordered pair has tied scores -> wrong


def test_aggregate():
    g1 = {"name": "a", "n_configs": 10, "kendall_tau": 0.5, "top1_slowdown": 0.2}
    g2 = {"name": "b", "n_configs": 30, "kendall_tau": float("nan"), "top1_slowdown": 0.4}
    g3 = {"name": "c", "n_configs": 5, "kendall_tau": 0.1, "top1_slowdown": 0.0, "tile_score": 1.0}
    agg = M.aggregate([g1, g2, g3])
    assert agg["n_graphs"] == 3
    assert agg["n_configs"] == 45
    assert agg["kendall_tau"] == pytest.approx(0.3)  # NaN skipped
    assert agg["top1_slowdown"] == pytest.approx(0.2)
    assert agg["tile_score"] == 1.0
    assert agg["counts"] == {"kendall_tau": 2, "top1_slowdown": 3, "tile_score": 1}
    assert "name" not in agg
    with pytest.raises(ValueError, match="empty"):
        M.aggregate([])
    with pytest.raises(ValueError, match="list of per-graph"):
        M.aggregate(g1)


def test_aggregate_of_evaluate_graph_end_to_end():
    rng = np.random.default_rng(4)
    per_graph = []
    taus = []
    for _ in range(5):
        r = rng.uniform(1, 2, size=50)
        p = r + rng.normal(scale=0.3, size=50)
        per_graph.append(M.evaluate_graph(p, r, "tile:xla"))
        taus.append(scipy.stats.kendalltau(p, r).statistic)
    agg = M.aggregate(per_graph)
    assert agg["kendall_tau"] == pytest.approx(np.mean(taus))
    assert agg["counts"]["tile_score"] == 5


def test_normalized_tile_runtime_changes_order_and_feeds_evaluate_graph():
    raw = np.array([100.0, 90.0, 50.0])
    norm = np.array([100.0, 60.0, 25.0])  # per-config normalisers -> ratios 1.0, 1.5, 2.0
    ratio = M.normalized_tile_runtime(raw, norm)
    assert ratio.tolist() == [1.0, 1.5, 2.0]
    pred = np.array([0.0, 1.0, 2.0])  # ranks the normalised runtimes perfectly
    out = M.evaluate_graph(pred, raw, "tile", normalizers=norm)
    assert out["kendall_tau"] == pytest.approx(1.0)
    assert out["top1_slowdown"] == 0.0 and out["tile_score"] == 1.0
    # on raw runtimes the same prediction is reversed
    assert M.evaluate_graph(pred, raw, "tile")["kendall_tau"] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="normalizers: must be > 0"):
        M.normalized_tile_runtime(raw, [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="equal lengths"):
        M.normalized_tile_runtime(raw, [1.0, 1.0])
