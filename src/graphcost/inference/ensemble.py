"""Loading trained cost models and scoring with them: checkpoints, fold ensembles, trees beside a
graph model, and test-time augmentation (TGraph §2.5.3).

  resolve_checkpoints   a MODEL argument (a .pt file, a run directory, or a cross-validation or seed
                        ensemble run directory) -> the checkpoint files behind it
  ensemble_members      the member checkpoints named by such a run's ``ensemble.json``
  load_trained          one checkpoint -> (model in eval mode, fitted scaler, metadata); the model is
                        rebuilt through `graphcost.models.registry.model_from_spec`
  EnsemblePredictor     the average of the members' standardised TTA scores (TGraph §2.5.3), blended
                        with the trees when the run has them; what `graphcost rank`, `evaluate`,
                        `predict` and `graphcost tune`'s learned model score with
  load_predictor        an EnsemblePredictor with the --precision checks of those commands

Before averaging, each member's scores on a graph are standardised (zero mean, unit variance):
this leaves a single model's ranking unchanged and stops one member with a larger score scale
from dominating the ensemble.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from graphcost.inference.blend import load_blend
from graphcost.inference.ranking import score_configs
from graphcost.models.precision import resolve_precision
from graphcost.models.trees import standardise
from graphcost.runs import checkpoint as ckpt

if TYPE_CHECKING:
    from graphcost.data.transforms.prepared import PreparedGraph
    from graphcost.data.transforms.scaler import FeatureScaler
    from graphcost.inference.blend import Blend
    from graphcost.models.trees import TreeRanker

ENSEMBLE_FILE = "ensemble.json"  # the members of a cross-validation run (`graphcost.train.crossval`: its kept
# folds) or of a seed ensemble (`graphcost.train.seeds`)


def resolve_checkpoints(path: str | Path) -> list[Path]:
    """Checkpoint files behind a MODEL argument: a .pt file, a run dir, or a CV run dir."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such model checkpoint or run directory")
    manifest = path / ENSEMBLE_FILE
    if manifest.is_file():
        members = ensemble_members(manifest)
        # a fold without a validation improvement has no best.pt: use its last checkpoint
        return [m if m.is_file() else m.with_name("checkpoint.pt") for m in members]
    for name in ("best.pt", "checkpoint.pt"):
        if (path / name).is_file():
            return [path / name]
    raise FileNotFoundError(f"{path}: run directory holds no best.pt, checkpoint.pt or {ENSEMBLE_FILE}")


def ensemble_members(manifest: Path) -> list[Path]:
    """The member checkpoints listed in a run's ensemble.json, each checked to lie inside the run
    directory; CheckpointError naming the file and the field otherwise."""
    try:
        data = json.loads(manifest.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ckpt.CheckpointError(f"{manifest}: not a readable JSON file ({exc})") from None
    members = data.get("members") if isinstance(data, dict) else None
    if not isinstance(members, list) or not members or not all(isinstance(m, str) and m for m in members):
        raise ckpt.CheckpointError(f"{manifest}: field 'members' must be a non-empty list of checkpoint paths, "
                                   f"got {members!r}")  # fmt: skip
    run = manifest.parent.resolve()
    out = []
    for member in members:
        full = (manifest.parent / member).resolve()
        if Path(member).is_absolute() or not full.is_relative_to(run):
            raise ckpt.CheckpointError(f"{manifest}: field 'members': {member!r} lies outside the run directory {run}")
        out.append(manifest.parent / member)
    return out


def load_scaler(state: dict) -> FeatureScaler | None:
    """The fitted `FeatureScaler` of a checkpoint's ``scaler`` entry."""
    from graphcost.data.transforms.scaler import FeatureScaler

    return FeatureScaler.from_state_dict(state)


def check_feature_version(path: str | Path, state: dict) -> None:
    """CheckpointError (one line) when the checkpoint's ``feature_version`` is not this graphcost's
    `FEATURE_VERSION`: its model would read today's features with another meaning. Checkpoints
    written before the field existed are version 1."""
    from graphcost.data.graph import FEATURE_VERSION

    version = state.get("feature_version", 1)
    if version != FEATURE_VERSION:
        raise ckpt.CheckpointError(
            f"{path}: key 'feature_version' is {version!r}, but this graphcost's featurizer is version "
            f"{FEATURE_VERSION}; retrain the model with this graphcost (graphcost train) or install the "
            "graphcost it was trained with")


def load_trained(path: str | Path, device: str | torch.device = "cpu") -> tuple[nn.Module, FeatureScaler | None, dict]:
    """(model in eval mode, fitted scaler, checkpoint metadata) from a checkpoint file."""
    from graphcost.models.registry import model_from_spec  # lazily: the registry imports torch_geometric

    state = ckpt.load_checkpoint(path)
    check_feature_version(path, state)
    spec = state["model_spec"]
    if not isinstance(spec, dict) or not isinstance(spec.get("config", {}), dict):
        raise ckpt.CheckpointError(f"{path}: key 'model_spec' must be a dict with 'name', 'kind' and 'config'")
    try:
        model = model_from_spec(spec)
    except (ValueError, TypeError, KeyError) as exc:  # unknown model / kind, bad config fields
        raise ckpt.CheckpointError(f"{path}: key 'model_spec': {exc}") from None
    if "scaler" not in state:
        raise ckpt.CheckpointError(f"{path}: key 'scaler' is missing (the feature scaler fitted in training)")
    try:
        scaler = load_scaler(state["scaler"])
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ckpt.CheckpointError(f"{path}: key 'scaler': not a feature scaler state ({type(exc).__name__}: {exc})") from None
    ckpt.check_weight_dtypes(model, state["model"], path)
    try:
        model.load_state_dict(state["model"])
    except (RuntimeError, TypeError, AttributeError) as exc:  # wrong tensor shapes / missing or unexpected keys / not a dict
        first = str(exc).strip().splitlines()
        detail = " ".join(line.strip() for line in first[1:3]) or (first[0] if first else "")
        raise ckpt.CheckpointError(
            f"{path}: model weights do not match the architecture recorded in the checkpoint ({detail})"
        ) from None
    model.to(device).eval()
    meta = {k: v for k, v in state.items()
            if k in ("model_spec", "train_config", "kind", "metric", "epoch", "score", "feature_version")}
    return model, scaler, meta


class EnsemblePredictor:
    """Average of the members' standardised TTA scores (fold or seed models; TGraph §2.5.3); LOWER score =
    predicted faster. A single run directory with trees (``blend.json``) scores
    w · z(mean of the graph models) + (1 - w) · z(trees).
    A `graphcost.inference.cost_model.CostModel`."""

    def __init__(
        self,
        members: Sequence[tuple[nn.Module, FeatureScaler | None]],
        kind: str,
        *,
        batch_size: int = 128,
        tta: int = 10,
        seed: int = 0,
        device: str | torch.device = "cpu",
        make_batch: Callable | None = None,
        precision: str = "fp32",
        trained_on: str = "in memory",
    ) -> None:
        if not members:
            raise ValueError("an ensemble needs at least one model")
        precision = resolve_precision(precision, device, [m for m, _ in members])  # "auto" -> fp32 | bf16
        if precision != "fp32":  # the same rule as score_configs, checked before any graph is read
            for model, _ in members:
                if not getattr(model, "can_score_chunked", False):
                    raise ValueError(f"precision {precision!r} is supported by TGraph only, not by {type(model).__name__}")
        self.members = list(members)
        self.kind = kind
        self.batch_size, self.tta, self.seed, self.precision = batch_size, tta, seed, precision
        self.device = torch.device(device)
        self.make_batch = make_batch
        self.blend: tuple | None = None  # (Blend, TreeRanker) when the run has trees beside its graph model
        self.files: list[Path] = []  # the checkpoints `load` read, in order
        self.trained_on = trained_on  # the runs or checkpoints it was loaded from (`CostModel`)

    @classmethod
    def load(cls, paths: Sequence[str | Path], device: str = "cpu", trees: bool = True,
             **kwargs: Any) -> EnsemblePredictor:
        """Load every checkpoint behind `paths` (files, run dirs or CV run dirs). One run directory
        with trees scores with its blend (`trees=False`: the graph model alone); an ensemble of several
        paths uses their graph models only."""
        from graphcost.runs.distributed import resolve_device

        blend = load_blend(Path(paths[0])) if trees and len(paths) == 1 and Path(paths[0]).is_dir() else None
        torch_device = resolve_device(device)
        files = [f for p in paths for f in resolve_checkpoints(p)]
        members, kinds = [], set()
        for f in files:
            model, scaler, meta = load_trained(f, torch_device)
            members.append((model, scaler))
            kinds.add(meta["model_spec"]["kind"])
        if len(kinds) != 1:
            raise ValueError(f"models mix graph kinds {sorted(kinds)}: ensemble only models of one collection")
        predictor = cls(members, kinds.pop(), device=torch_device, trained_on=", ".join(str(p) for p in paths), **kwargs)
        predictor.files = files
        if blend is not None and blend[1].kind != predictor.kind:
            raise ckpt.CheckpointError(f"{paths[0]}: trees.txt holds {blend[1].kind} trees beside a {predictor.kind} model")
        predictor.blend = blend
        return predictor

    @property
    def reads_compiled(self) -> bool:
        """Whether a graph's ``config_compiled_stats`` change its scores: a member with TGraph's term
        for them, or a blend whose prior is the bytes the compiler copies."""
        blend = self.blend[0] if self.blend is not None else None
        return (any(getattr(model, "compiled_head", None) is not None for model, _ in self.members)
                or (blend is not None and blend.prior > 0 and blend.prior_kind == "copies"))

    def score(self, prepared: PreparedGraph) -> np.ndarray:
        """(K,) ensemble scores for every configuration of `prepared`, in its order."""
        if prepared.kind != self.kind:
            raise ValueError(f"{prepared.name}: a {prepared.kind} graph cannot be scored by a {self.kind} model")
        total = np.zeros(int(np.asarray(prepared.runtime).shape[0]), dtype=np.float64)
        for model, scaler in self.members:
            raw = score_configs(
                model, prepared, scaler, batch_size=self.batch_size, device=self.device, tta=self.tta,
                seed=self.seed, make_batch=self.make_batch, precision=self.precision,
            )
            total += standardise(raw)
        total /= len(self.members)
        if self.blend is not None:
            blend, trees = self.blend
            return blend.score(total, trees, prepared)
        return total



def load_predictor(paths: Sequence[str | Path], tta: int = 10, batch: int = 128, device: str = "auto",
                   precision: str = "auto", warn: Callable[[str], None] | None = None) -> EnsemblePredictor:
    """The `EnsemblePredictor` of `paths` (run directories or checkpoints) that `graphcost evaluate`,
    `rank` and `predict` score with. `precision` must be one of `PRECISION_CHOICES` (ValueError
    otherwise); where bf16 would be emulated, `warn` gets the warning before anything is loaded
    (default: `warnings.warn`)."""
    import warnings

    from graphcost.models.precision import PRECISION_CHOICES, emulated_bf16_warning
    from graphcost.runs.distributed import resolve_device

    if precision not in PRECISION_CHOICES:
        raise ValueError(f"precision must be one of {', '.join(PRECISION_CHOICES)}, got {precision!r}")
    warning = emulated_bf16_warning(precision, resolve_device(device))
    if warning:
        (warn or warnings.warn)(warning)
    return EnsemblePredictor.load(paths, device=device, tta=tta, batch_size=batch, precision=precision)
