"""Ranking metrics against independent references (scipy, brute-force pair loops, hand cases)."""

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from graphcost import metrics as M


def _scipy_tau(p, r):
    return scipy.stats.kendalltau(p, r).statistic


def _close_or_both_nan(a, b, tol=1e-12):
    if math.isnan(b):
        return math.isnan(a)
    return abs(a - b) <= tol


def _brute_opa(p, r, half=False):
    """Brute force over ordered pairs (i, j) with r_i > r_j."""
    num = den = 0.0
    for i, j in itertools.permutations(range(len(p)), 2):
        if r[i] > r[j]:
            den += 1
            if p[i] > p[j]:
                num += 1
            elif half and p[i] == p[j]:
                num += 0.5
    return num / den if den else math.nan


def _brute_counts(p, r):
    c = d = 0
    for i, j in itertools.combinations(range(len(p)), 2):
        s = np.sign(p[i] - p[j]) * np.sign(r[i] - r[j])
        c += s > 0
        d += s < 0
    return c, d


# ---------------------------------------------------------------- Kendall τ
def test_kendall_tau_hand_cases():
    assert M.kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert M.kendall_tau([4, 3, 2, 1], [10, 20, 30, 40]) == pytest.approx(-1.0)
    # 3 concordant, 3 discordant, no ties -> 0 (TGraph eq. 9 by hand)
    assert M.kendall_tau([1, 2, 3, 4], [2, 4, 1, 3]) == pytest.approx(0.0)
    # τ-b with ties by hand: p=[1,1,2], r=[1,2,3]: C=2, D=0, n0=3, n1=1, n2=0
    assert M.kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(2 * 3))


@pytest.mark.parametrize("seed", range(4))
def test_kendall_tau_matches_scipy_random_with_ties(seed):
    rng = np.random.default_rng(seed)
    for _ in range(100):
        n = int(rng.integers(2, 50))
        p = rng.integers(0, int(rng.integers(1, 9)), n).astype(float)
        r = rng.integers(0, int(rng.integers(1, 9)), n).astype(float)
        assert _close_or_both_nan(M.kendall_tau(p, r), _scipy_tau(p, r)), (p, r)
        # continuous values (no ties)
        p2, r2 = rng.normal(size=n), rng.normal(size=n)
        assert M.kendall_tau(p2, r2) == pytest.approx(_scipy_tau(p2, r2), abs=1e-12)


@pytest.mark.parametrize(
    "p, r",
    [
        ([0, 0, 0, 0], [1, 2, 3, 4]),  # constant prediction -> NaN (scipy too)
        ([1, 2, 3, 4], [5, 5, 5, 5]),  # constant runtime
        ([1, 1], [1, 2]),
        ([1, 2], [2, 1]),
        ([0, 0, 1, 1], [0, 1, 0, 1]),  # all ties cancel
        ([3, 3, 3, 1, 1], [9, 9, 1, 1, 1]),  # heavy joint ties
        ([1e-300, 2e-300, -1e300, 1e300], [1, 2, 3, 4]),  # extreme magnitudes
        (list(range(50, 0, -1)), list(range(50))),
    ],
)
def test_kendall_tau_adversarial(p, r):
    assert _close_or_both_nan(M.kendall_tau(p, r), _scipy_tau(p, r))


def test_kendall_tau_large_n_fast_path_matches_scipy():
    rng = np.random.default_rng(7)
    n = 100_000
    p = np.round(rng.normal(size=n), 2)  # many ties in both
    r = np.round(p + rng.normal(size=n), 1)
    assert M.kendall_tau(p, r) == pytest.approx(_scipy_tau(p, r), abs=1e-12)
    perm = rng.permutation(n).astype(float)
    assert M.kendall_tau(perm, perm) == 1.0
    assert M.kendall_tau(perm, -perm) == -1.0


def test_pair_counts_match_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(2, 25))
        p = rng.integers(0, 4, n).astype(float)
        r = rng.integers(0, 4, n).astype(float)
        c = M._pair_counts(p, r)
        assert (c["concordant"], c["discordant"]) == _brute_counts(p, r)


def test_pair_counts_stay_exact_for_thousands_of_tied_configurations():
    """C and D come from scipy's τ_b times a square root: still exact integers at n = 3000."""
    rng = np.random.default_rng(2)
    p = rng.integers(0, 50, 3000).astype(float)
    r = rng.integers(0, 40, 3000).astype(float)
    sign = np.sign(p[:, None] - p[None, :]).astype(np.int8) * np.sign(r[:, None] - r[None, :]).astype(np.int8)
    upper = np.triu(sign, k=1)
    c = M._pair_counts(p, r)
    assert (c["concordant"], c["discordant"]) == (int((upper == 1).sum()), int((upper == -1).sum()))


# ---------------------------------------------------------------- OPA
def test_opa_hand_cases():
    assert M.opa([1, 2, 3], [1, 2, 3]) == 1.0
    assert M.opa([3, 2, 1], [1, 2, 3]) == 0.0
    # runtime tie (r0 == r1) excluded; pred tie on an ordered pair counts as wrong
    # ordered pairs: (2>0), (2>1): p2=2 > p0=1 ok, p2=2 == p1=2 tie -> wrong
    assert M.opa([1, 2, 2], [5, 5, 7]) == pytest.approx(0.5)
    assert M.opa([1, 2, 2], [5, 5, 7], pred_ties="half") == pytest.approx(0.75)
    assert math.isnan(M.opa([1, 2, 3], [4, 4, 4]))


@pytest.mark.parametrize("half", [False, True])
def test_opa_matches_brute_force(half):
    rng = np.random.default_rng(11)
    for _ in range(150):
        n = int(rng.integers(2, 30))
        p = rng.integers(0, int(rng.integers(1, 6)), n).astype(float)
        r = rng.integers(0, int(rng.integers(1, 6)), n).astype(float)
        got = M.opa(p, r, pred_ties="half" if half else "wrong")
        assert _close_or_both_nan(got, _brute_opa(p, r, half)), (p, r)


def test_opa_large_n():
    rng = np.random.default_rng(5)
    n = 30_000
    r = rng.normal(size=n)
    assert M.opa(r, r) == 1.0
    assert M.opa(-r, r) == 0.0
    assert 0.45 < M.opa(rng.normal(size=n), r) < 0.55


# ---------------------------------------------------------------- top-K and tile score
def test_top_k_slowdown_hand_cases():
    runtime = [10.0, 20.0, 40.0, 5.0]
    pred = [0.0, 1.0, 2.0, 3.0]  # model ranks 0,1,2,3 -> true best (idx 3) ranked last
    assert M.top_k_slowdown(pred, runtime, 1) == pytest.approx(10 / 5 - 1)
    assert M.top_k_slowdown(pred, runtime, 3) == pytest.approx(10 / 5 - 1)
    assert M.top_k_slowdown(pred, runtime, 4) == 0.0
    assert M.top_k_slowdown(pred, runtime, 100) == 0.0  # k > n: every config is a candidate
    # picks idx 2 (40) first, then idx 1 (20)
    pred2 = [5.0, 1.0, 0.0, 9.0]
    assert M.top_k_slowdown(pred2, runtime, 1) == pytest.approx(40 / 5 - 1)
    assert M.top_k_slowdown(pred2, runtime, 2) == pytest.approx(20 / 5 - 1)
    assert M.top_k_slowdown(runtime, runtime, 1) == 0.0


def test_top_k_ties_in_pred_use_input_order():
    # all scores equal: stable order -> the first k configurations are taken
    assert M.top_k_slowdown([0, 0, 0], [3.0, 2.0, 1.0], 2) == pytest.approx(2.0 / 1.0 - 1)


def test_tile_score_is_tgraph_eq10():
    runtime = np.array([4.0, 8.0, 2.0, 6.0, 3.0, 9.0, 5.0])
    # best (2.0, idx 2) predicted 6th -> top-5 best is 3.0 -> 2 - 3/2 = 0.5
    pred = np.array([0, 1, 5, 2, 3, 4, 6], dtype=float)
    top5 = np.argsort(pred)[:5]
    assert M.tile_score(pred, runtime) == pytest.approx(2 - runtime[top5].min() / runtime.min())
    assert M.tile_score(pred, runtime) == pytest.approx(0.5)
    assert M.tile_score(runtime, runtime) == 1.0
    assert M.tile_score(pred, runtime, k=1) == pytest.approx(2 - 4.0 / 2.0)


def test_combined_score():
    scores = {c: v for c, v in zip(M.COLLECTIONS, [0.9, 0.4, 0.6, 0.5, 0.8])}
    assert M.combined_score(scores) == pytest.approx((0.9 + 0.4 + 0.6 + 0.5 + 0.8) / 5)
    part = {"tile:xla": 1.0, "layout:nlp:random": 0.5}
    with pytest.raises(ValueError, match="missing"):
        M.combined_score(part)
    assert M.combined_score(part, allow_partial=True) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="unknown"):
        M.combined_score({**scores, "layout:xla": 0.1})
    with pytest.raises(ValueError, match="not finite"):
        M.combined_score({**scores, "tile:xla": float("nan")})


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "fn",
    [M.kendall_tau, M.opa, lambda p, r: M.top_k_slowdown(p, r, 1), M.tile_score],
)
def test_validation_errors(fn):
    with pytest.raises(ValueError, match="equal lengths"):
        fn([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="non-finite"):
        fn([1, np.nan], [1, 2])
    with pytest.raises(ValueError, match="non-finite"):
        fn([1, 2], [1, np.inf])
    with pytest.raises(ValueError, match="1-D"):
        fn([[1, 2]], [[1, 2]])
    with pytest.raises(ValueError, match="at least|equal lengths"):
        fn([], [])


def test_validation_specifics():
    with pytest.raises(ValueError, match="at least 2"):
        M.kendall_tau([1.0], [1.0])
    with pytest.raises(ValueError, match="> 0"):
        M.top_k_slowdown([1, 2], [0.0, 1.0], 1)
    with pytest.raises(ValueError, match="positive integer"):
        M.top_k_slowdown([1, 2], [1, 2], 0)
    with pytest.raises(ValueError, match="cannot be read"):
        M.kendall_tau(["a", "b"], [1, 2])
    with pytest.raises(ValueError, match="pred_ties"):
        M.opa([1, 2], [1, 2], pred_ties="maybe")


def test_accepts_torch_tensors_with_grad():
    import torch

    s = torch.tensor([0.1, 0.5, 0.3], requires_grad=True)
    assert M.kendall_tau(s, torch.tensor([1.0, 3.0, 2.0])) == pytest.approx(1.0)
