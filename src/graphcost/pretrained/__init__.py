"""Cost models that ship with graphcost, trained on the shipped REAL data, and THE locator for them.

``layout``: what ``graphcost train`` writes with no options (TGraph blended with the configuration
trees and the moved-tensor count) on the shipped layout data; it ranks per-node layout
configurations (TpuGraphs layout schema). ``tile``: what ``graphcost train --collection tile:xla``
writes on the shipped flag data; it ranks XLA CPU compiler-flag configurations (tile schema).

Each is an ordinary run directory (``best.pt`` loadable with ``torch.load(weights_only=True)``, or for a
seed ensemble ``ensemble.json`` and its members ``seed_*/best.pt``; ``blend.json``, ``trees.txt``,
``run.json``); ``MODELS.json`` beside them records the version, the
command that trained them, the data (and how many training graphs it held) and the date.
`graphcost rank GRAPH`, `graphcost tune` and `graphcost.tune()` use them when no model is given,
and say so. A checkpoint whose
``feature_version`` differs from this graphcost's (`graphcost.data.graph.FEATURE_VERSION`) is
refused by `graphcost.inference.ensemble.load_trained` with one line.

MODELS.json holds the ``graphcost train`` command that re-trains each.
"""

from __future__ import annotations

import json
from pathlib import Path

_ROOT = Path(__file__).resolve().parent
KINDS = ("layout", "tile")
MANIFEST = "MODELS.json"
SHIPPED = "shipped"  # how a run records that it used a shipped model (result.json's "model")


KERNELS = "kernels"  # the kernel model (graphcost.kernels.trees): kernel trees + the sum rule


def shipped_kernel_model_dir() -> Path:
    """Directory of the shipped kernel model; FileNotFoundError with a one-line message when missing."""
    path = _ROOT / KERNELS
    if not (path / "kernel_model.json").is_file():
        raise FileNotFoundError(f"the shipped kernel model is missing: {path} holds no kernel_model.json (reinstall "
                                "graphcost, or train one with release/train_kernel_model.py)")
    return path


def shipped_model_dir(kind: str) -> Path:
    """Run directory of the shipped `kind` model (``layout`` or ``tile``); FileNotFoundError with a
    one-line message when the package was installed without it."""
    if kind not in KINDS:
        raise ValueError(f"no shipped model of kind {kind!r}; choose one of {', '.join(KINDS)}")
    path = _ROOT / kind
    if not (path / "best.pt").is_file() and not (path / "ensemble.json").is_file():
        raise FileNotFoundError(f"the shipped {kind} model is missing: {path} holds neither best.pt nor ensemble.json "
                                "(reinstall graphcost, or train one with `graphcost train` and pass it as the model)")
    missing = [f for f in _shipped_files(kind) if not (path / f).is_file()]
    if missing:  # checked as a set (without blend.json it ranked with the graph model alone, silently)
        raise FileNotFoundError(f"the shipped {kind} model is incomplete: {path} lacks {', '.join(missing)} (listed in "
                                f"{_ROOT / MANIFEST}; reinstall graphcost)")
    return path


def _shipped_files(kind: str) -> list[str]:
    """The files MODELS.json lists for the shipped `kind` model ([] when it lists none or cannot be read)."""
    try:
        files = json.loads((_ROOT / MANIFEST).read_text(encoding="utf-8"))[kind]["files"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return []
    return [f for f in files if isinstance(f, str)] if isinstance(files, list) else []


def describe(kind: str) -> str:
    """One line naming the shipped `kind` model: version, data (with its training graphs when
    recorded) and date (from MODELS.json)."""
    try:
        info = json.loads((_ROOT / MANIFEST).read_text(encoding="utf-8"))[kind]
        graphs = f"{info['train_graphs']} training graphs of " if "train_graphs" in info else ""
        return (f"the shipped {kind} model v{info['version']} (trained on {graphs}{info['data']}, {info['date']}; "
                f"{_ROOT / kind})")
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # RecursionError: JSON nested too deep
        return f"the shipped {kind} model ({_ROOT / kind})"


__all__ = ["KINDS", "SHIPPED", "describe", "shipped_model_dir"]
