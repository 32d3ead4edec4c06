"""Evaluation metrics for configuration ranking, in one place (pure numpy).

SCORE CONVENTION: every ``pred`` argument is one score per configuration that orders like
runtime: LOWER score = predicted FASTER. Rankings sort ascending. Every function takes
``(pred, runtime)`` in that order.

Metrics and their sources
-------------------------
* [`kendall_tau`][graphcost.metrics.kendall_tau] — Kendall's τ-b between scores and runtimes (TpuGraphs §5.1; TGraph eq. 9
  writes the tie-free τ-a form, which τ-b equals when there are no ties):
  ``scipy.stats.kendalltau(pred, runtime)``, ties included, O(n log n).
* [`opa`][graphcost.metrics.opa] — Ordered Pair Accuracy (TpuGraphs §4.3; the TF-Ranking definition used by the
  TpuGraphs baselines): among pairs with different runtimes, the fraction whose scores are
  ordered strictly the same way. Pairs with equal runtimes are excluded; pairs with equal
  scores but different runtimes count as wrong (``pred_ties="half"`` counts them as 1/2).
* [`top_k_slowdown`][graphcost.metrics.top_k_slowdown] — the "top-K error" / "slowdown error@K" of TpuGraphs eq. 1:
  ``min_{i in top-K(pred)} y_i / min_{i in A} y_i - 1`` (a fraction, 0 = found the best).
  TpuGraphs uses K in (1, 10, 100) for layout and (1, 5, 10) for tile.
* [`tile_score`][graphcost.metrics.tile_score] — the Kaggle "Fast or Slow?" tile metric, TGraph eq. 10:
  ``2 - min_{i in top-5} r_i / min_{i in A} r_i`` (= 1 - top-5 slowdown; 1 is perfect).
* [`combined_score`][graphcost.metrics.combined_score] — the competition score: the unweighted mean of the five collection
  scores (tile:xla tile score, and mean Kendall τ on each of the four layout collections).
* [`tile_size_ape`][graphcost.metrics.tile_size_ape] — Kaufman et al. eq. 2, per program (a list of kernels), in percent.
* [`mape`][graphcost.metrics.mape] — mean absolute percentage error (Kaufman et al. §5.2), in percent.

For the tile collection, runtimes must be the measured ``config_runtime`` divided element-wise
by ``config_runtime_normalizers`` (TpuGraphs README): the normaliser is per configuration (the
default tile's runtime in the same measurement run), so it changes the order and every metric
here must see normalised runtimes. `normalized_tile_runtime` does the division;
[`evaluate_graph`][graphcost.metrics.evaluate_graph] does it when given ``normalizers``. ``PreparedGraph.runtime`` is already
normalised.

Aggregation: [`evaluate_graph`][graphcost.metrics.evaluate_graph] computes every metric of one graph for its kind, and
[`aggregate`][graphcost.metrics.aggregate] averages per-graph dicts (TpuGraphs §5: "an average across all kernels").

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
    [Kaufman et al.] S. J. Kaufman et al. A Learned Performance Model for Tensor Processing Units. MLSys 2021.
        https://arxiv.org/abs/2008.01040
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "COLLECTIONS",
    "LAYOUT_TOP_K",
    "TILE_TOP_K",
    "TILE_SCORE_K",
    "kendall_tau",
    "opa",
    "top_k_slowdown",
    "tile_score",
    "combined_score",
    "tile_size_ape",
    "mape",
    "eval_subset_indices",
    "normalized_tile_runtime",
    "evaluate_graph",
    "aggregate",
]

# The five collections of the Kaggle "Fast or Slow?" competition / TGraph Table 2.
COLLECTIONS: tuple[str, ...] = (
    "tile:xla",
    "layout:xla:default",
    "layout:xla:random",
    "layout:nlp:default",
    "layout:nlp:random",
)
LAYOUT_TOP_K: tuple[int, ...] = (1, 10, 100)  # TpuGraphs Table 2, layout collections
TILE_TOP_K: tuple[int, ...] = (1, 5, 10)  # TpuGraphs Table 2, tile collection
TILE_SCORE_K = 5  # TGraph eq. 10: K = 5


# ----------------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------------
def _as_vector(x: Any, name: str) -> np.ndarray:
    """Return ``x`` as a 1-D float64 array of finite values, or raise ValueError."""
    try:
        if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, possibly on GPU
            x = x.detach().cpu().numpy()
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"{name}: cannot be read as an array of numbers ({exc})") from None
    if arr.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name}: {int(bad.sum())} non-finite value(s), first at index {idx} ({arr[idx]})"
        )
    return arr


def _pair(pred: Any, runtime: Any, min_len: int = 1, positive_runtime: bool = False):
    """Validate a (pred, runtime) pair: 1-D, finite, equal lengths, at least ``min_len``."""
    p = _as_vector(pred, "pred")
    r = _as_vector(runtime, "runtime")
    if p.shape != r.shape:
        raise ValueError(
            f"pred and runtime must have equal lengths, got {p.shape[0]} and {r.shape[0]}"
        )
    if p.shape[0] < min_len:
        raise ValueError(
            f"need at least {min_len} configuration(s), got {p.shape[0]}"
        )
    if positive_runtime and (r <= 0).any():
        idx = int(np.flatnonzero(r <= 0)[0])
        raise ValueError(f"runtime: must be > 0, found {r[idx]} at index {idx}")
    return p, r


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


# ----------------------------------------------------------------------------------------
# pair counting (shared by Kendall τ and OPA)
# ----------------------------------------------------------------------------------------
def _tied_pairs(x: np.ndarray) -> int:
    """Number of pairs (i<j) with x_i == x_j: sum over tie groups of t(t-1)/2."""
    _, counts = np.unique(x, return_counts=True)
    counts = counts.astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def _kendall_tau_b(pred: np.ndarray, runtime: np.ndarray) -> float:
    """scipy.stats.kendalltau's τ-b (NaN when either input is constant); its p-value is not used."""
    from scipy.stats import kendalltau

    return float(kendalltau(pred, runtime).statistic)


def _pair_counts(pred: np.ndarray, runtime: np.ndarray) -> dict[str, int]:
    """Concordance counts over all n(n-1)/2 pairs.

    Returns total pairs ``n0``, pairs tied in pred ``t_pred``, tied in runtime ``t_rt``,
    tied in both ``t_both``, and the ``concordant`` / ``discordant`` pairs (ties count in
    neither). C + D is the untied pairs; C - D = τ_b sqrt((n0 - t_pred)(n0 - t_rt)) with τ_b from
    scipy (O(n log n)), so C and D follow without counting pairs here.
    """
    n = pred.shape[0]
    n0 = n * (n - 1) // 2
    t_pred = _tied_pairs(pred)
    t_rt = _tied_pairs(runtime)
    _, both = np.unique(np.stack([pred, runtime], axis=1), axis=0, return_counts=True)
    both = both.astype(np.int64)
    t_both = int((both * (both - 1) // 2).sum())
    untied = n0 - t_pred - t_rt + t_both  # = concordant + discordant
    if untied == 0:  # a constant input: every pair tied somewhere (τ_b undefined)
        concordant = 0
    else:
        s = _kendall_tau_b(pred, runtime) * math.sqrt(float(n0 - t_pred) * float(n0 - t_rt))  # = C - D
        concordant = int(round((untied + s) / 2))
    return {
        "n0": n0,
        "t_pred": t_pred,
        "t_rt": t_rt,
        "t_both": t_both,
        "concordant": concordant,
        "discordant": untied - concordant,
    }


# ----------------------------------------------------------------------------------------
# ranking metrics
# ----------------------------------------------------------------------------------------
def kendall_tau(pred: Any, runtime: Any) -> float:
    """Kendall's τ-b between predicted scores and true runtimes (TpuGraphs §5.1, TGraph eq. 9).

    τ_b = (C - D) / sqrt((n0 - n1) (n0 - n2)), with C/D the concordant/discordant pairs,
    n0 = n(n-1)/2, n1/n2 the pairs tied in pred/runtime. Without ties this is TGraph eq. 9,
    (2 / n(n-1)) Σ_{i<j} sgn(s_i - s_j) sgn(r_i - r_j). Matches ``scipy.stats.kendalltau``
    (its default τ-b), including returning NaN when either input is constant (τ undefined).

    Args:
        pred: (n,) scores, lower = predicted faster.
        runtime: (n,) measured runtimes.
    Raises:
        ValueError: unequal lengths, non-finite values, or n < 2.
    """
    p, r = _pair(pred, runtime, min_len=2)
    if np.all(p == p[0]) or np.all(r == r[0]):
        return float("nan")  # τ undefined (scipy says the same, with a warning)
    return float(min(1.0, max(-1.0, _kendall_tau_b(p, r))))


def opa(pred: Any, runtime: Any, pred_ties: str = "wrong") -> float:
    """Ordered Pair Accuracy (TpuGraphs §4.3; TF-Ranking's OPA).

    OPA = Σ_{i,j} 1[r_i > r_j] 1[s_i > s_j] / Σ_{i,j} 1[r_i > r_j]: of the pairs whose
    runtimes differ, the fraction whose scores are strictly ordered the same way.

    Tie handling (explicit): pairs with equal runtimes are excluded from numerator and
    denominator; pairs with equal scores but different runtimes count as wrong
    (``pred_ties="wrong"``, the TF-Ranking rule) or as half right (``pred_ties="half"``).
    Returns NaN when every runtime is equal (no ordered pair exists).
    """
    if pred_ties not in ("wrong", "half"):
        raise ValueError(f"pred_ties must be 'wrong' or 'half', got {pred_ties!r}")
    p, r = _pair(pred, runtime, min_len=2)
    c = _pair_counts(p, r)
    ordered = c["n0"] - c["t_rt"]  # pairs with different runtimes
    if ordered == 0:
        return float("nan")
    correct = float(c["concordant"])
    if pred_ties == "half":
        correct += 0.5 * (c["t_pred"] - c["t_both"])  # tied score, different runtime
    return correct / ordered


def _predicted_best(p: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k lowest scores; equal scores are taken in input order (stable)."""
    return np.argsort(p, kind="stable")[:k]


def top_k_slowdown(pred: Any, runtime: Any, k: int) -> float:
    """TpuGraphs eq. 1 "top-K error" (slowdown error@K), as a fraction.

    ``min_{i in K} y_i / min_{i in A} y_i - 1`` where K are the k configurations with the
    lowest predicted scores (ties broken by input order) and A all configurations. When
    k >= n every configuration is a candidate and the error is 0. Runtimes must be > 0.
    """
    k = _check_k(k)
    p, r = _pair(pred, runtime, min_len=1, positive_runtime=True)
    best_pick = r[_predicted_best(p, k)].min()
    return float(best_pick / r.min() - 1.0)


def tile_score(pred: Any, runtime: Any, k: int = TILE_SCORE_K) -> float:
    """Kaggle tile metric, TGraph eq. 10: ``2 - min_{i in top-k} r_i / min_{i in A} r_i``.

    Equals ``1 - top_k_slowdown(pred, runtime, k)``; 1.0 when the fastest configuration is
    among the k predicted best, lower otherwise (can be negative).
    """
    return 1.0 - top_k_slowdown(pred, runtime, k)


def combined_score(
    per_collection: Mapping[str, float], allow_partial: bool = False
) -> float:
    """The competition's overall score: the unweighted mean over the five collections.

    ``per_collection`` maps collection name -> that collection's score: the mean tile score
    (TGraph eq. 10) for ``tile:xla`` and the mean Kendall τ (eq. 9) for each layout collection.
    All five names in :data:`COLLECTIONS` are required unless ``allow_partial`` (then the mean
    is over those given, at least one).
    """
    if not isinstance(per_collection, Mapping):
        raise ValueError(
            f"per_collection must be a mapping of collection name to score, got "
            f"{type(per_collection).__name__}"
        )
    unknown = sorted(set(per_collection) - set(COLLECTIONS))
    if unknown:
        raise ValueError(
            f"per_collection: unknown collection name(s) {unknown}; expected {list(COLLECTIONS)}"
        )
    missing = [c for c in COLLECTIONS if c not in per_collection]
    if missing and not allow_partial:
        raise ValueError(
            f"per_collection: missing collection(s) {missing} (pass allow_partial=True to "
            f"average only those given)"
        )
    if not per_collection:
        raise ValueError("per_collection: empty")
    values = []
    for name in COLLECTIONS:
        if name in per_collection:
            v = per_collection[name]
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"per_collection[{name!r}]: not a number ({v!r})") from None
            if not math.isfinite(v):
                raise ValueError(f"per_collection[{name!r}]: not finite ({v})")
            values.append(v)
    return float(np.mean(values))


# ----------------------------------------------------------------------------------------
# Kaufman et al. (MLSys'21) metrics
# ----------------------------------------------------------------------------------------
def tile_size_ape(preds: Sequence[Any], runtimes: Sequence[Any]) -> float:
    """Tile-Size APE of one program, Kaufman et al. eq. 2, in percent.

    ``100 * Σ_k |t^k_{c'_k} - min_c t^k_c| / Σ_k min_c t^k_c`` over the program's kernels k,
    where c'_k is the configuration with the lowest predicted score in kernel k (first one on
    ties) and t are true runtimes. This is the slowdown of the whole program, relative to the
    program with the best tile size everywhere, if the model picks each kernel's tile size.

    Args:
        preds: one (n_k,) score array per kernel.
        runtimes: one (n_k,) runtime array per kernel (> 0), same order.
    """
    if isinstance(preds, np.ndarray) and preds.ndim == 1:
        raise ValueError("preds: expected a sequence of per-kernel arrays, got one 1-D array")
    if len(preds) != len(runtimes):
        raise ValueError(
            f"preds and runtimes must list the same kernels, got {len(preds)} and "
            f"{len(runtimes)}"
        )
    if len(preds) == 0:
        raise ValueError("need at least one kernel")
    excess = 0.0
    best_total = 0.0
    for i, (p_k, r_k) in enumerate(zip(preds, runtimes)):
        try:
            p, r = _pair(p_k, r_k, min_len=1, positive_runtime=True)
        except ValueError as exc:
            raise ValueError(f"kernel {i}: {exc}") from None
        chosen = r[_predicted_best(p, 1)[0]]
        best = r.min()
        excess += abs(chosen - best)
        best_total += best
    return float(100.0 * excess / best_total)


def mape(pred_runtime: Any, runtime: Any, min_runtime: float | None = None) -> float:
    """Mean absolute percentage error, in percent (Kaufman et al. §5.2).

    ``100 / n * Σ_i |ŷ_i - y_i| / y_i``. Here the prediction is an absolute runtime (e.g.
    ``exp`` of an MSE-on-log-runtime model's score), not a ranking score. ``min_runtime``
    keeps only samples with ``y_i >= min_runtime`` (Kaufman et al. report kernels >= 5 µs).
    """
    p, r = _pair(pred_runtime, runtime, min_len=1, positive_runtime=True)
    if min_runtime is not None:
        keep = r >= float(min_runtime)
        if not keep.any():
            raise ValueError(f"no sample has runtime >= min_runtime={min_runtime}")
        p, r = p[keep], r[keep]
    return float(100.0 * np.mean(np.abs(p - r) / r))


# ----------------------------------------------------------------------------------------
# evaluation helpers and aggregation
# ----------------------------------------------------------------------------------------
def eval_subset_indices(runtime: Any, num: int = 1000) -> np.ndarray:
    """Configurations used for layout evaluation (TpuGraphs §3.3).

    Sort configurations by runtime and take the [0, m, 2m, ..., length-1]-th ones, ``num`` in
    all (evenly spaced ranks, always including the fastest and the slowest). Returns indices
    into ``runtime`` in ascending-runtime order; all indices when ``len(runtime) <= num``.
    """
    num = _check_k(num)
    r = _as_vector(runtime, "runtime")
    order = np.argsort(r, kind="stable")
    n = r.shape[0]
    if n <= num:
        return order
    ranks = np.unique(np.round(np.linspace(0, n - 1, num)).astype(np.int64))
    return order[ranks]


def normalized_tile_runtime(config_runtime: Any, normalizers: Any) -> np.ndarray:
    """Tile runtimes for evaluation: ``config_runtime / config_runtime_normalizers`` per config.

    Both (n,) arrays; normalisers must be > 0. Returns float64 (n,).
    """
    r = _as_vector(config_runtime, "config_runtime")
    z = _as_vector(normalizers, "config_runtime_normalizers")
    if r.shape != z.shape:
        raise ValueError(
            f"config_runtime and config_runtime_normalizers must have equal lengths, got "
            f"{r.shape[0]} and {z.shape[0]}"
        )
    if (z <= 0).any():
        idx = int(np.flatnonzero(z <= 0)[0])
        raise ValueError(f"config_runtime_normalizers: must be > 0, found {z[idx]} at index {idx}")
    return r / z


def _kind_of(kind: str) -> str:
    if not isinstance(kind, str):
        raise ValueError(f"kind must be a string, got {type(kind).__name__}")
    base = kind.split(":", 1)[0]
    if base not in ("layout", "tile"):
        raise ValueError(
            f"kind must be 'layout', 'tile' or a collection name like 'layout:xla:random', "
            f"got {kind!r}"
        )
    return base


def evaluate_graph(
    pred: Any, runtime: Any, kind: str, normalizers: Any | None = None
) -> dict[str, float]:
    """Every metric of one graph for its kind.

    Keys: ``n_configs``, ``kendall_tau``, ``opa``, ``top{K}_slowdown`` for K in
    :data:`LAYOUT_TOP_K` (layout) or :data:`TILE_TOP_K` (tile), and ``tile_score`` (tile).
    ``kind`` is ``"layout"``, ``"tile"`` or a collection name (``"tile:xla"``, ...).
    ``normalizers``: the tile graph's ``config_runtime_normalizers`` when ``runtime`` is the raw
    ``config_runtime`` (leave None if ``runtime`` is already normalised).
    """
    base = _kind_of(kind)
    if normalizers is not None:
        runtime = normalized_tile_runtime(runtime, normalizers)
    p, r = _pair(pred, runtime, min_len=2, positive_runtime=True)
    out: dict[str, float] = {"n_configs": int(p.shape[0])}
    c = _pair_counts(p, r)  # one pass for both τ and OPA
    denom = float(c["n0"] - c["t_pred"]) * float(c["n0"] - c["t_rt"])
    tau = (c["concordant"] - c["discordant"]) / math.sqrt(denom) if denom > 0 else math.nan
    out["kendall_tau"] = float(min(1.0, max(-1.0, tau))) if math.isfinite(tau) else math.nan
    ordered = c["n0"] - c["t_rt"]
    out["opa"] = c["concordant"] / ordered if ordered > 0 else math.nan
    for k in LAYOUT_TOP_K if base == "layout" else TILE_TOP_K:
        out[f"top{k}_slowdown"] = top_k_slowdown(p, r, k)
    if base == "tile":
        out["tile_score"] = tile_score(p, r)
    return out


def aggregate(per_graph: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Average per-graph metric dicts (TpuGraphs §5: averages across graphs / kernels).

    Every numeric key except ``n_configs`` is averaged over the graphs where it is finite
    (NaN marks an undefined value, e.g. τ for constant scores); ``counts[key]`` says how many
    graphs entered each mean. Also returns ``n_graphs`` and ``n_configs`` (the total).
    Non-numeric entries (e.g. a ``name``) are ignored.
    """
    if isinstance(per_graph, Mapping):
        raise ValueError("per_graph must be a list of per-graph dicts, got one dict")
    per_graph = list(per_graph)
    if not per_graph:
        raise ValueError("per_graph: empty, nothing to aggregate")
    keys: list[str] = []
    for i, d in enumerate(per_graph):
        if not isinstance(d, Mapping):
            raise ValueError(f"per_graph[{i}]: expected a dict, got {type(d).__name__}")
        for key, v in d.items():
            if key in keys or key == "n_configs":
                continue
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
                keys.append(key)
    out: dict[str, Any] = {"n_graphs": len(per_graph)}
    if any("n_configs" in d for d in per_graph):
        out["n_configs"] = int(sum(int(d.get("n_configs", 0)) for d in per_graph))
    counts: dict[str, int] = {}
    for key in keys:
        vals = np.array(
            [float(d[key]) for d in per_graph if key in d], dtype=np.float64
        )
        finite = vals[np.isfinite(vals)]
        counts[key] = int(finite.shape[0])
        out[key] = float(finite.mean()) if finite.size else math.nan
    out["counts"] = counts
    return out
