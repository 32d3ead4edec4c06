"""Cost-model scores of candidate configurations: a trained graphcost run.

`GraphModelScorer` puts the candidates into the TpuGraphs schema (`Space.graph_for`), prepares
them like any graph (pruning and compression, TGraph §2.2; no de-duplication, so scores stay
aligned with the candidates) and scores them with every given run whose graph kind the space
has (tile model -> flag vector, layout model -> per-node layouts); each kind's scores are
standardised and summed. LOWER = predicted faster, as everywhere in graphcost. The per-program
learners of ``model+online`` that use these scores as a prior are in `graphcost.tuning.learners`.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import Codes, FlagSpace, Space

if TYPE_CHECKING:
    from graphcost.inference.ensemble import EnsemblePredictor


class GraphModelScorer:
    """Scores configurations of `program` in `space` with trained runs (`EnsemblePredictor`)."""

    def __init__(self, runs: Sequence[str | Path], program: TuneProgram, space: Space, device: str = "cpu",
                 batch_size: int = 256):
        from graphcost.inference.ensemble import EnsemblePredictor

        self.program, self.space = program, space
        self.predictors: dict[str, EnsemblePredictor] = {}  # graph kind -> its model (a CostModel)
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
    from graphcost.runs.run_json import RunInfoError, find_run_info_file

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
