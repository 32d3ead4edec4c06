"""The blend of a graph model with the tree ranker (`graphcost.models.trees`) and a model-free prior: its
scores, its weights chosen on the validation graphs, and the files that hold it. `graphcost train` writes
it into the run directory (``trees.txt``, ``blend.json``) and every command that loads the run
(`graphcost.inference.ensemble.EnsemblePredictor`) scores with it.

Why: on real data gradient-boosted trees on the configuration table and the graph model make
different errors, and with a dozen training configurations counting moved layouts beats both; the
weights (w on the graph model, p on the count) are picked on the validation graphs, so a dataset
where the graph model is better on its own gets w = 1, one where the trees are gets w = 0 and p = 0
(documentation: Benchmarks, real CPU data). Where every validation graph carries what the compiler did
(``config_compiled_stats``), the prior may be the bytes the compiler copies instead of the count
(`PRIORS`): whichever ranks better on its own over the training and validation
graphs together (`PRIOR_RULE`); the weights are then chosen on the validation graphs.

Blend (`Blend`, written to ``blend.json`` by `graphcost train`): with z(·) the scores of a graph's
configurations standardised to zero mean and unit variance,

    score = w · z(graph model) + p · z(prior) + (1 - w - p) · z(trees) + ε · z(graph model)

(w, p) on the grid {0, 0.1, ..., 1}², w + p ≤ 1, chosen on the validation graphs; ε = 1e-3. On one
program's few validation configurations (`FEW_VALID_CONFIGS`) the best of 66 weightings on 30-150
configurations is partly noise, so the choice takes, of the weightings the validation data cannot tell from
the best (one standard error of the difference, paired bootstrap), the one nearest the components in
proportion to the square of each one's own validation τ (`within_noise`, `skill_anchor`); the trees'
validation scores there are held out (each configuration scored by trees that did not see it,
`graphcost.models.trees.TreeRanker.held_out_scores`).
The prior is model-free (layout only), one of `PRIORS`, also chosen on the validation graphs:

* ``count`` (`count_prior`): the number of layout slots a configuration moves off the compiler's
  default, the heuristic "fewer moved tensors = faster", which a model trained on a dozen
  configurations of one program does not beat (within one program, 1% of its configurations); with
  more data the validation graphs give it p = 0;
* ``copies`` (`copies_prior`, graphs that carry ``config_compiled_stats``): the bytes of the
  ``copy`` and ``transpose`` instructions the compiler put into the configuration's optimized
  module. It ranks programs of families never trained on better than the count and than the
  table models (the guide's "Cost models" page, "What the compiler did").

The ε term only breaks ties: trees are piecewise constant and give many configurations the same value (all
of them, on a graph unlike the training data), and among those the graph model decides.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from graphcost.models.config_table import MOVED_COLUMNS, config_table
from graphcost.models.trees import TREES_FILE, ProgramMismatch, TreeError, TreeRanker, standardise
from graphcost.runs.checkpoint import CheckpointError

if TYPE_CHECKING:
    from graphcost.data.transforms.prepared import PreparedGraph

log = logging.getLogger(__name__)

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


def count_prior(prepared: PreparedGraph, table: np.ndarray | None = None) -> np.ndarray:
    """(K,) float64 layout slots each configuration moves off the default layout (Σ of the table's
    `moved` columns); fewer = predicted faster. Tile graphs: zeros (no prior; z() of a constant is 0)."""
    table = config_table(prepared) if table is None else table
    if prepared.kind != "layout":
        return np.zeros(len(table), dtype=np.float64)
    return np.asarray(table[:, :MOVED_COLUMNS], dtype=np.float64).sum(1)


def copies_prior(prepared: PreparedGraph) -> np.ndarray | None:
    """(K,) float64 bytes of the copies and transposes in each configuration's optimized module
    (`graphcost.frontend.hlo.compiled_stats` columns copy_bytes + transpose_bytes); fewer = predicted
    faster. None for a tile graph or a graph without ``config_compiled_stats``."""
    compiled = getattr(prepared, "compiled", None)  # (K, 7) or None; a benchmark's record may lack the field
    if prepared.kind != "layout" or compiled is None:
        return None
    return np.asarray(compiled[:, 0] + compiled[:, 3], dtype=np.float64)


_warned_fallback: list[bool] = []


def prior_scores(kind: str, prepared: PreparedGraph, table: np.ndarray | None = None) -> np.ndarray:
    """(K,) the blend's prior `kind` (one of `PRIORS`) for one graph. A ``copies`` prior of a graph
    without compiled statistics (a TpuGraphs file, a collection made before them) falls back to the
    count, said once per process."""
    if kind == "copies":
        copies = copies_prior(prepared)
        if copies is not None:
            return copies
        if not _warned_fallback:
            _warned_fallback.append(True)
            log.warning(
                "the blend's prior is the bytes the compiler copies, but this graph has no config_compiled_stats "
                "(add them with `graphcost collect --action annotate`): using the count of moved layouts instead")
    return count_prior(prepared, table)


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

    def score(self, graph_scores: np.ndarray, trees: TreeRanker, prepared: PreparedGraph) -> np.ndarray:
        """(K,) blended scores of `prepared` given its graph-model scores (one configuration table
        for the trees and the count)."""
        table = config_table(prepared)
        prior = prior_scores(self.prior_kind, prepared, table) if self.prior else None
        try:
            tree_scores = trees.score(prepared, table)
        except ProgramMismatch as exc:
            log.warning(f"{exc}: ranking with the graph model alone")
            return np.asarray(graph_scores, dtype=np.float64)
        return self.combine(graph_scores, tree_scores, prior)

    def save(self, path: str | Path) -> Path:
        from graphcost.guards.atomic import atomic_write_json

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


FEW_VALID_CONFIGS = 500
"""Validation graphs that are all one layout program with at most this many configurations in all (a user's
own small measurement set): the weights are chosen by the one-standard-error rule (`within_noise`), not by the
best validation figure alone. Many programs (the official split, leave-family-out) or flag graphs: as before."""


def small_measurement_set(graphs: Sequence) -> bool:
    """Whether validation `graphs` are one program's few configurations (`FEW_VALID_CONFIGS`)."""
    from graphcost.models.trees import one_program

    return 0 < sum(g.num_configs for g in graphs) <= FEW_VALID_CONFIGS and one_program(graphs) is not None
BOOTSTRAP = 100  # resamples of the validation configurations that measure the noise of a difference
ANCHOR = (0.5, 0.0)  # (w, p) of two components that rank equally well: the graph model and the trees in equal parts


def skill_anchor(results: dict, with_prior: bool) -> tuple[float, float]:
    """(w, p) the choice shrinks towards: each component (graph model, prior, trees) in proportion to the square
    of its own validation Kendall τ, a component that ranks no better than chance (τ ≤ 0) at nothing; equal parts
    (`ANCHOR`) for two that rank equally well. None of them above chance: the graph model."""
    skill = [max(0.0, results[(1.0, 0.0)]), max(0.0, results[(0.0, 1.0)]) if with_prior else 0.0,
             max(0.0, results[(0.0, 0.0)])]
    total = sum(v * v for v in skill)
    return (skill[0] ** 2 / total, skill[1] ** 2 / total) if total > 0 else (1.0, 0.0)


def _bootstrap_taus(scores: Sequence[np.ndarray], runtime: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(B, C) Kendall τ-b of each of C score vectors against `runtime` on B bootstrap resamples of the m
    configurations, a resample given by its (B, m) counts `weights`: a configuration drawn twice is a tied pair
    with itself, which τ-b leaves out, so over pairs (i, j) with weight w_i w_j, τ-b = Σ w_i w_j s_ij r_ij /
    sqrt(Σ w_i w_j |s_ij| · Σ w_i w_j |r_ij|), s and r the signs of the score and runtime differences."""
    def quad(a: np.ndarray) -> np.ndarray:  # (B,) w_b^T a w_b
        return ((weights @ a) * weights).sum(axis=1)

    r = np.sign(runtime[:, None] - runtime[None, :])  # (m, m)
    denom_r = quad(np.abs(r))
    out = np.empty((len(weights), len(scores)))
    for c, sc in enumerate(scores):
        s = np.sign(sc[:, None] - sc[None, :])
        num, denom = quad(s * r), np.sqrt(quad(np.abs(s)) * denom_r)
        out[:, c] = np.divide(num, denom, out=np.zeros_like(num), where=denom > 0)
    return out


def within_noise(candidates: Sequence[tuple[float, float]], blends: Sequence[Sequence[np.ndarray]], graphs: Sequence,
                 results: dict, best: tuple[float, float], seed: int = 0,
                 anchor: tuple[float, float] = ANCHOR) -> tuple[float, float]:
    """The one-standard-error rule: of the weights whose mean validation Kendall τ is below the best's by no more
    than the standard error of that difference, the ones nearest `anchor` (L1 over graph / prior / trees
    weights; `skill_anchor`), and of those the best on validation.

    Why: with 30-150 validation configurations the best of 66 weightings is partly the luck of the draw. The
    standard error comes from `BOOTSTRAP` paired resamples of each graph's validation configurations (every
    weighting scored on the same resample), so a weighting is set aside only when the validation data can tell
    it from the best. Among those it cannot tell apart, the components in proportion to how well each ranks on
    its own is the safer bet than the corner the noise happened to favour: equal parts of two that rank equally
    well, nothing of one that ranks no better than chance. (Equal parts whatever each component's skill, tried
    first, kept 0.4 of a graph model at validation τ −0.09 beside trees at 0.42 on the synthetic set's 30
    configurations: inside the noise of 30 configurations, but a component the validation data already said was
    useless.) By construction the choice is never below the best validation figure, which is at least the best
    single component's, by more than the validation noise.

    `blends[c][i]`: candidate c's scores of graph i."""
    rng = np.random.default_rng([seed, 0xB1E])
    usable = [i for i, g in enumerate(graphs) if g.num_configs >= 2]
    if not usable:
        return best
    draws = np.zeros((BOOTSTRAP, len(candidates)))
    for i in usable:
        runtime = np.asarray(graphs[i].runtime, dtype=np.float64)
        m = len(runtime)
        weights = np.stack([np.bincount(rng.integers(0, m, m), minlength=m) for _ in range(BOOTSTRAP)]).astype(float)
        draws += _bootstrap_taus([np.asarray(b[i], dtype=np.float64) for b in blends], runtime, weights) / len(usable)
    at = list(candidates).index(best)
    noise = (draws[:, [at]] - draws).std(axis=0)
    close = [wp for c, wp in enumerate(candidates) if results[best] - results[wp] <= noise[c]]

    def distance(wp: tuple[float, float]) -> float:
        trees, anchor_trees = 1.0 - wp[0] - wp[1], 1.0 - anchor[0] - anchor[1]
        return round(abs(wp[0] - anchor[0]) + abs(wp[1] - anchor[1]) + abs(trees - anchor_trees), 6)

    return min(close, key=lambda wp: (distance(wp), -results[wp], -wp[0], wp[1]))


def choose_blend(graph_scores: Sequence[np.ndarray], tree_scores: Sequence[np.ndarray], graphs: Sequence,
                 metric: str, prior_scores: Sequence[np.ndarray] | None = None, prior_kind: str = "count",
                 seed: int = 0) -> Blend:
    """The weights (w, p) in GRID with the best mean `metric` over the validation `graphs`; ties go
    to more of the graph model, then to less of the prior (`prior_kind`'s scores, `prior_scores`).
    Without `prior_scores`, p = 0. With at most `FEW_VALID_CONFIGS` validation configurations (Kendall τ):
    the one-standard-error rule instead (`within_noise`)."""
    priors: list = list(prior_scores) if prior_scores is not None else [None] * len(graphs)
    grid = GRID if prior_scores is not None else tuple((w, 0.0) for w in WEIGHTS)
    blends = [[blended(w, a, b, p, c) for a, b, c in zip(graph_scores, tree_scores, priors)] for w, p in grid]
    results = {wp: mean_metric(scores, graphs, metric) for wp, scores in zip(grid, blends)}
    best = max(grid, key=lambda wp: (results[wp], wp[0], -wp[1]))
    top = results[best]
    if metric == "kendall_tau" and small_measurement_set(graphs):
        best = within_noise(grid, blends, graphs, results, best, seed, skill_anchor(results, prior_scores is not None))
    valid = {"blend": results[best], "graph model": results[(1.0, 0.0)], "trees": results[(0.0, 0.0)]}
    if best != max(grid, key=lambda wp: (results[wp], wp[0], -wp[1])):
        valid["best on valid"] = top
    if prior_scores is not None:
        valid[prior_kind] = results[(0.0, 1.0)]
    return Blend(weight=best[0], metric=metric, valid=valid, prior=best[1], prior_kind=prior_kind)


BLEND_METRIC = "kendall_tau"
"""The validation metric the blend's weights are chosen by, for every kind of graph. Checkpoints of flag (tile)
models are still selected by the tile score (TGraph §2.5.2), but on flag graphs of a few dozen configurations,
the default among them, every scorer's tile score is 0.96-0.98 and moves between weights by less than its noise,
so choosing the blend by it dropped the trees nearly always. Chosen by Kendall τ on five leave-family-out
folds of the flag zoos' development families, the blend ranked the held-out families better for 10 of 15
members, tied (within 0.002) on 3 and lost on 2: mean held-out τ 0.479 → 0.496, the held-out tile score 0.970 →
0.969 (docs/findings.md, "Choosing the blend by Kendall τ"; `benchmarks/lab/diagnose_blend_metric.py`)."""

PRIOR_RULE = "alone on train + valid"
"""How the blend's prior kind (count or copied bytes) is chosen: by each prior's own mean `BLEND_METRIC` over
every training and validation graph that carries the compiled statistics, not by the blend on the validation
graphs alone. A prior fits nothing, so a training graph is as fair a test of it as a validation graph, and a
run's validation side may be one family: on leave-family-out folds of `cpu_zoo_layout` whose only validation
family was vae, every seed's blend took the count, though the copied bytes rank 16 of the 21 development
families better than the count (mean τ 0.684 vs 0.653; pde 0.716 vs the count's 0.512). Before 2026-12-01:
the prior whose blend scored higher on the validation graphs (``"blend on valid"``)."""


def fit_blend(graph_score: Callable[[PreparedGraph], np.ndarray], train: Sequence, valid: Sequence,
              metric: str = BLEND_METRIC, seed: int = 0, threads: int = 0) -> tuple[Blend, TreeRanker]:
    """Trees fitted on `train` (rounds stopped early on `valid`) and the blend weights with the best
    mean `metric` on `valid`; `graph_score(prepared) -> (K,)` scores with the trained graph model."""
    if not valid:
        raise ValueError("choosing the blend needs validation graphs")
    trees = TreeRanker.fit(train, valid, seed=seed, threads=threads)
    graph_scores = [np.asarray(graph_score(g), dtype=np.float64) for g in valid]
    tables = [config_table(g) for g in valid]
    tree_scores = [trees.held_out_scores(g, t) for g, t in zip(valid, tables)]  # never in-sample
    layout = all(g.kind == "layout" for g in valid)  # the priors are layout-only
    counts = [count_prior(g, t) for g, t in zip(valid, tables)] if layout else None
    blend = choose_blend(graph_scores, tree_scores, valid, metric, counts, seed=seed)
    copies = [copies_prior(g) for g in valid] if layout else [None]
    known = [c for c in copies if c is not None]
    if counts is not None and len(known) == len(copies):  # every validation graph knows what the compiler did
        # PRIOR_RULE: the kind whose prior alone ranks better over the annotated training graphs and the validation
        # graphs (a tie keeps the count); the weights stay chosen on validation
        extra = [(g, c) for g in train if g.kind == "layout" and (c := copies_prior(g)) is not None]
        graphs = [*valid, *(g for g, _ in extra)]
        if (mean_metric([*known, *(c for _, c in extra)], graphs, metric)
                > mean_metric([*counts, *(count_prior(g) for g, _ in extra)], graphs, metric)):
            other = choose_blend(graph_scores, tree_scores, valid, metric, known, prior_kind="copies", seed=seed)
            blend = Blend(other.weight, other.metric, {**other.valid, "count": blend.valid["count"]}, other.prior,
                          "copies")
    return blend, trees


def write_blend(run_dir: str | Path, blend: Blend, trees: TreeRanker) -> None:
    """trees.txt first, then blend.json (whose presence switches the blend on), both atomically."""
    run_dir = Path(run_dir)
    trees.save(run_dir / TREES_FILE)
    blend.save(run_dir / BLEND_FILE)


def load_blend(run_dir: Path) -> tuple[Blend, TreeRanker] | None:
    """(Blend, TreeRanker) of a run directory that has a ``blend.json`` (`graphcost train`'s trees
    beside the graph model), else None; a damaged file is a CheckpointError naming it."""
    run_dir = Path(run_dir)
    if not (run_dir / BLEND_FILE).is_file():
        return None
    try:
        return Blend.load(run_dir / BLEND_FILE), TreeRanker.load(run_dir / TREES_FILE)
    except TreeError as exc:
        raise CheckpointError(str(exc)) from None


def describe(blend: Blend) -> str:
    v = blend.valid
    what = "bytes the compiler copies" if blend.prior_kind == "copies" else "count of moved layouts"
    prior = f" + {blend.prior:.1f} x {what}" if blend.prior else ""
    count = "".join(f", {k} {v[k]:.4f}" for k in ("count", "copies") if k in v)
    trees = max(0.0, 1.0 - blend.weight - blend.prior)  # not "-0.0" when w + p = 1
    return (f"blend: {blend.weight:.1f} x graph model + {trees:.1f} x trees{prior}, chosen on "
            f"the validation graphs (valid {blend.metric}: blend {v.get('blend', float('nan')):.4f}, graph model "
            f"{v.get('graph model', float('nan')):.4f}, trees {v.get('trees', float('nan')):.4f}{count})")
