"""Atomic, pickle-free training checkpoints.

A checkpoint is one ``torch.save`` dict holding only tensors and plain Python values (dict,
list, tuple, str, int, float, bool, None), so it loads with ``torch.load(weights_only=True)``:

    model_spec      {"name", "kind", "config"}: rebuilds the model via the model registry
    model           model.state_dict()
    optimizer       optimizer.state_dict()
    scheduler       scheduler.state_dict()
    scaler          FeatureScaler.state_dict() (numpy arrays stored as tagged tensors)
    rng             python / numpy / torch (+ CUDA) generator states
    epoch, step     position: `epoch` epochs fully done, `step` batches done inside the next one
    history         per-epoch metrics (list of dicts of floats)
    plus whatever the trainer adds (train config, partial-epoch accumulators, best score).

Writes go to a temporary file in the same directory followed by ``os.replace``, so a kill at
any moment leaves either the previous checkpoint or the new one, never a torn file.

LayerDAG's checkpoints (`graphcost.layerdag.train`) are written and read by the same two functions,
with their own keys (``model_config``, ``model``, ``optim``, ``rng``, ``history``, ...).
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from graphcost.guards.atomic import atomic_write
from graphcost.errors import GraphcostError

_NDARRAY_TAG = "__ndarray__"


def to_safe(obj: Any) -> Any:
    """Recursively convert numpy arrays / scalars into weights_only-loadable values."""
    if isinstance(obj, np.ndarray):
        return {_NDARRAY_TAG: torch.from_numpy(np.ascontiguousarray(obj).copy()), "dtype": str(obj.dtype)}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: to_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_safe(v) for v in obj)
    return obj


def from_safe(obj: Any) -> Any:
    """Inverse of `to_safe`: tagged tensors become numpy arrays again."""
    if isinstance(obj, dict):
        if _NDARRAY_TAG in obj:
            return obj[_NDARRAY_TAG].numpy().astype(obj["dtype"], copy=False)
        return {k: from_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(from_safe(v) for v in obj)
    return obj


def capture_rng_state() -> dict:
    """Python, numpy and torch generator states as plain values / tensors."""
    version, internal, gauss = random.getstate()
    np_state = cast(tuple, np.random.get_state(legacy=True))  # (name, keys, pos, has_gauss, cached_gaussian)
    state: dict[str, Any] = {
        "python": {"version": version, "internal": list(internal), "gauss": gauss},
        "numpy": {
            "name": np_state[0],
            "keys": torch.from_numpy(np_state[1].astype(np.int64)),
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "cached_gaussian": float(np_state[4]),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict) -> None:
    """Inverse of `capture_rng_state`."""
    py = state["python"]
    random.setstate((py["version"], tuple(py["internal"]), py["gauss"]))
    npst = state["numpy"]
    np.random.set_state(
        (npst["name"], npst["keys"].numpy().astype(np.uint32), npst["pos"], npst["has_gauss"], npst["cached_gaussian"])
    )
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> Path:
    """`torch.save` to a temp file in the target directory, fsync, then `os.replace`. The object is serialised in
    memory first: torch's writer turns a failed write (a full disk, a file-size limit) into a RuntimeError
    ("unexpected pos"), whereas a plain write raises the OSError that `atomic_write` names the file in."""
    import io

    path = Path(path)
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    with atomic_write(path, fsync=True) as handle:
        handle.write(buffer.getbuffer())
    return path


def save_checkpoint(path: str | os.PathLike, state: dict) -> Path:
    """Write a checkpoint dict atomically; numpy values are converted with `to_safe`."""
    return atomic_torch_save(to_safe(state), path)


class CheckpointError(GraphcostError, ValueError):
    """A checkpoint file is missing, unreadable or lacks a required entry."""


def check_weight_dtypes(model: torch.nn.Module, weights: Any, path: str | os.PathLike, key: str = "model") -> None:
    """CheckpointError naming the file and the key when a weight of `weights` (a state dict) is not a
    tensor, or holds integers (or bools) where `model` holds floating-point numbers, or the reverse:
    `load_state_dict` would cast them silently (int64 weights truncated and used).
    Missing, unexpected and misshapen weights are left to `load_state_dict`, which names them."""
    if not isinstance(weights, dict):
        return
    for name, mine in model.state_dict().items():
        theirs = weights.get(name)
        if theirs is None:
            continue
        if not isinstance(theirs, torch.Tensor):
            raise CheckpointError(f"{path}: key '{key}.{name}': a {type(theirs).__name__}, not a tensor")
        if theirs.is_floating_point() != mine.is_floating_point() or theirs.is_complex():
            raise CheckpointError(f"{path}: key '{key}.{name}': {str(theirs.dtype).removeprefix('torch.')} weights "
                                  f"where the model holds {str(mine.dtype).removeprefix('torch.')}; refusing to "
                                  "convert them")


def load_checkpoint(
    path: str | os.PathLike,
    map_location: str | torch.device = "cpu",
    required: tuple[str, ...] = ("model", "model_spec"),
    kind: str = "graphcost",
) -> dict:
    """Load a checkpoint with ``weights_only=True`` (never unpickles arbitrary objects).

    CheckpointError naming the file when it is missing, unreadable, not a dict or without one of
    the `required` keys; `kind` names the checkpoint in that message ("graphcost" for the cost
    models, "LayerDAG" for `graphcost.layerdag.train`, whose checkpoints need model_config and model)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # corrupt, foreign or pickled-object files
        raise CheckpointError(f"{path}: cannot load checkpoint ({type(exc).__name__}: {exc})") from exc
    if not isinstance(state, dict) or any(key not in state for key in required):
        keys = " and ".join(f"'{key}'" for key in required)
        raise CheckpointError(f"{path}: not a {kind} checkpoint (needs keys {keys})")
    return from_safe(state)
