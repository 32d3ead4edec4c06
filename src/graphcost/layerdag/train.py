"""Training LayerDAG: the three modules together, teacher-forced over all layers (LayerDAG §III-D).

AdamW on the summed loss (layer-size CE + node-attribute x̂_0 CE + edge x̂_0 BCE). The three
modules have disjoint parameters (`graphcost.layerdag.model.MODULES`) and gradients are clipped per
module, so this is exactly three independent trainings in one loop (paper §III). Optional
cosine decay (`lr_decay="cosine"`): lr_k = lr · ½(1 + cos(π k / K)) at step k of K = epochs ×
steps per epoch (`graphcost.runs.lr_schedule.warmup_cosine_factor` without warm-up) — a function of
the step, so resuming with the same `epochs` is exact. A checkpoint (`checkpoint.pt` in the run
directory; `graphcost.runs.checkpoint.atomic_torch_save`) is written after every epoch with the model
config, weights, optimiser state, the torch generator state and the history; `resume=True`
continues from it and gives the same result as an uninterrupted run (per-epoch shuffles are
seeded by (seed, epoch)). Each epoch's losses also go to `metrics.csv` (and TensorBoard, with the
`tensorboard` extra) through `graphcost.runs.metrics_log`, as for `graphcost train`. The networks train on `device` (CUDA when present by default); the
diffusion noise is drawn on CPU (`LayerDAG.loss`) and checkpoints hold CPU tensors, so a run
started on a GPU resumes on a CPU and the other way round. On CPU training is bitwise
deterministic; on CUDA, scatter-add atomics make it repeatable only up to float rounding. With a validation split, `best.pt` holds the selected weights
(fixed-noise teacher-forced validation loss):
- `select="module"` (default): each module keeps the weights of ITS OWN lowest validation loss
  (layer-size CE, node CE, edge BCE), so an early-overfitting size predictor does not drag the
  edge model back to an early epoch; best.pt records each module's epoch (`module_epochs`);
- `select="total"`: the weights of the epoch with the lowest summed validation loss.
best.pt is rewritten atomically whenever a selection changes; `load_model(run_dir)` prefers it
(`last=True` for the final weights). On resume the best losses are recomputed from the history
and the per-module best weights are read back from best.pt, so resuming stays exact.
With `ema_decay` β > 0 an exponential moving average of the weights, θ̄ ← β θ̄ + (1 − β) θ after every
optimiser step (θ̄ = θ at the first; `torch.optim.swa_utils.AveragedModel`), is what gets validated,
selected into best.pt and stored as checkpoint.pt's `model`; the raw weights the optimiser works on
are kept beside it (`train_model`) for resuming. An addition, not in the LayerDAG paper (common
practice for diffusion models since DDPM, Ho et al. 2020).
With `label_balance` α > 0 each epoch draws as many graphs as the train split has, with replacement,
with p_i ∝ f(z_i)^-α (`label_balance_weights`; f a kernel density of the normalised labels), so a
conditional model sees its rare labels more often. Also an addition, not in the paper.
Checkpoints are read with `torch.load(weights_only=True)` (`graphcost.runs.checkpoint.load_checkpoint`);
a damaged one is a `CheckpointError` (a ValueError) naming the file and the key.

`LayerDAGTrainer` is the run (`fit`); `train_layerdag` is its one-call form.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm import tqdm

from graphcost.guards.atomic import remove_stale_temps
from graphcost.guards.bounds import DIFFUSION_STEPS_MAX, GRAPHS_MAX, ArgumentError, check_fits_memory, check_int, check_real, check_seed
from graphcost.layerdag import dag_recipe
from graphcost.layerdag.batch import PreparedDAG, build_batch, dataset_statistics, prepare
from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.model import MODULES, LayerDAG, LayerDAGConfig, label_normalisation
from graphcost.memory import release_free_memory
from graphcost.runs import checkpoint as ckpt
from graphcost.runs.checkpoint import atomic_torch_save
from graphcost.runs.distributed import resolve_device
from graphcost.runs.lr_schedule import adamw_training_bytes, warmup_cosine_factor
from graphcost.runs.metrics_log import MetricsLog

CHECKPOINT = "checkpoint.pt"
BEST = "best.pt"  # lowest validation loss so far (model selection against overfitting)


@dataclass
class LayerDAGTrainConfig:
    """The training settings of `train_layerdag` (the recipe of `graphcost.layerdag.dag_recipe` by default). Every field
    is checked when the config is built (`__post_init__`): `graphcost.guards.bounds.ArgumentError` naming the
    first field that cannot be used, with the bounds of `graphcost dag train`'s options."""

    epochs: int = 40
    batch_size: int = 32  # graphs per step (each expands to all its layers)
    lr: float = dag_recipe.LR  # graphcost.layerdag.dag_recipe: the benchmarked recipe
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    seed: int = 0
    size: str = "small"
    select: str = "module"  # best.pt: 'module' = per-module best validation loss; 'total' = best summed loss
    lr_decay: str = dag_recipe.LR_DECAY  # 'cosine': lr · ½(1 + cos(π · step / total steps)) over cfg.epochs (a function of the step, so resume is exact)
    device: str = "auto"  # auto (CUDA when present) | cpu | cuda | cuda:N; may change between resumes
    ema_decay: float = 0.0  # > 0: validate, select and sample with an EMA of the weights (decay per step); 0 = off
    label_balance: float = 0.0  # α > 0: draw graphs ∝ label density^-α (rare labels more often; see label_balance_weights)

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs, 1)
        check_int("batch_size", self.batch_size, 1, GRAPHS_MAX)
        check_real("lr", self.lr, 0.0, lo_open=True)
        check_real("weight_decay", self.weight_decay, 0.0)
        check_real("grad_clip", self.grad_clip, 0.0, lo_open=True)
        check_seed("seed", self.seed)
        for name, choices in (("size", ("small", "paper")), ("select", ("module", "total")),
                              ("lr_decay", ("none", "cosine"))):
            if getattr(self, name) not in choices:
                raise ArgumentError(f"{name} must be {' or '.join(choices)}, got {getattr(self, name)!r}")
        if not isinstance(self.device, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", self.device):
            raise ArgumentError(f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        if not 0 <= check_real("ema_decay", self.ema_decay) < 1:
            raise ArgumentError(f"ema_decay must be in [0, 1), got {self.ema_decay}")
        check_real("label_balance", self.label_balance, 0.0)


def _labels(graphs: list[PreparedDAG]) -> torch.Tensor:
    return torch.tensor([np.nan if g.label is None else g.label for g in graphs], dtype=torch.float32)


# bounds of the model's integer fields a caller may override (`train_layerdag(**model_overrides)`)
_INT_BOUNDS = {"T_node": (1, DIFFUSION_STEPS_MAX), "T_edge": (1, DIFFUSION_STEPS_MAX), "dim": (1, 8192), "heads": (1, 256)}


def _checked_override(name: str, value, default):
    """A model override of the type of its default, in range: ArgumentError naming it."""
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ArgumentError(f"{name} must be True or False, got {value!r}")
        return value
    if isinstance(default, int):
        return check_int(name, value, *_INT_BOUNDS.get(name, (0, GRAPHS_MAX)))
    if isinstance(default, float):
        if name in ("label_dropout", "edge_density") and not 0 <= check_real(name, value) < 1:
            raise ArgumentError(f"{name} must be in [0, 1), got {value}")
        return check_real(name, value)
    raise ArgumentError(f"{name} is set from the training graphs, not overridden")


def build_model(train_dags: list[DAG], size: str = "small", num_categories: int | None = None, **overrides) -> tuple[LayerDAG, list[PreparedDAG]]:
    """A fresh LayerDAG whose marginals, size limits and label normalisation come from `train_dags`."""
    prepared = [prepare(d) for d in train_dags]
    if not prepared:
        raise ValueError("no training graphs")
    seen = max(int(g.attr.max()) for g in prepared) + 1
    C = num_categories or seen
    if seen > C:
        raise ValueError(f"node attribute {seen - 1} is out of range for {C} categories")
    stats = dataset_statistics(prepared, C)
    stats.update(label_normalisation([g.label for g in prepared]))
    stats["num_categories"] = C
    cfg = LayerDAGConfig.sized(size, **stats)
    for k, v in overrides.items():
        if not hasattr(cfg, k):
            raise ArgumentError(f"{k} is not a LayerDAG config field (graphcost.layerdag.model.LayerDAGConfig)")
        setattr(cfg, k, _checked_override(k, v, getattr(cfg, k)))
    if cfg.label_dropout and not cfg.conditional:
        raise ValueError("label_dropout (classifier-free guidance) needs labelled training graphs: every graph needs a "
                         "finite label")
    check_buildable(cfg, overrides)
    return LayerDAG(cfg), prepared


def check_buildable(cfg: LayerDAGConfig, overrides: dict) -> None:
    """ArgumentError, naming the override to blame, when the attention's heads do not divide `dim`, or when the
    model's weights, gradients and AdamW state (16 bytes a parameter) exceed the memory this process may use. The
    model is built on PyTorch's meta device for the count, so nothing is allocated (`dim=8192` built
    5.7 billion parameters, 23 GB, before anything was checked)."""
    blame = next((k for k in ("dim", "heads", "T_node", "T_edge") if k in overrides), next(iter(overrides), "size"))
    if cfg.dim % cfg.heads:
        name = "heads" if "heads" in overrides else "dim"
        raise ArgumentError(f"{name}: dim {cfg.dim} must be a multiple of heads {cfg.heads} (each head takes dim / heads)")
    params, need = adamw_training_bytes(lambda: LayerDAG(cfg))
    check_fits_memory(blame, overrides.get(blame, ""), need,
                      f"a LayerDAG of {params:.3g} parameters (weights, gradients and AdamW state)")


def _cpu(state):
    """A (nested) state dict with every tensor on CPU, so checkpoints load on any device."""
    if isinstance(state, torch.Tensor):
        return state.detach().cpu()
    if isinstance(state, dict):
        return {k: _cpu(v) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_cpu(v) for v in state)
    return state


def checkpoint_path(path: str | Path, last: bool = False) -> Path:
    """The checkpoint file for a run directory (best.pt if present and not `last`) or a file path."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such LayerDAG run directory or checkpoint file")
    if path.is_dir():
        best = path / BEST
        path = best if not last and best.is_file() else path / CHECKPOINT
    if not path.is_file():
        raise FileNotFoundError(f"no LayerDAG checkpoint at {path}")
    return path


def load_checkpoint(path: str | Path, last: bool = True) -> dict:
    """Read a run directory's checkpoint (or a checkpoint file) safely; a directory gives its
    checkpoint.pt, or best.pt when present and `last` is False."""
    return ckpt.load_checkpoint(checkpoint_path(path, last), required=("model_config", "model"), kind="LayerDAG")


def load_model(path: str | Path, last: bool = False) -> LayerDAG:
    """The model of a run directory (best.pt when present unless `last`) or of a checkpoint file."""
    path = checkpoint_path(path, last)
    model = model_from_checkpoint(load_checkpoint(path), path)
    model.eval()
    return model


def model_from_checkpoint(state: dict, path: Path, key: str = "model") -> LayerDAG:
    """The LayerDAG described by a checkpoint's `model_config` with the weights of `state[key]`; a
    CheckpointError (a ValueError) naming `path` and the key when the config or the weight shapes do
    not fit."""
    config = state["model_config"]
    if not isinstance(config, dict):
        raise ckpt.CheckpointError(
            f"{path}: key 'model_config': expected a dict of LayerDAG settings, got {type(config).__name__}"
        )
    try:
        model = LayerDAG(LayerDAGConfig(**config))
    except Exception as exc:  # noqa: BLE001 - unknown fields, wrong types or values of any kind
        raise ckpt.CheckpointError(f"{path}: key 'model_config': cannot build a LayerDAG ({type(exc).__name__}: "
                                   f"{str(exc).splitlines()[0] if str(exc) else ''})") from None  # fmt: skip
    if key not in state:
        raise ckpt.CheckpointError(f"{path}: key '{key}': missing from checkpoint")
    ckpt.check_weight_dtypes(model, state[key], path, key)
    try:
        model.load_state_dict(state[key])
    except (RuntimeError, TypeError, AttributeError, ValueError) as exc:  # shapes, missing/unexpected keys
        lines = [line.strip() for line in str(exc).strip().splitlines()]
        detail = " ".join(lines[1:3]) or (lines[0] if lines else "")
        raise ckpt.CheckpointError(
            f"{path}: key '{key}': weights do not fit the checkpoint's model_config ({detail})"
        ) from None
    return model


class _BestSelector:
    """Keeps best.pt up to date: per-module (select='module') or whole-model ('total') selection.

    Per module m the criterion is history's `valid_<m>`; a tie keeps the later epoch. The selected
    weights of each module live in memory (`self.states`) and are merged into one state_dict."""

    def __init__(self, select: str, history: list[dict], path: Path, resume: bool):
        if select not in ("module", "total"):
            raise ValueError(f"select must be 'module' or 'total', got '{select}'")
        self.select, self.path = select, path
        keys = {"total": ("loss",), "module": tuple(MODULES)}[select]
        self.best = {k: float("inf") for k in keys}  # criterion name -> best validation loss so far
        self.epochs = {k: 0 for k in keys}
        for r in history:  # recompute from the history on resume (same ties rule as update)
            for k in keys:
                if f"valid_{k}" in r and r[f"valid_{k}"] <= self.best[k]:
                    self.best[k], self.epochs[k] = r[f"valid_{k}"], r["epoch"]
        self.states: dict[str, dict] = {}
        if not path.is_file():  # no saved selection to resume from (e.g. deleted): select afresh
            self.best = {k: float("inf") for k in keys}
            self.epochs = {k: 0 for k in keys}
        elif resume and any(self.epochs.values()):
            saved = load_checkpoint(path)
            merged = saved["model"]
            for m in MODULES:
                self.states[m] = {k: v for k, v in merged.items() if LayerDAG.module_of(k) == m}

    def update(self, model: LayerDAG, rec: dict, cfg: LayerDAGTrainConfig) -> None:
        changed = False
        for k in self.best:
            if rec[f"valid_{k}"] <= self.best[k]:
                self.best[k], self.epochs[k] = rec[f"valid_{k}"], rec["epoch"]
                for m in (MODULES if k == "loss" else (k,)):
                    self.states[m] = model.module_state(m)
                changed = True
        if not changed:
            return
        merged = {k: v for m in MODULES for k, v in self.states[m].items()}
        module_epochs = {m: self.epochs["loss" if self.select == "total" else m] for m in MODULES}
        atomic_torch_save({"model_config": asdict(model.config), "train_config": asdict(cfg), "model": merged,
                           "select": self.select, "epoch": max(module_epochs.values()), "module_epochs": module_epochs,
                           "valid_loss": sum(self.best.values()) if self.select == "module" else self.best["loss"],
                           "module_valid": {k: self.best[k] for k in self.best}}, self.path)  # fmt: skip


def label_balance_weights(labels: list[float], model: LayerDAG, alpha: float, bandwidth: float = 0.25) -> np.ndarray:
    """(n,) sampling probabilities p_i ∝ f(z_i)^-α over the training graphs, with z the model's normalised
    label (log, standardised) and f a Gaussian kernel density estimate of the z's (bandwidth in standard
    deviations). α = 0: uniform; α = 1: about uniform over the label range, so graphs with rare labels (the
    tails that a conditional generator otherwise fits worst) are drawn as often as common ones. An
    addition, not in the LayerDAG paper."""
    z = model.normalise_label(torch.tensor(labels)).double().numpy()  # (n,)
    dens = np.exp(-0.5 * ((z[:, None] - z[None, :]) / bandwidth) ** 2).mean(1)  # (n,) up to a constant
    w = dens ** -alpha
    return w / w.sum()


def _ema(model: LayerDAG, decay: float) -> AveragedModel | None:
    """An EMA copy of `model` (θ̄ ← decay · θ̄ + (1 − decay) · θ per `update_parameters`), or None for decay 0."""
    if not decay:
        return None
    return AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))


@torch.no_grad()
def evaluate_loss(model: LayerDAG, graphs: list[PreparedDAG], batch_size: int, seed: int = 0) -> dict[str, float]:
    """Mean teacher-forced losses on `graphs` with fixed noise (for validation)."""
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    sums: dict[str, float] = {}
    n = 0
    for i in range(0, len(graphs), batch_size):
        part = graphs[i : i + batch_size]
        out = model.loss(build_batch(part), _labels(part), gen)
        for k, v in out.items():
            sums[k] = sums.get(k, 0.0) + float(v) * len(part)
        n += len(part)
    model.train()
    return {k: v / max(1, n) for k, v in sums.items()}


class LayerDAGTrainer:
    """One LayerDAG training run in `out_dir` (see the module doc): `fit()` trains, or resumes from
    `checkpoint.pt`, and returns (the model to use, the per-epoch history).

    `__init__` checks the config and builds the model and its optimiser (after seeding torch with
    `config.seed`, so the initial weights depend on the seed only); `fit` restores a checkpoint when
    resuming and runs the remaining epochs, each one `_epoch` then `_save`."""

    def __init__(
        self,
        train_dags: list[DAG],
        out_dir: str | Path,
        config: LayerDAGTrainConfig | None = None,
        valid_dags: list[DAG] | None = None,
        num_categories: int | None = None,
        progress: bool = True,
        **model_overrides,
    ) -> None:
        cfg = config or LayerDAGTrainConfig()
        if not isinstance(cfg, LayerDAGTrainConfig):
            raise ArgumentError(f"config must be a LayerDAGTrainConfig or None, got {type(cfg).__name__}")
        self.cfg, self.valid_dags, self.progress = cfg, valid_dags, progress
        self.out_dir = Path(out_dir)
        self.ckpt_path = self.out_dir / CHECKPOINT
        self.device = resolve_device(cfg.device)
        torch.manual_seed(cfg.seed)
        self.model, self.prepared = build_model(train_dags, cfg.size, num_categories, **model_overrides)
        self.model.to(self.device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.gen = torch.Generator().manual_seed(cfg.seed)  # the diffusion noise of every training step
        self.history: list[dict] = []
        self.ema: AveragedModel | None = None

    def _restore(self, state: dict) -> int:
        """Model, optimiser, noise generator and history from checkpoint `state`; the epochs done."""
        cfg, path = self.cfg, self.ckpt_path
        recorded = state.get("train_config")
        trained: dict = recorded if isinstance(recorded, dict) else {}
        decay = trained.get("lr_decay", cfg.lr_decay)
        if decay != cfg.lr_decay:  # the schedule is a function of the step
            raise ckpt.CheckpointError(f"{path}: key 'train_config.lr_decay': the run was trained with lr_decay="
                                       f"{decay!r}, resumed with {cfg.lr_decay!r}; resume with --lr-decay {decay}")
        if bool(state.get("ema_decay", 0.0)) != bool(cfg.ema_decay):
            raise ckpt.CheckpointError(f"{path}: key 'ema_decay': the run was trained with ema_decay="
                                       f"{state.get('ema_decay', 0.0)}, resumed with {cfg.ema_decay}")
        self.model = model_from_checkpoint(state, path, "train_model" if cfg.ema_decay else "model")
        self.model.to(self.device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        key = None
        try:
            for key in ("optim", "rng", "history", "epoch") + (("ema",) if cfg.ema_decay else ()):
                if key not in state:
                    raise KeyError(key)
            key = "optim"
            self.opt.load_state_dict(state["optim"])  # moves the moments to the parameters' device
            key = "rng"
            self.gen.set_state(state["rng"])
            key = "history"
            history = json.loads(state["history"])
            if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
                raise TypeError("expected a JSON list of per-epoch records")
            self.history = history
            key = "epoch"
            return int(state["epoch"])
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
            problem = ("missing from checkpoint" if key not in state else
                       f"cannot resume from it ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")  # fmt: skip
            raise ckpt.CheckpointError(f"{path}: key '{key}': {problem}") from None

    def fit(self, resume: bool = False) -> tuple[LayerDAG, list[dict]]:
        """Train (or resume) for the remaining epochs; returns the model (on the training device:
        the EMA weights with `ema_decay`) and the per-epoch history."""
        cfg, out_dir = self.cfg, self.out_dir
        start_epoch = 0
        state = None
        if resume:  # a write killed mid-way leaves its temp file behind
            remove_stale_temps(out_dir)
        if resume and self.ckpt_path.is_file():
            state = load_checkpoint(self.ckpt_path)
            start_epoch = self._restore(state)
        else:
            (out_dir / BEST).unlink(missing_ok=True)  # a fresh run: a best.pt left by an earlier run is stale
        model = self.model
        self.ema = _ema(model, cfg.ema_decay)
        if self.ema is not None and state is not None:
            self.ema.load_state_dict(state["ema"])
        self.final = model if self.ema is None else self.ema.module  # validated, selected, saved and returned
        self.draw_p = None  # per-graph draw probabilities of label balancing (None: each graph once per epoch)
        if cfg.label_balance:
            if not model.config.conditional:
                raise ValueError("label_balance needs labelled training graphs: every graph needs a finite label")
            self.draw_p = label_balance_weights([g.label for g in self.prepared], model, cfg.label_balance)
        self.valid = [prepare(d) for d in self.valid_dags] if self.valid_dags else []
        self.selector = _BestSelector(cfg.select, self.history, out_dir / BEST, resume)
        self.groups = {m: [p for k, p in model.named_parameters() if LayerDAG.module_of(k) == m] for m in MODULES}
        model.train()
        self.steps_per_epoch = (len(self.prepared) + cfg.batch_size - 1) // cfg.batch_size
        self.bar = tqdm(total=cfg.epochs * self.steps_per_epoch, initial=start_epoch * self.steps_per_epoch,
                        desc="LayerDAG train", unit="step", disable=not self.progress)  # fmt: skip
        metrics = MetricsLog(out_dir, start_epoch=start_epoch)  # metrics.csv + TensorBoard, as `graphcost train`
        for epoch in range(start_epoch, cfg.epochs):
            self._epoch(epoch)
            self._save(epoch)
            metrics.log(self.history)  # after the checkpoint: the CSV never runs ahead of what resume restores
        self.bar.close()
        metrics.close()
        self.final.eval()
        return self.final, self.history

    def _epoch(self, epoch: int) -> None:
        """One pass over the training graphs (or a label-balanced draw of them), then validation;
        appends the epoch's record to the history and updates best.pt."""
        cfg, model, opt = self.cfg, self.model, self.opt
        t0 = time.perf_counter()
        rng = np.random.default_rng([cfg.seed, epoch])
        n = len(self.prepared)
        order = rng.permutation(n) if self.draw_p is None else rng.choice(n, n, p=self.draw_p)
        sums: dict[str, float] = {}
        for i in range(0, len(order), cfg.batch_size):
            if cfg.lr_decay == "cosine":
                step = epoch * self.steps_per_epoch + i // cfg.batch_size
                for group in opt.param_groups:
                    group["lr"] = cfg.lr * warmup_cosine_factor(step, cfg.epochs * self.steps_per_epoch, warmup_frac=0.0)
            part = [self.prepared[j] for j in order[i : i + cfg.batch_size]]
            out = model.loss(build_batch(part), _labels(part), self.gen)
            opt.zero_grad(set_to_none=True)
            out["loss"].backward()
            for params in self.groups.values():  # per module: the three trainings stay independent
                torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            opt.step()
            if self.ema is not None:
                self.ema.update_parameters(model)
            for k, v in out.items():
                sums[k] = sums.get(k, 0.0) + float(v.detach()) * len(part)
            loss = float(out["loss"].detach())
            del out  # the step's graph: freed before the trim below
            release_free_memory()  # batches of ever-changing sizes fragment the heap: RSS would grow per epoch
            self.bar.update(1)
            self.bar.set_postfix(loss=f"{loss:.3f}")
        rec = {"epoch": epoch + 1, "seconds": time.perf_counter() - t0}
        rec.update({f"train_{k}": v / len(order) for k, v in sums.items()})
        if self.valid:
            rec.update({f"valid_{k}": v for k, v in evaluate_loss(self.final, self.valid, cfg.batch_size, cfg.seed).items()})
            release_free_memory()
        self.history.append(rec)
        if self.valid:
            self.selector.update(self.final, rec, cfg)

    def _save(self, epoch: int) -> None:
        """checkpoint.pt after `epoch`: config, the weights (CPU tensors), optimiser, noise generator,
        history, and with EMA the averaged and the raw weights."""
        cfg = self.cfg
        state = {
            "model_config": asdict(self.model.config), "train_config": asdict(cfg), "model": _cpu(self.final.state_dict()),
            "optim": _cpu(self.opt.state_dict()), "rng": self.gen.get_state(), "epoch": epoch + 1,
            "history": json.dumps(self.history),
        }  # fmt: skip
        if self.ema is not None:
            state.update(ema_decay=cfg.ema_decay, ema=_cpu(self.ema.state_dict()), train_model=_cpu(self.model.state_dict()))
        atomic_torch_save(state, self.ckpt_path)


def train_layerdag(
    train_dags: list[DAG],
    out_dir: str | Path,
    config: LayerDAGTrainConfig | None = None,
    valid_dags: list[DAG] | None = None,
    resume: bool = False,
    num_categories: int | None = None,
    progress: bool = True,
    **model_overrides,
) -> tuple[LayerDAG, list[dict]]:
    """Train (or resume) a LayerDAG on `train_dags`; returns the model (on the training device) and
    the per-epoch history. A wrapper of `LayerDAGTrainer`, under `out_dir`'s lock
    (`graphcost.runs.lifecycle.RunDirectory`: a run another live process holds there is refused)."""
    from graphcost.runs.lifecycle import RunDirectory

    with RunDirectory(out_dir, "out_dir", resume=True):
        trainer = LayerDAGTrainer(train_dags, out_dir, config, valid_dags, num_categories, progress, **model_overrides)
        return trainer.fit(resume=resume)
