"""Scoring every configuration of a graph, per-graph metrics, and the evaluation report.

Scoring (TGraph §2.5.3). A TGraph score depends on the other configurations in its batch
(cross-configuration attention), so a graph's K configurations are scored in near-equal chunks
of at most `batch_size`. With test-time augmentation (TTA) the K configurations are shuffled by
N seeded permutations; each view is chunked and scored, the scores are put back in the original
order (``scores[perm] = view``) and the N views are averaged.

Metrics (TpuGraphs §5 / TGraph §2.5.2): layout graphs report Kendall tau (eq. 9), ordered-pair
accuracy and top-K slowdown; tile graphs report the tile score (eq. 10, K = 5) as well. The
selection score used for early stopping / fold ranking is mean tau (layout) or mean tile score
(tile). Scores follow the project convention: LOWER = predicted FASTER.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
import torch
from torch import nn

from graphcost.inference.cost_model import CostModel
from graphcost.models.precision import resolve_precision

if TYPE_CHECKING:
    from graphcost.data.transforms.prepared import PreparedGraph
    from graphcost.data.transforms.scaler import FeatureScaler


CHUNKS_PER_CALL = 32  # chunks scored per model call by `score_chunked` models (bounds the batch's memory)


def num_configs(prepared: PreparedGraph) -> int:
    return int(np.asarray(prepared.runtime).shape[0])


def chunk_indices(order: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Split `order` into ceil(K / batch_size) near-equal consecutive chunks."""
    count = len(order)
    if count == 0:
        return []
    pieces = max(1, math.ceil(count / max(1, batch_size)))
    return [chunk for chunk in np.array_split(order, pieces) if len(chunk)]


def tta_orders(count: int, tta: int, seed: int) -> list[np.ndarray]:
    """The configuration orders to score: identity when tta <= 1, else `tta` seeded permutations."""
    if tta <= 1:
        return [np.arange(count, dtype=np.int64)]
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, count, tta, 0x77A])
    return [rng.permutation(count).astype(np.int64) for _ in range(tta)]


@torch.no_grad()
def score_configs(
    model: nn.Module,
    prepared: PreparedGraph,
    scaler: FeatureScaler | None,
    *,
    batch_size: int = 128,
    device: torch.device | str = "cpu",
    tta: int = 0,
    seed: int = 0,
    make_batch: Callable | None = None,
    precision: str = "fp32",
) -> np.ndarray:
    """Scores of all K configurations of `prepared`, in its configuration order; (K,) float64.

    TGraph §2.5.3: N permuted views of the configurations, each scored in chunks, restored to
    the original order and averaged. Models with `score_chunked` (TGraph) get up to
    `CHUNKS_PER_CALL` chunks per call, so their configuration-independent pass is shared;
    `precision` "bf16" is only offered by those (see `TGraph.score_chunked`); "auto" picks bf16 on a
    CPU with native bf16, else fp32 (`resolve_precision`).
    """
    if make_batch is None:
        from graphcost.data.transforms.batching import make_batch as default_make_batch

        make_batch = default_make_batch
    chunked = getattr(model, "can_score_chunked", False)
    score_chunked: Callable | None = getattr(model, "score_chunked", None) if chunked else None
    precision = resolve_precision(precision, device, [model])  # "auto": bf16 only where native (models/precision.py)
    if precision != "fp32" and not chunked:
        raise ValueError(f"precision {precision!r} is supported by TGraph only, not by {type(model).__name__}")
    was_training = model.training
    model.eval()
    count = num_configs(prepared)
    total = np.zeros(count, dtype=np.float64)
    orders = tta_orders(count, tta, seed)
    for order in orders:
        view = np.empty(count, dtype=np.float64)
        chunks = chunk_indices(order, batch_size)
        groups = [chunks[i:i + CHUNKS_PER_CALL] for i in range(0, len(chunks), CHUNKS_PER_CALL)] if chunked \
            else [[c] for c in chunks]
        for group in groups:
            idx = np.concatenate(group)
            batch = make_batch(prepared, idx, scaler).to(device)
            if score_chunked is not None:
                out = score_chunked(batch, chunk_sizes=[len(c) for c in group], precision=precision)
            else:
                out = model(batch)  # (b,)
            view[idx] = out.detach().double().cpu().numpy().reshape(-1)  # restore original order
        total += view
    if was_training:
        model.train()
    return total / len(orders)


@dataclass
class ModelScorer:
    """A single model + its feature scaler as a `CostModel` (`make_batch` None: data-prep's)."""

    model: nn.Module
    scaler: FeatureScaler | None
    batch_size: int = 128
    device: torch.device | str = "cpu"
    tta: int = 0
    seed: int = 0
    make_batch: Callable | None = None
    precision: str = "fp32"
    kind: str = "layout"
    trained_on: str = "in memory"

    def score(self, prepared: PreparedGraph) -> np.ndarray:
        return score_configs(
            self.model, prepared, self.scaler, batch_size=self.batch_size, device=self.device, tta=self.tta,
            seed=self.seed, make_batch=self.make_batch, precision=self.precision,
        )  # fmt: skip


def graph_metrics(scores: np.ndarray, runtime: np.ndarray, kind: str) -> dict:
    """Per-graph metrics (`graphcost.metrics.evaluate_graph`): n_configs, kendall_tau, opa,
    top-K slowdowns, and tile_score for tile graphs. Scores: LOWER = predicted faster."""
    from graphcost import metrics

    return metrics.evaluate_graph(np.asarray(scores, dtype=np.float64), np.asarray(runtime, dtype=np.float64), kind)


def selection_metric(kind: str) -> str:
    """Metric that ranks checkpoints and folds: tau for layout, tile score for tile (TGraph §2.5.2)."""
    return "tile_score" if kind == "tile" else "kendall_tau"


@dataclass
class EvalReport:
    """Per-graph metric rows plus their mean."""

    kind: str
    rows: list[dict] = field(default_factory=list)  # each: {"graph": name, metric: value, ...}
    scores: dict[str, np.ndarray] = field(default_factory=dict)  # graph name -> (K,) scores
    skipped: list[str] = field(default_factory=list)  # graphs without usable labels (all runtimes equal, ...)

    @property
    def aggregate(self) -> dict:
        if not self.rows:
            return {}
        from graphcost import metrics

        agg = metrics.aggregate(self.rows)  # mean over graphs (TpuGraphs §5)
        agg.pop("counts", None)
        return agg

    @property
    def score(self) -> float:
        return float(self.aggregate.get(selection_metric(self.kind), float("nan")))

    def to_json(self) -> dict:
        return {"kind": self.kind, "aggregate": self.aggregate, "graphs": self.rows,
                "skipped_graphs": list(self.skipped), "n_skipped": len(self.skipped)}  # fmt: skip


def has_usable_labels(runtime: Any) -> bool:
    """A graph can be ranked: at least 2 configurations, finite runtimes, not all equal."""
    values = np.asarray(runtime, dtype=np.float64)
    return bool(values.size >= 2 and np.all(np.isfinite(values)) and np.ptp(values) > 0)


def evaluate_graphs(
    scorer: CostModel, graphs: Iterable, kind: str | None = None, progress: bool = False, total: int | None = None
) -> EvalReport:
    """Score every configuration of every graph and compute per-graph metrics.

    `graphs` may be a generator (one graph in memory at a time); then pass `kind`.
    """
    if kind is None:
        graphs = list(graphs)
        kind = graphs[0].kind if graphs else "layout"
    report = EvalReport(kind=kind)
    iterator = graphs
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(graphs, desc="evaluate", unit="graph", leave=False, total=total)
    for prepared in iterator:
        runtime = np.asarray(prepared.runtime, dtype=np.float64)
        if not has_usable_labels(runtime):
            import warnings

            where = getattr(prepared, "source", None) or prepared.name
            warnings.warn(f"{where}: config_runtime has no usable labels (fewer than 2 configurations, "
                          "non-finite or all runtimes equal); skipped", stacklevel=2)  # fmt: skip
            report.skipped.append(str(prepared.name))
            continue
        scores = scorer.score(prepared)
        row = {"graph": str(prepared.name)}
        row.update(graph_metrics(scores, runtime, kind))
        report.rows.append(row)
        report.scores[str(prepared.name)] = scores
    return report
