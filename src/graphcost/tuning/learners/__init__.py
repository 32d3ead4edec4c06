"""The per-program learners of ``model+online`` (`graphcost.tuning.strategies.ModelSearch`): each is
fitted between rounds on this program's measured configurations, with the graph model's score of
each as a prior feature, and re-ranks the candidate pool.

  effects    Bayesian main effects and interactions of the options, Thompson sampling (flags' default)
  tree       LightGBM on the configuration codes (layout and joint spaces' default)
  finetune   the graph model itself, fine-tuned on the measurements

Every learner is an `OnlineLearner`; `make_learner` builds one by name. `kernel_residual` is of
another kind: it corrects a kernel cost model kernel by kernel from profiled trials,
not a configuration score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from graphcost.tuning.space import Codes, Space

if TYPE_CHECKING:
    from graphcost.tuning.scoring import GraphModelScorer


class OnlineLearner(Protocol):
    """What ``model+online`` asks of a per-program learner. Scores: LOWER = predicted faster."""

    MIN_TRAIN: int  # below this many measured configurations `fit` fits nothing and the prior ranks

    def fit(self, codes: list[Codes], prior: np.ndarray, ratio: np.ndarray) -> bool:
        """Fit on measured configurations `codes` ((N,) graph-model scores `prior`, (N,) runtime
        ratios to the default); False (and nothing fitted) when there are too few or all are equal."""
        ...

    def predict(self, codes: list[Codes], prior: np.ndarray) -> np.ndarray:
        """(K,) predicted log runtime ratios of `codes` (lower = faster); the prior when nothing is fitted."""
        ...


def make_learner(name: str, space: Space, scorer: GraphModelScorer | None = None, seed: int = 0) -> OnlineLearner:
    """The learner `name` (effects | tree | finetune; `strategies.resolve_learner` turns "auto" into
    one) for `space`; finetune copies the graph model of `scorer` (a `GraphModelScorer`)."""
    if name == "effects":
        from graphcost.tuning.learners.effects import EffectsModel

        return EffectsModel(space)
    if name == "tree":
        from graphcost.tuning.learners.tree import TreeModel

        return TreeModel(space, seed)
    if name == "finetune":
        from graphcost.tuning.learners.finetune import FineTunedModel

        if scorer is None:
            raise ValueError("the finetune learner needs the graph model's scorer")
        return FineTunedModel(scorer, seed=seed)
    raise ValueError(f"unknown online learner {name!r}; expected effects, tree or finetune")
