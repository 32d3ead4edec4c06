"""Fit the tree ranker beside a trained graph model and choose their blend on the validation
graphs (`graphcost.models.trees`); `graphcost train` writes the result into the run directory
(``trees.txt``, ``blend.json``) and every command that loads the run
(`graphcost.inference.ensemble.EnsemblePredictor`) scores with it.

Why: on real data gradient-boosted trees on the configuration table and the graph model make
different errors, and with a dozen training configurations counting moved layouts beats both; the
weights (w on the graph model, p on the count) are picked on the validation graphs, so a dataset
where the graph model is better on its own gets w = 1, one where the trees are gets w = 0 and p = 0
(documentation: Benchmarks, real CPU data). Where every validation graph carries what the compiler did
(``config_compiled_stats``), the prior may be the bytes the compiler copies instead of the count
(`graphcost.models.trees.PRIORS`): whichever ranks better on its own over the training and validation
graphs together (`PRIOR_RULE`); the weights are then chosen on the validation graphs.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from graphcost.models.config_table import config_table
from graphcost.models.trees import (BLEND_FILE, TREES_FILE, Blend, TreeRanker, choose_blend, copies_prior, count_prior,
                                    mean_metric)

if TYPE_CHECKING:
    from graphcost.data.transforms.prepared import PreparedGraph

log = logging.getLogger(__name__)

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
    tree_scores = [trees.score(g, t) for g, t in zip(valid, tables)]
    layout = all(g.kind == "layout" for g in valid)  # the priors are layout-only
    counts = [count_prior(g, t) for g, t in zip(valid, tables)] if layout else None
    blend = choose_blend(graph_scores, tree_scores, valid, metric, counts)
    copies = [copies_prior(g) for g in valid] if layout else [None]
    known = [c for c in copies if c is not None]
    if counts is not None and len(known) == len(copies):  # every validation graph knows what the compiler did
        # PRIOR_RULE: the kind whose prior alone ranks better over the annotated training graphs and the validation
        # graphs (a tie keeps the count); the weights stay chosen on validation
        extra = [(g, c) for g in train if g.kind == "layout" and (c := copies_prior(g)) is not None]
        graphs = [*valid, *(g for g, _ in extra)]
        if (mean_metric([*known, *(c for _, c in extra)], graphs, metric)
                > mean_metric([*counts, *(count_prior(g) for g, _ in extra)], graphs, metric)):
            other = choose_blend(graph_scores, tree_scores, valid, metric, known, prior_kind="copies")
            blend = Blend(other.weight, other.metric, {**other.valid, "count": blend.valid["count"]}, other.prior,
                          "copies")
    return blend, trees


def write_blend(run_dir: str | Path, blend: Blend, trees: TreeRanker) -> None:
    """trees.txt first, then blend.json (whose presence switches the blend on), both atomically."""
    run_dir = Path(run_dir)
    trees.save(run_dir / TREES_FILE)
    blend.save(run_dir / BLEND_FILE)


def describe(blend: Blend) -> str:
    v = blend.valid
    what = "bytes the compiler copies" if blend.prior_kind == "copies" else "count of moved layouts"
    prior = f" + {blend.prior:.1f} x {what}" if blend.prior else ""
    count = "".join(f", {k} {v[k]:.4f}" for k in ("count", "copies") if k in v)
    trees = max(0.0, 1.0 - blend.weight - blend.prior)  # not "-0.0" when w + p = 1
    return (f"blend: {blend.weight:.1f} x graph model + {trees:.1f} x trees{prior}, chosen on "
            f"the validation graphs (valid {blend.metric}: blend {v.get('blend', float('nan')):.4f}, graph model "
            f"{v.get('graph model', float('nan')):.4f}, trees {v.get('trees', float('nan')):.4f}{count})")
