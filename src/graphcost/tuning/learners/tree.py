"""The ``tree`` online learner of ``model+online``: gradient-boosted trees (LightGBM) on the
configuration codes (categorical features) plus the graph model's score as a prior feature, fitted to
log(runtime / default runtime) of this program's measured configurations.

Trees keep gaining with the number of measured configurations of one program (the guide's "Cost
models" page, "The default recipe", item 3), and the prior carries the zero-shot knowledge while few
configurations are measured. ``auto`` picks it in the layout and joint spaces.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphcost.tuning.space import Codes, Space


class TreeModel:
    """LightGBM on (codes, prior score) -> log runtime ratio (module docstring)."""

    MIN_TRAIN = 6  # below this many measured configurations the prior alone ranks

    def __init__(self, space: Space, seed: int = 0):
        self.space, self.seed = space, seed
        self.model: Any = None  # a lightgbm.Booster once fitted

    def features(self, codes: list[Codes], prior: np.ndarray) -> np.ndarray:
        return np.column_stack([np.asarray(codes, np.float64).reshape(len(codes), -1), prior])  # (K, D + 1)

    def fit(self, codes: list[Codes], prior: np.ndarray, ratio: np.ndarray) -> bool:
        """Fit on measured configurations; False (and no model) when there are too few."""
        if len(codes) < self.MIN_TRAIN or np.ptp(ratio) == 0:
            self.model = None
            return False
        import lightgbm

        params = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 2,
                  "min_data_in_bin": 1, "bagging_fraction": 0.9, "bagging_freq": 1, "feature_fraction": 0.9,
                  "seed": self.seed, "deterministic": True, "num_threads": 1, "verbose": -1}
        data = lightgbm.Dataset(self.features(codes, prior), np.log(ratio),
                                categorical_feature=list(range(len(self.space.dims))), params={"verbose": -1})
        self.model = lightgbm.train(params, data, num_boost_round=200)
        return True

    def predict(self, codes: list[Codes], prior: np.ndarray) -> np.ndarray:
        """(K,) predicted log ratios; the standardised prior when no model is fitted."""
        if self.model is None:
            return np.asarray(prior, np.float64)
        return np.asarray(self.model.predict(self.features(codes, prior)), np.float64)
