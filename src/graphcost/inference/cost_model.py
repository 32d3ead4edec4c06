"""The cost-model contract: what `graphcost evaluate`, `rank`, `predict` and the tuner ask of a model.

    kind          "layout" | "tile": the graphs it scores
    trained_on    where it was trained: the run directories or checkpoints it was loaded from
                  ("in memory" for a model built in this process)
    score(p)      (K,) float64 scores of every configuration of the prepared graph p
                  (`graphcost.data.transforms.prepared.PreparedGraph`), in p's order; LOWER = predicted
                  faster; only the order is meaningful

Implemented by a loaded run (`graphcost.inference.ensemble.EnsemblePredictor`: one model, a fold
ensemble, or a graph model blended with trees and a count prior) and by a single model scored as it
trains (`graphcost.inference.ranking.ModelScorer`). The tuner's `GraphModelScorer` holds one
CostModel per graph kind of its space.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from graphcost.data.transforms.prepared import PreparedGraph


@runtime_checkable
class CostModel(Protocol):
    """A trained model that scores a prepared graph's configurations (module docstring)."""

    kind: str
    trained_on: str

    def score(self, prepared: PreparedGraph) -> np.ndarray:
        """(K,) float64 scores of `prepared`'s configurations, in its order; lower = predicted faster."""
        ...
