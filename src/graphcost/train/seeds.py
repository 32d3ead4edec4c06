"""A seed ensemble: the same graph model trained n times on the train split, from n seeds, and averaged.

`graphcost train --seeds n` (folds 0). Member k is trained with seed ``seed + k`` into ``RUN/seed_k``
(each a normal training run, chosen on the valid split by its own early stopping), and
``RUN/ensemble.json`` lists every member, so everything that loads a run averages their standardised
scores (`graphcost.inference.ensemble.EnsemblePredictor`): the mean of n rankers whose errors differ varies
less from seed to seed than any one of them. The trees and their blend are then fitted beside the averaged
score (`graphcost.train.fit.fit_trees`), exactly as beside one model. Measured on the flag zoos (docs/findings.md,
"v6" and "Choosing a seed on validation families"): 3 seeds score above their members' mean and below the member
best on validation, on 5 leave-family-out folds too (0.472 against 0.466 and 0.480), so `graphcost train` trains
one model unless asked.

Unlike cross-validation (`graphcost.train.crossval`) every member sees the same training graphs and
the valid split stays free to choose the blend on; members are not ranked or dropped by their validation
score (all n are kept), so the ensemble is not selected on noise between seeds.

On disk: ``RUN/seed_00 ... seed_{n-1}``, each with ``done.json`` once finished (a resumed run skips them),
and ``RUN/ensemble.json``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from graphcost.guards.atomic import write_json
from graphcost.inference.ensemble import ENSEMBLE_FILE
from graphcost.train.crossval import train_member


@dataclass
class SeedEnsembleResult:
    member_scores: list[float]  # best validation score of each member, in seed order
    mean_score: float  # their mean
    metric: str
    run_dir: Path


def member_dir(run_dir: Path, k: int) -> Path:
    """Where member k of a seed ensemble is trained."""
    return run_dir / f"seed_{k:02d}"


def run_seed_ensemble(config, train_graphs: Sequence, valid_graphs: Sequence, out_dir: str | Path, *, seeds: int,
                      resume: bool = False, trainer_kwargs: dict | None = None) -> SeedEnsembleResult:
    """Train `seeds` members (seeds config.seed ... config.seed + seeds - 1) and write ensemble.json."""
    if seeds < 2:
        raise ValueError(f"a seed ensemble needs at least 2 seeds, got {seeds}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    scores: list[float] = []
    metric = "kendall_tau"
    for k in range(seeds):
        score, metric = train_member(
            dataclasses.replace(config, seed=config.seed + k), train_graphs, valid_graphs, member_dir(out_dir, k),
            resume=resume, trainer_kwargs=trainer_kwargs, record={"member": k, "seed": config.seed + k}, metric=metric,
        )  # fmt: skip
        scores.append(score)
    mean = float(np.mean(scores))
    ctx = (trainer_kwargs or {}).get("dist_ctx")
    if ctx is None or ctx.is_main:
        # a member without best.pt (its validation never improved) is read from its checkpoint.pt
        members = [f"{member_dir(out_dir, k).name}/best.pt" for k in range(seeds)]
        write_json({"seeds": seeds, "first_seed": config.seed, "metric": metric, "member_scores": scores,
                    "mean_score": mean, "members": members}, out_dir / ENSEMBLE_FILE)
    return SeedEnsembleResult(scores, mean, metric, out_dir)
