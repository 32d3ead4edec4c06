"""Training loop for the configuration-ranking cost models (TGraph §2.2.5, §2.4).

One optimisation step = one graph x a sample of its configurations (TGraph §2.2.5: 64 for the
default-search collections, 128 for the random ones), the layout configurations decompressed
on the fly by `graphcost.data.transforms.batching.make_batch` (in process, or, with `loader_workers`, in
DataLoader workers through `graphcost.data.pyg.tpugraphs`: the same batches). The loss is a
ranking loss over the batch (pairwise hinge by default, TGraph eq. 8); AdamW + warm-up/cosine +
clipping come from `graphcost.runs.lr_schedule`.

The budget follows the data (`graph_steps`): in one epoch a graph with K configurations gives
n_g = min(ceil(K / B), max_steps_per_graph) batches, so a graph with thousands of measured
configurations is not trained on for one batch an epoch like a graph with 64; when an epoch would
have fewer than `min_epoch_steps` steps (one or two graphs), it makes whole passes until it has
them. Every epoch then evaluates every configuration of every validation graph
(`graphcost.inference.ranking`), appends a row to `metrics.csv`, saves `checkpoint.pt` (full state,
for `--resume`) and `best.pt` (the best validation epoch). Training stops early after `patience`
epochs without a better validation score; `best.pt` is the model every command loads.

Determinism. Nothing depends on global RNG state carried across steps: the graph order of
epoch e is a permutation drawn from (seed, e); the configuration sample and the torch seed of
step s (dropout etc.) come from (seed, e, s, rank). Resuming from a checkpoint written after
step s therefore replays exactly the steps an uninterrupted run would have taken. On CPU,
`torch.use_deterministic_algorithms` is switched on, so the replay is bitwise identical; on GPU
it is left off (speed), so a resumed run matches only up to floating-point reduction order.

Data parallel (`graphcost.runs.distributed`). Under torchrun the model is trained through
DistributedDataParallel; every checkpoint stores each rank's partial-epoch accumulators and the
world size, so a killed DDP run resumed with the same number of processes ends where the
uninterrupted one would have (bitwise with 2 CPU processes, tested; with more, gloo's ring sum
may add a gradient's shares in another order after a resume, as DDP rebuilds its buckets after
the first step, so agreement is then up to rounding). Validation is sharded and gathered.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from graphcost.guards.atomic import remove_stale_temps
from graphcost.data.graph import FEATURE_VERSION
from graphcost.data.transforms.pool import LazyPrepared, graph_config_counts, graph_kinds, graph_names
from graphcost.inference.ranking import EvalReport, ModelScorer, evaluate_graphs, selection_metric
from graphcost.runs import checkpoint as ckpt
from graphcost.runs.distributed import DistContext
from graphcost.runs.lr_schedule import build_optimizer, build_scheduler, clip_gradients
from graphcost.runs.metrics_log import MetricsLog
from graphcost.train import recipe

log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    """Hyper-parameters of one training run (JSON-serialisable; stored in every checkpoint)."""

    model: str = "tgraph"
    model_config: dict = field(default_factory=dict)
    loss: str = "hinge"
    epochs: int = recipe.EPOCHS  # at most: early stopping (`patience`) may end the run sooner
    batch_configs: int | None = 64  # TGraph §2.2.5: 64 (default collections) / 128 (random); None: fit() picks
                                    # the collection's (default_batch_configs)
    max_steps_per_graph: int = recipe.MAX_STEPS_PER_GRAPH  # min(ceil(K / batch_configs), this) batches a graph (0: no cap)
    min_epoch_steps: int = recipe.MIN_EPOCH_STEPS  # a shorter epoch makes whole passes until it has them (1: one pass)
    patience: int = recipe.PATIENCE  # stop after this many epochs without a better validation score (0: never)
    lr: float = recipe.LR  # TGraph §2.4.2
    weight_decay: float = 1e-5
    warmup_frac: float = 0.05
    clip_norm: float = 1.0
    seed: int = 0
    device: str = "auto"
    eval_batch: int = 128  # TGraph §2.5.3
    eval_tta: int = 0  # permutations at validation time (0/1 = none)
    checkpoint_every: int = 0  # also checkpoint every N steps inside an epoch (0: epoch ends only)
    progress: bool = True
    plots: bool = True
    loader_workers: int = 0  # >0: batches built by DataLoader worker processes (same batches, overlapped)

    def __post_init__(self) -> None:
        """Every field checked (`graphcost.train.checks`): ArgumentError naming the first unusable one."""
        from graphcost.train.checks import check_train_config

        check_train_config(self)


RESUME_FREE = ("device", "progress", "plots", "checkpoint_every", "loader_workers")  # may change between resumes


def default_batch_configs(collection: str | None) -> int:
    """TGraph §2.2.5: 128 configurations per batch for random-search collections, else 64."""
    return 128 if collection and collection.endswith(":random") else 64


def graph_steps(counts: Sequence[int], batch_configs: int, max_steps_per_graph: int = 8,
                min_epoch_steps: int = 1) -> np.ndarray:
    """(G,) int64 batches of each graph in one epoch: the budget follows the configurations.

        n_g = min(ceil(K_g / B), cap) * P,    P = ceil(min_epoch_steps / Σ_g min(ceil(K_g / B), cap))

    K_g configurations of graph g, B = batch_configs, cap = max_steps_per_graph (0: none). A graph
    always gives at least one batch; P whole passes keep a one-graph epoch from being one step."""
    if batch_configs < 1:
        raise ValueError(f"batch_configs must be >= 1, got {batch_configs}")
    per = np.maximum(1, -(-np.asarray(counts, dtype=np.int64) // batch_configs))  # (G,) ceil(K / B)
    if max_steps_per_graph > 0:
        per = np.minimum(per, max_steps_per_graph)
    passes = max(1, -(-int(min_epoch_steps) // int(per.sum()))) if len(per) else 1
    return per * passes


def step_seed(seed: int, epoch: int, step: int, rank: int = 0) -> int:
    """A 32-bit seed derived only from the position (seed, epoch, step, rank)."""
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, epoch, step, rank]).generate_state(1)[0])


def epoch_order(steps: int | Sequence[int] | np.ndarray, seed: int, epoch: int) -> np.ndarray:
    """The graph visiting order of `epoch`, a permutation drawn from (seed, epoch) only: of
    range(steps) for an int (one batch per graph), else of graph g repeated steps[g] times."""
    counts = np.asarray(steps, dtype=np.int64)
    items = np.arange(int(counts)) if counts.ndim == 0 else np.repeat(np.arange(len(counts)), counts)
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, epoch, 0xE0C4]).permutation(items)


def seed_everything(seed: int, deterministic: bool = True) -> None:
    """Seed python / numpy / torch; switch torch's deterministic-kernels mode on (CPU runs) or off
    (GPU runs: speed). The mode is process-wide, so it is set either way: a GPU run after a CPU
    run in the same process must not inherit it (CUDA scatter / index_add would then warn on
    every step and take slower deterministic paths)."""
    random.seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(deterministic, warn_only=True)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


@dataclass
class TrainResult:
    history: list[dict]
    best_score: float
    best_path: Path | None
    last_path: Path
    last_report: object | None = None


class Trainer:
    """Trains one model on prepared graphs; writes checkpoints, metrics.csv and plots to `out_dir`.

    What it trains and how a batch is built can be given (None: the config's, by name):

        build_model(name, kind, **config) -> nn.Module   the model (default `models.registry.build_model`;
                                                         called after seeding, so initialisation follows the seed)
        loss(scores (B,), runtime (B,)) -> Tensor         the loss (default `models.losses.get_loss(config.loss)`)
        make_batch(graph, idx, scaler) -> GraphBatch      (default `graphcost.data.transforms.batching.make_batch`)
        sample(graph, batch_configs, rng) -> indices      (default `batching.sample_config_indices`)
    """

    def __init__(
        self,
        config: TrainConfig,
        train_graphs: Sequence,
        valid_graphs: Sequence,
        out_dir: str | Path,
        *,
        scaler=None,
        dist_ctx: DistContext | None = None,
        build_model: Callable[..., torch.nn.Module] | None = None,
        loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
        make_batch: Callable | None = None,
        sample: Callable | None = None,
    ) -> None:
        if not train_graphs:
            raise ValueError("no training graphs")
        kinds = set(graph_kinds(train_graphs)) | set(graph_kinds(valid_graphs))
        if len(kinds) != 1:
            raise ValueError(f"training and validation graphs mix kinds {sorted(kinds)}; train on one collection "
                             "(tile:xla, or one of the layout collections)")
        if config.batch_configs is None:
            raise ValueError("TrainConfig.batch_configs is None: give a number (default_batch_configs(collection))")
        self.batch_configs: int = config.batch_configs
        from graphcost.data.transforms import batching
        from graphcost.models import registry
        from graphcost.models.losses import get_loss

        self.kind = kinds.pop()
        self.config = config
        self.train_graphs = train_graphs if isinstance(train_graphs, LazyPrepared) else list(train_graphs)
        self.valid_graphs = valid_graphs if isinstance(valid_graphs, LazyPrepared) else list(valid_graphs)
        self.train_names = graph_names(self.train_graphs)
        self.out_dir = Path(out_dir)
        self.dist = dist_ctx or DistContext()
        self.device = self.dist.device(config.device)
        self.metric = selection_metric(self.kind)
        self.make_batch = make_batch or batching.make_batch
        self.sample = sample or batching.sample_config_indices
        self.loss_fn = loss or get_loss(config.loss)

        seed_everything(config.seed, deterministic=self.device.type == "cpu")  # GPU: speed over bitwise repeatability
        if scaler is None:
            from graphcost.data.transforms.scaler import FeatureScaler

            scaler = FeatureScaler()
            fitted = scaler.fit(self.train_graphs)  # fit on TRAIN graphs only
            scaler = fitted if fitted is not None else scaler
        self.scaler = scaler
        build_model = build_model or registry.build_model
        torch.manual_seed(config.seed)  # parameter initialisation depends on the seed only
        base = build_model(config.model, self.kind, **config.model_config)
        self.spec = registry.model_spec(base, name=config.model, kind=self.kind)
        self.model = base.to(self.device)  # the bare model: checkpoints, validation
        self.train_model = self.dist.wrap(self.model)  # DistributedDataParallel under torchrun, else the model
        self.optimizer = build_optimizer(self.model, config.lr, config.weight_decay)
        self.graph_steps = graph_steps(graph_config_counts(self.train_graphs), self.batch_configs,
                                       config.max_steps_per_graph, config.min_epoch_steps)  # (G,)
        self.steps_per_epoch = self.dist.steps_per_epoch(int(self.graph_steps.sum()))
        self.total_steps = max(1, self.steps_per_epoch * config.epochs)
        self.scheduler = build_scheduler(self.optimizer, self.total_steps, config.warmup_frac)
        self.history: list[dict] = []
        self.best_score = -math.inf
        self.best_epoch = 0  # the epoch (1-based) best.pt holds; 0: none yet
        self.epoch = 0  # epochs completed
        self.step = 0  # steps completed inside the current epoch
        self.partial = {"loss_sum": 0.0, "steps": 0, "configs": 0, "seconds": 0.0, "skipped": 0}
        self.last_report: EvalReport | None = None

    # ------------------------------------------------------------------ paths / state
    @property
    def last_path(self) -> Path:
        return self.out_dir / "checkpoint.pt"

    @property
    def best_path(self) -> Path:
        return self.out_dir / "best.pt"

    def _model_payload(self) -> dict:
        return {
            "model_spec": self.spec,
            "model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
            "scaler": self.scaler.state_dict(),
            "train_config": dataclasses.asdict(self.config),
            "kind": self.kind,
            "metric": self.metric,
            "feature_version": FEATURE_VERSION,
        }

    def state_dict(self) -> dict:
        """Everything `--resume` needs (tensors and plain values only)."""
        state = self._model_payload()
        state.update(
            optimizer=self.optimizer.state_dict(),
            scheduler=self.scheduler.state_dict(),
            rng=ckpt.capture_rng_state(),
            epoch=self.epoch,
            step=self.step,
            partial=dict(self.partial),
            history=[dict(r) for r in self.history],
            best_score=float(self.best_score),
            best_epoch=int(self.best_epoch),
            train_graphs=list(self.train_names),
            world_size=self.dist.world_size,
        )
        return state

    def load_state_dict(self, state: dict) -> None:
        if state.get("train_graphs") is not None and list(state["train_graphs"]) != self.train_names:
            raise ckpt.CheckpointError(
                f"{self.last_path}: checkpoint was trained on a different set of training graphs; "
                "resume with the same --data-dir / --collection / --max-graphs / --folds"
            )
        mine = {k: v for k, v in dataclasses.asdict(self.config).items() if k not in RESUME_FREE}
        theirs = {k: v for k, v in state.get("train_config", {}).items() if k not in RESUME_FREE}
        changed = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
        if changed:
            raise ckpt.CheckpointError(
                f"{self.last_path}: cannot resume with different settings ({', '.join(changed)}); a resumed run "
                "must use the settings of the interrupted one to end where it would have"
            )
        saved_world = int(state.get("world_size", self.dist.world_size))
        if saved_world != self.dist.world_size:
            raise ckpt.CheckpointError(
                f"{self.last_path}: checkpoint was written by {saved_world} data-parallel process(es), this run has "
                f"{self.dist.world_size}; resume with the same torchrun --nproc_per_node (the steps of an epoch depend on it)"
            )
        ckpt.check_weight_dtypes(self.model, state["model"], self.last_path)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        ckpt.restore_rng_state(state["rng"])
        self.epoch, self.step = int(state["epoch"]), int(state["step"])
        partials = state.get("partials")  # one per rank (older checkpoints: rank 0's only)
        self.partial = dict(partials[self.dist.rank] if partials else state["partial"])
        self.history = [dict(r) for r in state["history"]]
        self.best_score = float(state["best_score"])
        self.best_epoch = int(state.get("best_epoch", 0))

    def save(self) -> None:
        """Write checkpoint.pt (rank 0). Called by every rank: each rank's partial-epoch
        accumulators are gathered into it, so a resumed rank continues its own loss sum."""
        partials = self.dist.all_gather_object(dict(self.partial))
        if self.dist.is_main:
            state = self.state_dict()
            state["partials"] = partials
            ckpt.save_checkpoint(self.last_path, state)

    # ------------------------------------------------------------------ training
    def _loader_items(self):
        """Iterator over the remaining steps of the run (from self.epoch, self.step) as PyG Data built by
        `loader_workers` DataLoader workers (`TpuGraphsDataset`), with the in-process path's samples.
        One loader for all epochs: workers start once and prepare the next epoch during validation."""
        from torch.utils.data import DataLoader

        from graphcost.data.transforms import batching
        from graphcost.data.pyg.tpugraphs import SampleKey, TpuGraphsDataset

        cfg = self.config
        if self.make_batch is not batching.make_batch or self.sample is not batching.sample_config_indices:
            raise ValueError(
                "loader_workers > 0 builds batches with graphcost.data.transforms.batching; give no make_batch / sample"
            )
        dataset = TpuGraphsDataset.from_prepared(self.train_graphs, self.scaler, batch_configs=self.batch_configs)
        keys = [
            SampleKey(int(order[s]), step_seed(cfg.seed, epoch, s, self.dist.rank))
            for epoch in range(self.epoch, cfg.epochs)
            for order in [self.dist.shard(epoch_order(self.graph_steps, cfg.seed, epoch))]
            for s in range(self.step if epoch == self.epoch else 0, len(order))
        ]
        # A process that has imported JAX must not fork (JAX's threads can deadlock the child): its
        # workers are spawned, at the cost of sending them the dataset. `graphcost train` never imports JAX.
        context = "spawn" if cfg.loader_workers and "jax" in sys.modules else None
        return iter(DataLoader(dataset, batch_size=None, sampler=keys, num_workers=cfg.loader_workers,
                               pin_memory=self.device.type == "cuda", multiprocessing_context=context))  # fmt: skip

    def _train_step(self, graph, epoch: int, step: int, item=None) -> None:
        """One optimisation step on `graph` (a PreparedGraph), or on `item` (a Data from `_loader_items`)."""
        cfg = self.config
        torch.manual_seed(step_seed(cfg.seed, epoch, step, self.dist.rank))
        # float64 labels: layout runtimes (~1e9 ns) in float32 would merge close runtimes into ties;
        # the losses accept (float32 scores, float64 runtime)
        if item is None:
            rng = np.random.default_rng(step_seed(cfg.seed, epoch, step, self.dist.rank))
            idx = np.asarray(self.sample(graph, self.batch_configs, rng), dtype=np.int64)  # (B,)
            batch = self.make_batch(graph, idx, self.scaler)
            runtime = torch.from_numpy(np.asarray(graph.runtime, dtype=np.float64)[idx])  # (B,)
        else:
            from graphcost.data.pyg.tpugraphs import data_to_batch

            batch, runtime, idx = data_to_batch(item), item.y, item.config_index  # sampled by a worker
        batch, runtime = batch.to(self.device), runtime.to(self.device)
        scores = self.train_model(batch)  # (B,) LOWER = faster
        loss = self.loss_fn(scores, runtime)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()  # under DDP: gradients averaged over ranks
        norm = clip_gradients(self.model, cfg.clip_norm)  # TGraph §2.4.2
        if math.isfinite(norm):  # the norm of averaged gradients: the same decision on every rank
            self.optimizer.step()
        else:  # gradient explosion (TGraph §2.4.3 notes rare "parameter corruption"): skip this update
            self.optimizer.zero_grad(set_to_none=True)
            self.partial["skipped"] += 1
        self.scheduler.step()
        self.partial["loss_sum"] += float(loss.detach().item()) if torch.isfinite(loss).item() else 0.0
        self.partial["steps"] += 1
        self.partial["configs"] += int(idx.shape[0])

    def evaluate(self) -> EvalReport:
        """Validation metrics over ALL configurations of each validation graph.

        Each rank scores its share of the graphs (`DistContext.shard_items`); the per-graph
        results are gathered on every rank and put back in the graphs' order, so the report (and
        the selection metric, a mean over graphs) is the one a single process computes.
        """
        cfg = self.config
        scorer = ModelScorer(self.model, self.scaler, cfg.eval_batch, self.device, cfg.eval_tta, cfg.seed,
                             self.make_batch, kind=self.kind, trained_on=str(self.out_dir))
        mine = [(i, evaluate_graphs(scorer, [self.valid_graphs[i]], self.kind))
                for i in self.dist.shard_items(len(self.valid_graphs))]  # fmt: skip
        report = EvalReport(kind=self.kind)
        for _, part in sorted((p for rank in self.dist.all_gather_object(mine) for p in rank), key=lambda p: p[0]):
            report.rows += part.rows
            report.scores.update(part.scores)
            report.skipped += part.skipped
        return report

    def fit(self, resume: bool = False, step_callback: Callable | None = None) -> TrainResult:
        """Train for `config.epochs` epochs (continuing from `checkpoint.pt` when `resume`)."""
        from tqdm.auto import tqdm

        cfg = self.config
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if resume and self.dist.is_main:  # a write killed mid-way leaves its temp file behind
            remove_stale_temps(self.out_dir)
        if resume:
            self.dist.barrier()  # every rank reads the checkpoint rank 0 has finished with
        if resume and self.last_path.is_file():
            try:
                self.load_state_dict(ckpt.load_checkpoint(self.last_path))
            except (KeyError, TypeError, AttributeError, RuntimeError) as exc:  # an entry missing or malformed
                what = f"key {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                raise ckpt.CheckpointError(f"{self.last_path}: cannot resume from this checkpoint ({what})") from None
        writer = MetricsLog(self.out_dir, start_epoch=self.epoch) if self.dist.is_main else None  # metrics.csv + TensorBoard
        items = self._loader_items() if cfg.loader_workers else None
        if not self.stopped_early():
            self._say(self.budget_line())
        first = None  # (seconds, steps) after the first step of the run, for the estimate
        for epoch in range(self.epoch, cfg.epochs):
            if self.stopped_early():
                break
            order = self.dist.shard(epoch_order(self.graph_steps, cfg.seed, epoch))
            self.model.train()
            bar = tqdm(
                total=len(order), initial=self.step, desc=f"epoch {epoch + 1}/{cfg.epochs}", unit="batch",
                disable=not (cfg.progress and self.dist.is_main), leave=False,
            )
            for step in range(self.step, len(order)):
                t0 = time.perf_counter()  # includes waiting for a loader worker's batch
                if items is None:
                    self._train_step(self.train_graphs[order[step]], epoch, step)
                else:
                    self._train_step(None, epoch, step, next(items))
                self.partial["seconds"] += time.perf_counter() - t0
                self.step = step + 1
                if epoch == 0 and self.step == 1:  # the first step pays one-off costs: time the next ones
                    first = (self.partial["seconds"], self.partial["steps"])
                if epoch == 0 and first is not None and self.step == min(6, len(order)) and self.partial["steps"] > first[1]:
                    per_step = (self.partial["seconds"] - first[0]) / (self.partial["steps"] - first[1])
                    self._say(self.estimate_line(per_step))
                bar.update(1)
                bar.set_postfix(loss=f"{self.partial['loss_sum'] / max(1, self.partial['steps']):.4f}")
                if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0 and self.step < len(order):
                    self.save()
                if step_callback is not None:
                    step_callback(self, epoch, self.step)
            bar.close()
            self._end_epoch(epoch, writer)
            self._say(self.epoch_line(self.history[-1]))
        if writer is not None:
            writer.close()
        if self.dist.is_main and cfg.plots:
            self._plots()
        self.dist.barrier()
        return TrainResult(
            self.history, self.best_score, self.best_path if self.best_path.exists() else None, self.last_path,
            self.last_report,
        )

    def stopped_early(self) -> bool:
        """Whether `patience` epochs have passed since the best validation epoch."""
        p = self.config.patience
        return bool(p and self.valid_graphs and self.epoch - self.best_epoch >= p and self.step == 0)

    def _say(self, message: str) -> None:
        """One line for the user (rank 0), through the `graphcost.train.trainer` logger (INFO)."""
        if self.dist.is_main:
            log.info(message)

    def budget_line(self) -> str:
        cfg, total = self.config, int(self.graph_steps.sum())
        cap = f"at most {cfg.max_steps_per_graph} per graph" if cfg.max_steps_per_graph else "no cap per graph"
        stop = (f"; stops after {cfg.patience} epochs without a better valid {self.metric}"
                if cfg.patience and self.valid_graphs else "")  # early stopping needs validation graphs
        return (f"budget: up to {cfg.epochs} epochs x {self.steps_per_epoch} steps ({len(self.train_graphs)} training "
                f"graphs, {cfg.batch_configs} configurations a batch, {cap}; {total} batches an epoch){stop}")

    def estimate_line(self, step_s: float) -> str:
        left = self.steps_per_epoch * self.config.epochs
        return (f"estimate: {step_s:.2f} s a step -> up to {_duration(step_s * left)} of training for "
                f"{left} steps" + (", plus validation each epoch" if self.valid_graphs else ""))

    def epoch_line(self, row: dict) -> str:
        valid = f", valid {self.metric} {row['valid_' + self.metric]:.4f}" if f"valid_{self.metric}" in row else ""
        return (f"epoch {row['epoch']}/{self.config.epochs}: train loss {row['train_loss']:.4f}{valid} "
                f"(best {self.best_score:.4f} at epoch {self.best_epoch}), {row['train_seconds']:.0f} s")

    def _end_epoch(self, epoch: int, writer) -> None:
        part = self.partial
        row = {
            "epoch": epoch + 1,
            "steps": int(part["steps"]),
            "lr": float(self.scheduler.get_last_lr()[0]),
            "train_loss": self.dist.all_reduce_mean(part["loss_sum"] / max(1, part["steps"])),
            "skipped_steps": int(part["skipped"]),
            "train_seconds": float(part["seconds"]),
            "configs_per_s": float(part["configs"] * self.dist.world_size / max(part["seconds"], 1e-9)),
        }
        if self.valid_graphs:  # every rank scores its share (under DDP)
            report = self.evaluate()
            self.last_report = report
            row.update({f"valid_{k}": v for k, v in report.aggregate.items() if k not in ("n_graphs", "n_configs")})
            score = report.score
        else:
            score = -row["train_loss"]  # no validation split: keep the lowest training loss
        self.history.append(row)
        self.epoch, self.step = epoch + 1, 0
        self.partial = {"loss_sum": 0.0, "steps": 0, "configs": 0, "seconds": 0.0, "skipped": 0}
        if math.isfinite(score) and score > self.best_score:  # the same score on every rank (gathered report)
            self.best_score, self.best_epoch = float(score), epoch + 1
            if self.dist.is_main:
                payload = self._model_payload()
                payload.update(epoch=epoch + 1, score=float(score))
                ckpt.save_checkpoint(self.best_path, payload)
        self.save()  # every rank: the accumulators are gathered
        if writer is not None:  # rank 0
            writer.log(self.history)
        self.dist.barrier()

    def _plots(self) -> None:
        from graphcost.train import plots

        paths = plots.plot_run(self.out_dir, self.history, self.last_report, self.valid_graphs, self.config, self.kind)
        self._say("plots: " + ", ".join(str(p) for p in paths))


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
