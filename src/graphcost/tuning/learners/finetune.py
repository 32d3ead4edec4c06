"""The ``finetune`` online learner of ``model+online``: a copy of the graph model itself, fine-tuned on
this program's measured configurations with TGraph's pairwise hinge loss (eq. 8). Its number of
optimiser steps follows the number of measured configurations (`FineTunedModel.steps`), not a fixed
epoch count, since one program gives one batch per step.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from graphcost.tuning.scoring import GraphModelScorer
from graphcost.tuning.space import Codes

if TYPE_CHECKING:
    from graphcost.data.transforms.prepared import PreparedGraph


class FineTunedModel:
    """A copy of the graph model, fine-tuned on this program's measurements (module docstring).

    Only for spaces scored by one graph kind (flags or layout). Steps: ``clip(4 n, 40, 400)`` for n
    measured configurations, all of them in every step (one program = one batch), Adam at `lr`.
    """

    MIN_TRAIN = 6

    def __init__(self, scorer: GraphModelScorer, lr: float = 1e-4, seed: int = 0):
        import copy

        if len(scorer.predictors) != 1 or len(next(iter(scorer.predictors.values())).members) != 1:
            raise ValueError("fine-tuning needs exactly one single-model cost model run")
        (self.kind, pred), = scorer.predictors.items()
        base, scaler = pred.members[0]
        self.scaler: Any = scaler  # the run's FeatureScaler
        self.base, self.scorer, self.lr, self.seed = base, scorer, lr, seed
        self.model: Any = None  # the fine-tuned copy (a torch.nn.Module), once fitted
        self._copy = copy.deepcopy

    @staticmethod
    def steps(n: int) -> int:
        return int(np.clip(4 * n, 40, 400))

    def _prepared(self, codes: list[Codes], ratio: np.ndarray | None = None) -> PreparedGraph:
        from graphcost.data.transforms.preprocess import prepare_graph

        graph = self.scorer.space.graph_for(self.scorer.program, self.kind, codes)
        if ratio is not None:  # runtimes in the schema's integer form; only their order matters here
            graph.config_runtime = np.maximum(1, np.round(np.asarray(ratio) * 1e6)).astype(np.int64)
        return prepare_graph(graph, prune=True, dedup=False, validate=False)

    def fit(self, codes: list[Codes], prior: np.ndarray, ratio: np.ndarray) -> bool:
        import torch

        from graphcost.data.transforms.batching import make_batch
        from graphcost.models.losses import pairwise_hinge

        if len(codes) < self.MIN_TRAIN or np.ptp(ratio) == 0:
            self.model = None
            return False
        torch.manual_seed(self.seed)
        model = self._copy(self.base).train()
        opt = torch.optim.Adam(model.parameters(), lr=self.lr)
        batch = make_batch(self._prepared(codes, ratio), np.arange(len(codes)), self.scaler)
        for _ in range(self.steps(len(codes))):
            opt.zero_grad()
            loss = pairwise_hinge(model(batch), torch.as_tensor(batch.runtime))  # TGraph eq. 8
            loss.backward()
            opt.step()
        self.model = model.eval()
        return True

    def predict(self, codes: list[Codes], prior: np.ndarray) -> np.ndarray:
        if self.model is None:
            return np.asarray(prior, np.float64)
        from graphcost.inference.ranking import score_configs

        return score_configs(self.model, self._prepared(codes), self.scaler, batch_size=256)
