"""Cost-model scores of candidate configurations: a trained graphcost run, and a per-program
tree model fitted on this program's own measurements.

`GraphModelScorer` puts the candidates into the TpuGraphs schema (`Space.graph_for`), prepares
them like any graph (pruning and compression, TGraph §2.2; no de-duplication, so scores stay
aligned with the candidates) and scores them with every given run whose graph kind the space
has (tile model -> flag vector, layout model -> per-node layouts); each kind's scores are
standardised and summed. LOWER = predicted faster, as everywhere in graphcost.

`OnlineModel` is the `model+online` strategy's default per-program model (``online="tree"``): gradient-boosted trees
(LightGBM) on the configuration codes (categorical features) plus the graph model's score as a
prior feature, fitted to log(runtime / default runtime) of this program's measured
configurations. Trees keep gaining with the number of measured configurations where a single
program's graph model levels off (a real TPU layout graph, held-out Kendall tau after ~300 / ~3,000
measured configurations: trees 0.40 / 0.85, TGraph 0.84 / 0.84 at 900 epochs), and the prior
carries the zero-shot knowledge while
few configurations are measured. The alternative, ``online="finetune"`` (`FineTunedModel`),
fine-tunes a copy of the graph model itself on the measured configurations with TGraph's
pairwise hinge loss (eq. 8); its number of optimiser steps follows the number of measured
configurations (`FineTunedModel.steps`), not a fixed epoch count, since one program gives one
batch per step.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from graphcost.tuning.space import Codes, FlagSpace, Space, TuneProgram


class GraphModelScorer:
    """Scores configurations of `program` in `space` with trained runs (`EnsemblePredictor`)."""

    def __init__(self, runs: Sequence[str | Path], program: TuneProgram, space: Space, device: str = "cpu",
                 batch_size: int = 256):
        from graphcost.inference.ensemble import EnsemblePredictor

        self.program, self.space = program, space
        self.predictors: dict = {}
        self.runs: dict[str, str | Path] = {}
        for run in runs:
            pred = EnsemblePredictor.load([run], device=device, tta=0, batch_size=batch_size)
            if pred.kind not in space.kinds:
                raise ValueError(f"{run}: a {pred.kind} model cannot score the {space.name} space "
                                 f"(it needs a {' or '.join(space.kinds)} model)")
            if pred.kind in self.predictors:
                raise ValueError(f"{run}: two {pred.kind} models given; ensemble them in one run (train --folds)")
            self.predictors[pred.kind], self.runs[pred.kind] = pred, run
        if not self.predictors:
            raise ValueError("no cost model given")
        # flag columns the tile model's training data never varied: scored at their default (`ignored_flags`)
        self.ignored: tuple[str, ...] = ()
        flag_space = space if isinstance(space, FlagSpace) else getattr(space, "flags", None)  # joint: its flag part
        self.flag_space: FlagSpace | None = flag_space
        if "tile" in self.predictors and self.flag_space is not None:
            self.ignored = ignored_flags(self.runs["tile"], self.flag_space)

    @property
    def reads_compiled(self) -> bool:
        """Whether statistics given to `__call__` change the scores (one of the models reads them)."""
        return any(pred.reads_compiled for pred in self.predictors.values())

    def __call__(self, configs: list[Codes], compiled: np.ndarray | None = None) -> np.ndarray:
        """(K,) float64 predicted scores of `configs`, lower = faster. `compiled`: (K, 7) what the
        compiler did to each configuration (`graphcost.frontend.hlo.compiled_stats`, from compiling
        it), which a model whose blend reads them (the copied-bytes prior, the trees' compiled
        columns) uses; None scores without them."""
        from graphcost.data.transforms.preprocess import prepare_graph
        from graphcost.models.trees import standardise

        if compiled is not None and np.shape(compiled)[0] != len(configs):
            raise ValueError(f"compiled statistics for {np.shape(compiled)[0]} configurations, not {len(configs)}")
        total = np.zeros(len(configs), np.float64)
        for kind, pred in self.predictors.items():
            graph = self.space.graph_for(self.program, kind, configs)
            if compiled is not None:
                graph.config_compiled_stats = np.asarray(compiled, np.float64)
            if kind == "tile" and self.ignored and self.flag_space is not None:
                graph = mask_flags(graph, self.flag_space, self.ignored)
            prepared = prepare_graph(graph, prune=True, dedup=False, validate=False)
            scores = np.asarray(pred.score(prepared), np.float64)  # (K,)
            if not np.all(np.isfinite(scores)):
                raise ValueError(f"the {kind} cost model gave non-finite scores for {self.program.name}")
            total += standardise(scores)
        return total


def ignored_flags(run: str | Path, space: Space) -> tuple[str, ...]:
    """Flag dimensions of `space` that the tile model `run` cannot tell apart: options its
    training collection never varied (run.json ``flag_columns``, written by `graphcost train` from
    the data's manifest; `read_run_info` finds the run.json of a run, a checkpoint or a fold), logged
    with the options the model knows but this jaxlib lacks. A run without ``flag_columns`` (trained
    on other data) ignores nothing."""
    import logging

    from graphcost.frontend.programs import flags as flagspace
    from graphcost.inference.run_info import read_run_info
    from graphcost.runs.run_info import RunInfoError, find_run_info_file

    log = logging.getLogger(__name__)
    info = find_run_info_file(run)
    if info is None:
        return ()
    path = info.parent
    try:
        known = read_run_info(path).get("flag_columns")
    except RunInfoError:  # the predictor loaded it already; a run.json it could do without says nothing here
        return ()
    if not isinstance(known, list) or not all(isinstance(c, str) for c in known):
        return ()
    searched = [d.name for d in space.dims if len(d.choices) > 1]
    ignored = tuple(c for c in searched if c not in known)
    lacking = sorted(set(known) - {o.candidate.name for o in flagspace.known_options()})
    if ignored:
        log.warning(f"the flag model {path} never saw {', '.join(ignored)} vary (its training data did not): it "
                    "scores them at their defaults, and measurements alone decide them")
    if lacking:
        log.warning(f"this jaxlib has no {', '.join(lacking)}, which the flag model {path} was trained on: "
                    "they stay at their defaults")
    return ignored


def mask_flags(graph, space: FlagSpace, names: Sequence[str]):
    """`graph` (a TileGraph of flag space `space`'s candidates) with the columns of `names` set to the stored
    value of the space's default, so the model scores candidates as if those options were unchanged."""
    import dataclasses

    from graphcost.frontend.programs import flags as flagspace

    feat = np.array(graph.config_feat, copy=True)  # (K, 24)
    default = flagspace.flag_features([space.config(space.default())])[0]  # (24,)
    for name in names:
        col = flagspace.FLAG_COLUMNS.index(name)
        feat[:, col] = default[col]
    return dataclasses.replace(graph, config_feat=feat)


class OnlineModel:
    """LightGBM on (codes, prior score) -> log runtime ratio (module docstring)."""

    MIN_TRAIN = 6  # below this many measured configurations the prior alone ranks

    def __init__(self, space: Space, seed: int = 0):
        self.space, self.seed, self.model = space, seed, None

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
        base, self.scaler = pred.members[0]
        self.base, self.scorer, self.lr, self.seed = base, scorer, lr, seed
        self.model, self._copy = None, copy.deepcopy

    @staticmethod
    def steps(n: int) -> int:
        return int(np.clip(4 * n, 40, 400))

    def _prepared(self, codes: list[Codes], ratio: np.ndarray | None = None):
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
        self.model = self._copy(self.base).train()
        opt = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        batch = make_batch(self._prepared(codes, ratio), np.arange(len(codes)), self.scaler)
        for _ in range(self.steps(len(codes))):
            opt.zero_grad()
            loss = pairwise_hinge(self.model(batch), batch.runtime)  # TGraph eq. 8
            loss.backward()
            opt.step()
        self.model.eval()
        return True

    def predict(self, codes: list[Codes], prior: np.ndarray) -> np.ndarray:
        if self.model is None:
            return np.asarray(prior, np.float64)
        from graphcost.inference.ranking import score_configs

        return score_configs(self.model, self._prepared(codes), self.scaler, batch_size=256)
