"""K-fold cross-validation by graph, and the fold ensemble it leaves behind (TGraph §2.4.3).

TGraph merges the official train and validation splits, cuts them into K = 20 folds BY GRAPH
(never configurations of one graph on both sides: runtimes within a graph are highly correlated,
so splitting them would leak; `graphcost.data.splits.kfold_indices`), trains only the first 5
folds and keeps the best 4 by validation score. At inference the kept folds' scores are averaged,
each computed with TTA over N = 10 permutations of the configuration batch
(`graphcost.inference.ensemble.EnsemblePredictor`).

On disk a cross-validation run is ``RUN/fold_00 ... fold_{n-1}`` (each a normal training run)
plus ``RUN/ensemble.json`` naming the kept folds and their scores.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from graphcost.guards.atomic import write_json
from graphcost.data.splits import kfold_indices
from graphcost.data.transforms.pool import graph_names, subset
from graphcost.runs import checkpoint as ckpt
from graphcost.inference.ensemble import ENSEMBLE_FILE


@dataclass
class CrossValResult:
    fold_scores: list[float]  # best validation score of every trained fold
    kept: list[int]  # fold numbers kept in the ensemble (best first)
    mean_score: float  # mean of the kept folds' scores (TGraph §2.4.3)
    metric: str
    run_dir: Path


def run_crossval(
    config,
    graphs: Sequence,
    out_dir: str | Path,
    *,
    folds: int = 20,
    train_folds: int = 5,
    keep: int = 4,
    resume: bool = False,
    trainer_kwargs: dict | None = None,
) -> CrossValResult:
    """Train the first `train_folds` of a `folds`-fold split, keep the best `keep` (TGraph §2.4.3)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = graph_names(graphs)
    splits = kfold_indices(names, folds, config.seed)
    train_folds = min(train_folds, folds)
    keep = max(1, min(keep, train_folds))
    ctx = (trainer_kwargs or {}).get("dist_ctx")
    is_main = ctx is None or ctx.is_main
    scores: list[float] = []
    metric = "kendall_tau"
    for f in range(train_folds):
        train_idx, valid_idx = splits[f]
        score, metric = train_member(
            dataclasses.replace(config, seed=config.seed + f), subset(graphs, train_idx), subset(graphs, valid_idx),
            out_dir / f"fold_{f:02d}", resume=resume, trainer_kwargs=trainer_kwargs,
            record={"fold": f, "valid_graphs": [names[i] for i in valid_idx]}, metric=metric,
        )  # fmt: skip
        scores.append(score)
    order = sorted(range(len(scores)), key=lambda i: (-np.nan_to_num(scores[i], nan=-np.inf), i))
    kept = order[:keep]
    mean = float(np.mean([scores[i] for i in kept]))
    if not is_main:
        return CrossValResult(scores, kept, mean, metric, out_dir)
    write_json(
        {"folds": folds, "trained": train_folds, "metric": metric, "fold_scores": scores, "kept": kept,
         "mean_score": mean, "members": [f"fold_{i:02d}/best.pt" for i in kept]},
        out_dir / ENSEMBLE_FILE,
    )
    return CrossValResult(scores, kept, mean, metric, out_dir)


def train_member(config, train_graphs: Sequence, valid_graphs: Sequence, where: Path, *, resume: bool,
                 trainer_kwargs: dict | None, record: dict, metric: str) -> tuple[float, str]:
    """(best validation score, metric) of one ensemble member (a fold, a seed) trained into `where`, which
    gets ``done.json`` (`record` and the score) when it finishes; on `resume` a member already done is read
    back from it, not trained again (`metric`: returned for it when its done.json names none)."""
    from graphcost.train.trainer import Trainer

    done = where / "done.json"
    if resume and done.is_file():
        info = read_done(done)
        return info["best_score"], info.get("metric", metric)
    trainer = Trainer(config, train_graphs, valid_graphs, where, **(trainer_kwargs or {}))
    score = float(trainer.fit(resume=resume).best_score)
    ctx = (trainer_kwargs or {}).get("dist_ctx")
    if ctx is None or ctx.is_main:
        write_json({**record, "best_score": score, "metric": trainer.metric}, done)
    return score, trainer.metric


def read_done(path: Path) -> dict:
    """A finished fold's (or seed ensemble member's) done.json ({"best_score": float, "metric": str, ...});
    CheckpointError naming the file and the field when it is damaged."""
    try:
        info = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ckpt.CheckpointError(f"{path}: not a readable JSON file ({type(exc).__name__}: {exc})") from None
    score = info.get("best_score") if isinstance(info, dict) else None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise ckpt.CheckpointError(f"{path}: field 'best_score' must be a number, got {score!r}")
    if not isinstance(info.get("metric", ""), str):
        raise ckpt.CheckpointError(f"{path}: field 'metric' must be a string")
    return {**info, "best_score": float(score)}
