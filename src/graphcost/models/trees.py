"""Gradient-boosted trees that rank configurations from their fixed-width table
(`graphcost.models.config_table`), and their blend with a graph model.

    trees = TreeRanker.fit(train_graphs, valid_graphs, seed=0)   # LightGBM, rounds stop early on valid
    trees.score(prepared)                                        # (K,) lower = predicted faster
    trees.save(run_dir / "trees.txt"); TreeRanker.load(...)      # LightGBM's own text format (no pickle)

Target: the log runtime standardised within each graph, (log t - mean_g) / std_g, so graphs of
different speed weigh the same and only the order within a graph is learnt. At most
`max_rows_per_graph` configurations of a graph are used (a seeded sample), so TpuGraphs-size graphs
do not swamp the rest.

Blend (`Blend`, written to ``blend.json`` by `graphcost train`): with z(·) the scores of a graph's
configurations standardised to zero mean and unit variance,

    score = w · z(graph model) + (1 - w) · z(trees) + ε · z(graph model),   w ∈ {0, 0.1, ..., 1} chosen on the
                                                                            validation graphs, ε = 1e-3

The ε term only breaks ties: trees are piecewise constant and give many configurations the same
value (all of them, on a graph unlike the training data), and among those the graph model decides.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from graphcost.models.config_table import config_table

TREES_FILE = "trees.txt"
BLEND_FILE = "blend.json"
WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
TIE_BREAK = 1e-3  # ε: the graph model orders configurations the trees score the same


def blended(weight: float, graph_scores: np.ndarray, tree_scores: np.ndarray) -> np.ndarray:
    """w · z(graph) + (1 - w) · z(trees) + ε · z(graph)."""
    g = standardise(graph_scores)
    return (weight + TIE_BREAK) * g + (1.0 - weight) * standardise(tree_scores)


class TreeError(ValueError):
    """A trees.txt / blend.json that cannot be used (the message names the file and the field)."""


def _standardised_log(runtime: np.ndarray) -> np.ndarray:
    y = np.log(np.maximum(np.asarray(runtime, dtype=np.float64), 1e-300))
    return (y - y.mean()) / max(float(y.std()), 1e-9)


def standardise(scores: np.ndarray) -> np.ndarray:
    """z(·): scores standardised to zero mean and unit variance (order preserving; constant -> zeros).
    The one definition: `train.crossval` averages ensemble members with it too."""
    scores = np.asarray(scores, dtype=np.float64)
    std = scores.std()
    return (scores - scores.mean()) / std if std > 0 else scores - scores.mean()


def _stack(graphs: Sequence, max_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for i, g in enumerate(graphs):
        if g.num_configs < 2:
            continue
        rng = np.random.default_rng([seed, i, 0x7EE5])
        rows = np.sort(rng.choice(g.num_configs, max_rows, replace=False)) if g.num_configs > max_rows else None
        xs.append(config_table(g, rows))
        ys.append(_standardised_log(g.runtime if rows is None else np.asarray(g.runtime)[rows]))
    if not xs:
        raise ValueError("no graph with two or more configurations to fit the trees on")
    return np.vstack(xs), np.concatenate(ys)


class TreeRanker:
    """LightGBM regression on `config_table` features; lower predicted value = faster."""

    def __init__(self, booster, kind: str):
        self.booster, self.kind = booster, kind

    @classmethod
    def fit(cls, train: Sequence, valid: Sequence = (), seed: int = 0, max_rows_per_graph: int = 4096,
            threads: int = 0) -> "TreeRanker":
        import lightgbm as lgb

        kinds = {g.kind for g in train}
        if len(kinds) != 1:
            raise ValueError(f"trees need graphs of one kind, got {sorted(kinds)}")
        x, y = _stack(train, max_rows_per_graph, seed)
        params = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 31,
                  "min_data_in_leaf": max(2, min(20, len(y) // 20)), "feature_fraction": 0.8,
                  "bagging_fraction": 0.8, "bagging_freq": 1, "seed": seed, "verbose": -1,
                  "num_threads": threads, "deterministic": True, "force_row_wise": True}
        valid = [g for g in valid if g.num_configs >= 2]
        if valid:
            xv, yv = _stack(valid, max_rows_per_graph, seed)
            booster = lgb.train(params, lgb.Dataset(x, y), num_boost_round=1000, valid_sets=[lgb.Dataset(xv, yv)],
                                callbacks=[lgb.early_stopping(50, verbose=False)])
        else:
            booster = lgb.train(params, lgb.Dataset(x, y), num_boost_round=300)
        return cls(booster, kinds.pop())

    def score(self, prepared) -> np.ndarray:
        """(K,) float64 predicted standardised log runtime of every configuration of `prepared`."""
        if prepared.kind != self.kind:
            raise ValueError(f"{prepared.name}: a {prepared.kind} graph cannot be scored by {self.kind} trees")
        best = self.booster.best_iteration or None
        return np.asarray(self.booster.predict(config_table(prepared), num_iteration=best), dtype=np.float64)

    def save(self, path: str | Path) -> Path:
        from graphcost.atomic import atomic_write_text

        text = self.booster.model_to_string(num_iteration=self.booster.best_iteration or None)
        return atomic_write_text(path, f"# graphcost trees kind={self.kind}\n" + text)

    @classmethod
    def load(cls, path: str | Path) -> "TreeRanker":
        import lightgbm as lgb

        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TreeError(f"{path}: cannot read the trees ({exc})") from None
        first, _, body = text.partition("\n")
        kind = first.removeprefix("# graphcost trees kind=").strip()
        if not first.startswith("# graphcost trees kind=") or kind not in ("layout", "tile"):
            raise TreeError(f"{path}: first line must be '# graphcost trees kind=layout|tile', got {first[:60]!r}")
        try:
            booster = lgb.Booster(model_str=body)
        except Exception as exc:  # noqa: BLE001 - LightGBM raises its own error type for a damaged model
            raise TreeError(f"{path}: not a LightGBM model ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        return cls(booster, kind)


@dataclass
class Blend:
    """w · z(graph model) + (1 - w) · z(trees), and what it scored on the validation graphs."""

    weight: float  # w, on the graph model
    metric: str
    valid: dict  # {"blend": ..., "graph model": ..., "trees": ...} mean validation metric

    def combine(self, graph_scores: np.ndarray, tree_scores: np.ndarray) -> np.ndarray:
        return blended(self.weight, graph_scores, tree_scores)

    def save(self, path: str | Path) -> Path:
        from graphcost.atomic import atomic_write_json

        return atomic_write_json({**asdict(self), "trees": TREES_FILE}, path)

    @classmethod
    def load(cls, path: str | Path) -> "Blend":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TreeError(f"{path}: not a readable JSON file ({exc})") from None
        w = data.get("weight") if isinstance(data, dict) else None
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or not 0 <= w <= 1:
            raise TreeError(f"{path}: field 'weight' must be a number in [0, 1], got {w!r}")
        return cls(float(w), str(data.get("metric", "kendall_tau")), dict(data.get("valid") or {}))


def choose_blend(graph_scores: Sequence[np.ndarray], tree_scores: Sequence[np.ndarray], graphs: Sequence,
                 metric: str) -> Blend:
    """The weight w in WEIGHTS with the best mean `metric` over the validation `graphs` (ties: the
    larger w, i.e. more of the graph model)."""
    from graphcost import metrics

    def mean_metric(scores: list[np.ndarray]) -> float:
        vals = [metrics.evaluate_graph(s, np.asarray(g.runtime, dtype=np.float64), g.kind).get(metric, np.nan)
                for s, g in zip(scores, graphs) if g.num_configs >= 2]
        vals = [v for v in vals if v is not None and np.isfinite(v)]
        return float(np.mean(vals)) if vals else -math.inf

    results = {w: mean_metric([blended(w, a, b) for a, b in zip(graph_scores, tree_scores)]) for w in WEIGHTS}
    best = max(WEIGHTS, key=lambda w: (results[w], w))
    return Blend(weight=best, metric=metric,
                 valid={"blend": results[best], "graph model": results[1.0], "trees": results[0.0]})
