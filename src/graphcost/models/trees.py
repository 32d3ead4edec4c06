"""Gradient-boosted trees that rank configurations from their fixed-width table
(`graphcost.models.config_table`).

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

A user's own small measurement set (one program, at most `FEW_PROGRAM_VALID` validation configurations:
`_fit_one_program`). On a real TPU layout graph from outside this repository (26 configurable nodes, no default
configuration) the trees above scored 0.35-0.60 on 30-150 validation configurations where five lines of
LightGBM on the flattened per-node layouts (num_leaves 15, min_data_in_leaf 3, learning rate 0.05, 200 rounds)
reached 0.83 on test. The suspects (the raw-layout columns, the standardised target, bagging and feature
fraction, a ``min_data_in_leaf`` growing to 15, early stopping or cross-validated rounds on a handful of rows)
were each measured here, one at a time and together, on a synthetic graph of that shape
(`graphcost.data.synth.one_program`) and on `cpu_layout_1k`, 3 splits of 30 / 100 / 300 training
configurations: none moved Kendall τ by more than about 0.02-0.04, and the trees before matched the plain
LightGBM (synthetic 0.25 / 0.59 / 0.75 against 0.24 / 0.60 / 0.73) or beat it (`cpu_layout_1k` 0.73 / 0.82 /
0.87 against 0.65 / 0.71 / 0.82); the gap on the real graph was not reproduced. What lifted the trees on both is
the rows the user measured and the trees did not use: the validation configurations (synthetic 0.53 / 0.65 /
0.77, `cpu_layout_1k` 0.78 / 0.85 / 0.90). So, for one program:

* the validation configurations are training data too: every validation configuration is scored by
  trees that never saw it (`PROGRAM_FOLDS` folds of the validation rows, each fitted on every training row
  and the other folds' validation rows), and those held-out scores are what the blend is chosen on
  (`TreeRanker.held_out_scores`); the trees kept are then fitted on every row. At 30 training
  configurations this doubles what the trees learn from;
* the plain settings (`PROGRAM_PARAMS`, `PROGRAM_ROUNDS`): no early stopping, no bagging, no feature
  fraction, leaves of three rows; no round count is chosen on a few rows, and none of the settings can be
  what falls behind the plain LightGBM;
* the table's columns stay beside the raw layouts: on `cpu_layout_1k` they are worth +0.08-0.11 τ (the
  moved counts say much where half the configurations sit near the compiler's default), and on a graph with
  no default configuration they cost nothing measurable.

Measured (`benchmarks/bench_few_shot.py`; BENCHMARKS.md, "Few-shot: a user's own small measurement set").

The blend of the trees with a graph model and a prior is `graphcost.inference.blend`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, cast

import numpy as np

from graphcost.errors import GraphcostError
from graphcost.models.config_table import (
    COMPILED_SLICE,
    LAYOUT_COLUMNS,
    READABLE_WIDTHS,
    TILE_COLUMNS,
    config_table,
    decoded_layouts,
)
from graphcost.models.lightgbm_text import check_model_text

TREES_FILE = "trees.txt"


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
# one program's own small measurement set (module docstring): the plain settings, on train + valid
FEW_PROGRAM_VALID = 2000  # at most this many validation configurations of one program: `_fit_one_program`
PROGRAM_PARAMS = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 3}
PROGRAM_ROUNDS = 200
PROGRAM_FOLDS = 5  # folds of the validation configurations, each scored by trees that never saw it


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
        self._held_out: dict[int, np.ndarray] = {}  # id(valid graph) -> scores by trees that never saw it

    def held_out_scores(self, prepared, table: np.ndarray | None = None) -> np.ndarray:
        """(K,) scores of a validation graph this ranker was fitted with, each configuration scored by
        trees that did not see it (`_fit_one_program`); `score` for any other graph."""
        held = self._held_out.get(id(prepared))
        return held.copy() if held is not None else self.score(prepared, table)

    @classmethod
    def fit(cls, train: Sequence, valid: Sequence = (), seed: int = 0, max_rows_per_graph: int = 4096,
            threads: int = 0) -> "TreeRanker":
        import lightgbm as lgb

        kinds = {g.kind for g in train}
        if len(kinds) != 1:
            raise ValueError(f"trees need graphs of one kind, got {sorted(kinds)}")
        valid = [g for g in valid if g.num_configs >= 2]
        program = one_program([*train, *valid])
        if program is not None and valid and sum(g.num_configs for g in valid) <= FEW_PROGRAM_VALID:
            return cls._fit_one_program(train, valid, seed, max_rows_per_graph, threads, kinds.pop(), program)
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

    @classmethod
    def _fit_one_program(cls, train: Sequence, valid: Sequence, seed: int, max_rows: int, threads: int, kind: str,
                         program: str) -> "TreeRanker":
        """One program's own small measurement set (module docstring): `PROGRAM_PARAMS` for `PROGRAM_ROUNDS`
        rounds on every training and validation configuration; each validation configuration also scored by
        the trees of the fold that held it out (`held_out_scores`), for the blend to be chosen on."""
        import lightgbm as lgb

        params = {**PROGRAM_PARAMS, "seed": seed, "verbose": -1, "num_threads": threads, "deterministic": True,
                  "force_row_wise": True}
        x, y = _stack(train, max_rows, seed, program)
        xv = [_features(g, None, program) for g in valid]  # every configuration: each one is scored
        yv = [_standardised_log(g.runtime) for g in valid]
        rng = np.random.default_rng([seed, 0xF01D])
        folds = [rng.permutation(len(v)) % PROGRAM_FOLDS for v in yv]  # each validation row's fold

        def rows(mask: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
            """The training rows and the validation rows `mask` picks; as `_stack`, a graph with compiled
            statistics also comes with them masked."""
            xs, ys = [x], [y]
            for g, xi, yi, m in zip(valid, xv, yv, mask):
                xs.append(xi[m])
                ys.append(yi[m])
                if getattr(g, "compiled", None) is not None:
                    masked = xi[m].copy()
                    masked[:, COMPILED_SLICE[kind]] = np.nan
                    xs.append(masked)
                    ys.append(yi[m])
            return np.vstack(xs), np.concatenate(ys)

        held = [np.empty(len(v), dtype=np.float64) for v in yv]
        for f in range(PROGRAM_FOLDS):
            if not any((fi == f).any() for fi in folds):
                continue
            xf, yf = rows([fi != f for fi in folds])
            booster = lgb.train(params, lgb.Dataset(xf, yf), num_boost_round=PROGRAM_ROUNDS)
            for h, xi, fi in zip(held, xv, folds):
                if (fi == f).any():
                    h[fi == f] = booster.predict(xi[fi == f])
        x_all, y_all = rows([np.ones(len(v), dtype=bool) for v in yv])
        ranker = cls(lgb.train(params, lgb.Dataset(x_all, y_all), num_boost_round=PROGRAM_ROUNDS), kind, program)
        ranker._held_out = {id(g): h for g, h in zip(valid, held)}
        return ranker

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
        from graphcost.guards.atomic import atomic_write_text

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
