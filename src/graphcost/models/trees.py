"""Gradient-boosted trees that rank configurations from their fixed-width table
(`graphcost.models.config_table`), and their blend with a graph model.

    trees = TreeRanker.fit(train_graphs, valid_graphs, seed=0)   # LightGBM, rounds stop early on valid
    trees.score(prepared)                                        # (K,) lower = predicted faster
    trees.save(run_dir / "trees.txt"); TreeRanker.load(...)      # LightGBM's own text format (no pickle)

Target: the log runtime standardised within each graph, (log t - mean_g) / std_g, so graphs of
different speed weigh the same and only the order within a graph is learnt. Boosting rounds stop
early on the validation graphs; when they hold fewer than `FEW_VALID_ROWS` configurations (one
program's few held-back configurations), stopping on them stopped after a round or two (a real
TPU layout module, 8 validation configurations: the first round, validation τ −0.16), so the rounds
are chosen by cross-validation on the training rows instead (`cv_rounds`). At most
`max_rows_per_graph` configurations of a graph are used (a seeded sample), so TpuGraphs-size graphs
do not swamp the rest. The table ends with what the compiler did to each configuration (its compiled
columns, NaN for a graph without ``config_compiled_stats``); every training graph that has them
comes twice, once with them masked, so that the trees rank graphs with and without them (`_stack`).

One program (``program`` mode): when every training and validation graph is the same program
(same nodes, opcodes and configurable nodes: `program_signature`; e.g. `graphcost data
split-configs` of one graph, or a tuner's own measurements), nothing needs to transfer across
graphs, and the table is widened with every raw layout entry of every configurable node
(`raw_layouts`, C · 18 columns). This is what the trees need on data with no default
configuration (TpuGraphs layout collections, where "moved off the default" says little), and they
rank far better once a few hundred configurations are measured (the guide's "Cost models" page, "The
default recipe", item 3).
Trees fitted this way record the program's signature in trees.txt and refuse to score another
program (`ProgramMismatch`; the blend then falls back to the graph model and says so).

Blend (`Blend`, written to ``blend.json`` by `graphcost train`): with z(·) the scores of a graph's
configurations standardised to zero mean and unit variance,

    score = w · z(graph model) + p · z(prior) + (1 - w - p) · z(trees) + ε · z(graph model)

(w, p) on the grid {0, 0.1, ..., 1}², w + p ≤ 1, chosen on the validation graphs; ε = 1e-3.
The prior is model-free (layout only), one of `PRIORS`, also chosen on the validation graphs:

* ``count`` (`count_prior`): the number of layout slots a configuration moves off the compiler's
  default, the heuristic "fewer moved tensors = faster", which a model trained on a dozen
  configurations of one program does not beat (within one program, 1% of its configurations); with
  more data the validation graphs give it p = 0;
* ``copies`` (`copies_prior`, graphs that carry ``config_compiled_stats``): the bytes of the
  ``copy`` and ``transpose`` instructions the compiler put into the configuration's optimized
  module. It ranks programs of families never trained on better than the count and than the
  table models (the guide's "Cost models" page, "What the compiler did"). The ε term only breaks ties: trees are piecewise
constant and give many configurations the same value (all of them, on a graph unlike the training
data), and among those the graph model decides.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence, cast

import numpy as np

from graphcost.errors import GraphcostError
from graphcost.models.config_table import (
    COMPILED_SLICE,
    LAYOUT_COLUMNS,
    MOVED_COLUMNS,
    READABLE_WIDTHS,
    TILE_COLUMNS,
    config_table,
    decoded_layouts,
)
from graphcost.models.lightgbm_text import check_model_text

TREES_FILE = "trees.txt"
BLEND_FILE = "blend.json"
WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
TIE_BREAK = 1e-3  # ε: the graph model orders configurations the trees score the same


GRID = tuple((w, p) for w in WEIGHTS for p in WEIGHTS if w + p <= 1.0 + 1e-9)  # (graph, prior) weights
PRIORS = ("count", "copies")


def blended(weight: float, graph_scores: np.ndarray, tree_scores: np.ndarray, prior: float = 0.0,
            prior_scores: np.ndarray | None = None) -> np.ndarray:
    """w · z(graph) + p · z(count) + (1 - w - p) · z(trees) + ε · z(graph); `prior_scores` are needed when p > 0."""
    out = (weight + TIE_BREAK) * standardise(graph_scores) + (1.0 - weight - prior) * standardise(tree_scores)
    if not prior:
        return out
    if prior_scores is None:
        raise ValueError(f"a blend with count weight {prior} needs the counts (count_prior) of the configurations")
    return out + prior * standardise(prior_scores)


def count_prior(prepared, table: np.ndarray | None = None) -> np.ndarray:
    """(K,) float64 layout slots each configuration moves off the default layout (Σ of the table's
    `moved` columns); fewer = predicted faster. Tile graphs: zeros (no prior; z() of a constant is 0)."""
    table = config_table(prepared) if table is None else table
    if prepared.kind != "layout":
        return np.zeros(len(table), dtype=np.float64)
    return np.asarray(table[:, :MOVED_COLUMNS], dtype=np.float64).sum(1)


def copies_prior(prepared) -> np.ndarray | None:
    """(K,) float64 bytes of the copies and transposes in each configuration's optimized module
    (`graphcost.frontend.hlo.compiled_stats` columns copy_bytes + transpose_bytes); fewer = predicted
    faster. None for a tile graph or a graph without ``config_compiled_stats``."""
    if prepared.kind != "layout" or getattr(prepared, "compiled", None) is None:
        return None
    return np.asarray(prepared.compiled[:, 0] + prepared.compiled[:, 3], dtype=np.float64)


_warned_fallback: list[bool] = []


def prior_scores(kind: str, prepared, table: np.ndarray | None = None) -> np.ndarray:
    """(K,) the blend's prior `kind` (one of `PRIORS`) for one graph. A ``copies`` prior of a graph
    without compiled statistics (a TpuGraphs file, a collection made before them) falls back to the
    count, said once per process."""
    if kind == "copies":
        copies = copies_prior(prepared)
        if copies is not None:
            return copies
        if not _warned_fallback:
            import logging

            _warned_fallback.append(True)
            logging.getLogger(__name__).warning(
                "the blend's prior is the bytes the compiler copies, but this graph has no config_compiled_stats "
                "(add them with `graphcost collect --action annotate`): using the count of moved layouts instead")
    return count_prior(prepared, table)


class TreeError(GraphcostError, ValueError):
    """A trees.txt / blend.json that cannot be used (the message names the file and the field)."""


class ProgramMismatch(GraphcostError, ValueError):
    """Trees fitted on one program's raw layouts asked to score another program."""


def program_signature(prepared) -> str | None:
    """16 hex digits identifying a layout graph's program (node count, opcodes, edges, configurable
    nodes); None for tile graphs (their table has no per-program columns)."""
    import hashlib

    if prepared.kind != "layout":
        return None
    h = hashlib.sha1()
    for a in (np.asarray(prepared.node_opcode, np.int64), np.asarray(prepared.config_node_index, np.int64),
              np.asarray(prepared.edge_index, np.int64)):
        h.update(np.ascontiguousarray(a).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]


def raw_layouts(prepared, rows: np.ndarray | None = None) -> np.ndarray:
    """(K', C * 18) float32 every layout entry (minor_to_major positions, -1 = none) of the
    configurations `rows` (default: all) of a layout PreparedGraph."""
    rows = np.arange(prepared.num_configs) if rows is None else np.asarray(rows, dtype=np.int64)
    out = np.empty((len(rows), len(prepared.config_node_index) * 18), dtype=np.float32)
    for at, cfg in decoded_layouts(prepared, rows):
        out[at] = cfg.reshape(len(cfg), -1).numpy()
    return out


def one_program(graphs: Sequence) -> str | None:
    """The shared `program_signature` of `graphs`, or None when they are not all one layout program."""
    sigs = {program_signature(g) for g in graphs}
    return sigs.pop() if len(sigs) == 1 and None not in sigs else None


def _standardised_log(runtime: np.ndarray) -> np.ndarray:
    y = np.log(np.maximum(np.asarray(runtime, dtype=np.float64), 1e-300))
    return (y - y.mean()) / max(float(y.std()), 1e-9)


def standardise(scores: np.ndarray) -> np.ndarray:
    """z(·): scores standardised to zero mean and unit variance (order preserving; constant -> zeros).
    The one definition: `train.inference` averages ensemble members with it too."""
    scores = np.asarray(scores, dtype=np.float64)
    std = scores.std()
    return (scores - scores.mean()) / std if std > 0 else scores - scores.mean()


def _features(g, rows: np.ndarray | None, program: str | None, table: np.ndarray | None = None,
              width: int | None = None) -> np.ndarray:
    """The trees' input: the configuration table (its first `width` columns: trees fitted before the
    data-share or compiled columns existed read fewer, `READABLE_WIDTHS`), widened by the raw layouts in
    program mode."""
    table = config_table(g, rows) if table is None else table
    table = table if width is None else table[:, :width]
    return np.hstack([table, raw_layouts(g, rows)]) if program else table


def _stack(graphs: Sequence, max_rows: int, seed: int, program: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every graph's features and standardised log runtimes, stacked. A graph with compiled
    statistics comes twice: as it is, and with its compiled columns missing (NaN), so that the
    trees also learn to rank a graph that has none (a TpuGraphs file, a program scored without
    compiling it)."""
    xs, ys = [], []
    for i, g in enumerate(graphs):
        if g.num_configs < 2:
            continue
        rng = np.random.default_rng([seed, i, 0x7EE5])
        rows = np.sort(rng.choice(g.num_configs, max_rows, replace=False)) if g.num_configs > max_rows else None
        x = _features(g, rows, program)
        y = _standardised_log(g.runtime if rows is None else np.asarray(g.runtime)[rows])
        xs.append(x)
        ys.append(y)
        if getattr(g, "compiled", None) is not None:
            masked = x.copy()
            masked[:, COMPILED_SLICE[g.kind]] = np.nan
            xs.append(masked)
            ys.append(y)
    if not xs:
        raise ValueError("no graph with two or more configurations to fit the trees on")
    return np.vstack(xs), np.concatenate(ys)


FEW_VALID_ROWS = 100  # below this many validation rows the rounds are chosen by cross-validation on train
CV_FOLDS = 5
MIN_ROUNDS = 20


def cv_rounds(params: dict, x: np.ndarray, y: np.ndarray, seed: int) -> int:
    """Boosting rounds chosen by `CV_FOLDS`-fold cross-validation on the training rows (early stopping
    on the folds' mean loss), at least `MIN_ROUNDS`; 300 when there are too few rows to fold."""
    import lightgbm as lgb

    if len(y) < 2 * CV_FOLDS:
        return 300
    res = lgb.cv({**params, "seed": seed}, lgb.Dataset(x, y), num_boost_round=1000, nfold=CV_FOLDS, stratified=False,
                 shuffle=True, seed=seed, callbacks=[lgb.early_stopping(50, verbose=False)])
    means = cast(list, res[next(k for k in res if k.endswith("-mean"))])  # per round kept by the stop
    return max(MIN_ROUNDS, len(means))


class TreeRanker:
    """LightGBM regression on `config_table` features (+ raw layouts in program mode); lower
    predicted value = faster. `program`: the signature of the one program it was fitted on, or None."""

    def __init__(self, booster, kind: str, program: str | None = None):
        self.booster, self.kind, self.program = booster, kind, program

    @classmethod
    def fit(cls, train: Sequence, valid: Sequence = (), seed: int = 0, max_rows_per_graph: int = 4096,
            threads: int = 0) -> "TreeRanker":
        import lightgbm as lgb

        kinds = {g.kind for g in train}
        if len(kinds) != 1:
            raise ValueError(f"trees need graphs of one kind, got {sorted(kinds)}")
        valid = [g for g in valid if g.num_configs >= 2]
        program = one_program([*train, *valid])
        x, y = _stack(train, max_rows_per_graph, seed, program)
        params = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 31,
                  "min_data_in_leaf": max(2, min(20, len(y) // 20)), "feature_fraction": 0.8,
                  "bagging_fraction": 0.8, "bagging_freq": 1, "seed": seed, "verbose": -1,
                  "num_threads": threads, "deterministic": True, "force_row_wise": True}
        xv, yv = _stack(valid, max_rows_per_graph, seed, program) if valid else (None, None)
        if yv is not None and len(yv) >= FEW_VALID_ROWS:
            booster = lgb.train(params, lgb.Dataset(x, y), num_boost_round=1000, valid_sets=[lgb.Dataset(xv, yv)],
                                callbacks=[lgb.early_stopping(50, verbose=False)])
        else:  # too few validation rows to stop on (module docstring): rounds from cross-validation on train
            booster = lgb.train(params, lgb.Dataset(x, y), num_boost_round=cv_rounds(params, x, y, seed))
        return cls(booster, kinds.pop(), program)

    def score(self, prepared, table: np.ndarray | None = None) -> np.ndarray:
        """(K,) float64 predicted standardised log runtime of every configuration of `prepared`
        (`table`: its `config_table`, if already made).

        Raises:
            ProgramMismatch: program-mode trees and a graph of another program."""
        if prepared.kind != self.kind:
            raise ValueError(f"{prepared.name}: a {prepared.kind} graph cannot be scored by {self.kind} trees")
        if self.program and program_signature(prepared) != self.program:
            raise ProgramMismatch(f"{prepared.name}: the trees were fitted on the raw layouts of one other program "
                                  f"(signature {self.program}) and cannot score this one")
        best = self.booster.best_iteration or None
        raw = len(prepared.config_node_index) * 18 if self.program else 0
        width = self.booster.num_feature() - raw  # the table columns these trees were fitted on
        if width not in READABLE_WIDTHS[self.kind]:
            raise TreeError(f"{prepared.name}: these {self.kind} trees read {width} table columns; this graphcost "
                            f"writes {LAYOUT_COLUMNS if self.kind == 'layout' else TILE_COLUMNS}")
        x = _features(prepared, None, self.program, table, width)
        return np.asarray(self.booster.predict(x, num_iteration=best), dtype=np.float64)

    def save(self, path: str | Path) -> Path:
        from graphcost.atomic import atomic_write_text

        text = self.booster.model_to_string(num_iteration=self.booster.best_iteration or None)
        program = f" program={self.program}" if self.program else ""
        return atomic_write_text(path, f"# graphcost trees kind={self.kind}{program}\n" + text)

    @classmethod
    def load(cls, path: str | Path) -> "TreeRanker":
        import lightgbm as lgb

        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TreeError(f"{path}: cannot read the trees ({exc})") from None
        first, _, body = text.partition("\n")
        kind, _, program = first.removeprefix("# graphcost trees kind=").strip().partition(" program=")
        if (not first.startswith("# graphcost trees kind=") or kind not in ("layout", "tile")
                or (program and not (len(program) == 16 and all(ch in "0123456789abcdef" for ch in program)))):
            raise TreeError(f"{path}: first line must be '# graphcost trees kind=layout|tile [program=<16 hex>]', "
                            f"got {first[:60]!r}")
        try:  # checked first: LightGBM's parser dies with a segfault on a truncated or edited model
            check_model_text(body, path)
        except ValueError as exc:
            raise TreeError(str(exc)) from None
        try:
            booster = lgb.Booster(model_str=body)
        except Exception as exc:  # noqa: BLE001 - LightGBM raises its own error type for a damaged model
            raise TreeError(f"{path}: not a LightGBM model ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        return cls(booster, kind, program or None)


@dataclass
class Blend:
    """w · z(graph model) + p · z(count) + (1 - w - p) · z(trees), and what it scored on the
    validation graphs."""

    weight: float  # w, on the graph model
    metric: str
    valid: dict  # {"blend": ..., "graph model": ..., "trees": ..., "count": ...} mean validation metric
    prior: float = 0.0  # p, on the prior (blend.json files written before it existed: 0)
    prior_kind: str = "count"  # which prior, one of PRIORS (blend.json files written before it existed: count)

    def combine(self, graph_scores: np.ndarray, tree_scores: np.ndarray,
                prior_scores: np.ndarray | None = None) -> np.ndarray:
        return blended(self.weight, graph_scores, tree_scores, self.prior, prior_scores)

    def score(self, graph_scores: np.ndarray, trees: "TreeRanker", prepared) -> np.ndarray:
        """(K,) blended scores of `prepared` given its graph-model scores (one configuration table
        for the trees and the count)."""
        import logging

        table = config_table(prepared)
        prior = prior_scores(self.prior_kind, prepared, table) if self.prior else None
        try:
            tree_scores = trees.score(prepared, table)
        except ProgramMismatch as exc:
            logging.getLogger(__name__).warning(f"{exc}: ranking with the graph model alone")
            return np.asarray(graph_scores, dtype=np.float64)
        return self.combine(graph_scores, tree_scores, prior)

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
        p = data.get("prior", 0.0)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or not 0 <= p <= 1 - w + 1e-9:
            raise TreeError(f"{path}: field 'prior' must be a number in [0, 1 - weight], got {p!r}")
        kind = data.get("prior_kind", "count")
        if kind not in PRIORS:
            raise TreeError(f"{path}: field 'prior_kind' must be one of {', '.join(PRIORS)}, got {kind!r}")
        return cls(float(w), str(data.get("metric", "kendall_tau")), dict(data.get("valid") or {}), float(p), kind)


def mean_metric(scores: Sequence[np.ndarray], graphs: Sequence, metric: str) -> float:
    """Mean `metric` of each graph's (K,) `scores` against its runtimes, over the graphs with >= 2
    configurations and a finite value; -inf if there is none."""
    from graphcost import metrics

    vals = [metrics.evaluate_graph(s, np.asarray(g.runtime, dtype=np.float64), g.kind).get(metric, np.nan)
            for s, g in zip(scores, graphs) if g.num_configs >= 2]
    vals = [v for v in vals if v is not None and np.isfinite(v)]
    return float(np.mean(vals)) if vals else -math.inf


def choose_blend(graph_scores: Sequence[np.ndarray], tree_scores: Sequence[np.ndarray], graphs: Sequence,
                 metric: str, prior_scores: Sequence[np.ndarray] | None = None, prior_kind: str = "count") -> Blend:
    """The weights (w, p) in GRID with the best mean `metric` over the validation `graphs`; ties go
    to more of the graph model, then to less of the prior (`prior_kind`'s scores, `prior_scores`).
    Without `prior_scores`, p = 0."""
    priors: list = list(prior_scores) if prior_scores is not None else [None] * len(graphs)
    grid = GRID if prior_scores is not None else tuple((w, 0.0) for w in WEIGHTS)
    results = {(w, p): mean_metric([blended(w, a, b, p, c) for a, b, c in zip(graph_scores, tree_scores, priors)],
                                   graphs, metric)
               for w, p in grid}
    best = max(grid, key=lambda wp: (results[wp], wp[0], -wp[1]))
    valid = {"blend": results[best], "graph model": results[(1.0, 0.0)], "trees": results[(0.0, 0.0)]}
    if prior_scores is not None:
        valid[prior_kind] = results[(0.0, 1.0)]
    return Blend(weight=best[0], metric=metric, valid=valid, prior=best[1], prior_kind=prior_kind)
