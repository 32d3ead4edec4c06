"""PNG plots of a training run (matplotlib, Agg backend: no display needed).

* `plot_learning_curves`: training loss and the validation selection metric per epoch.
* `plot_rank_scatter`: for a few validation graphs, predicted rank vs true rank of every
  configuration (rank 0 = fastest); a perfect model puts every point on the diagonal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from graphcost.atomic import atomic_write


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    path = Path(path)
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=110, bbox_inches="tight")
    return path


def plot_learning_curves(history: Sequence[Mapping], path: str | Path, metric: str = "valid_tau") -> Path:
    """Two panels: train loss, and `metric` (plus valid OPA when present), against epoch."""
    plt = _pyplot()
    epochs = [row["epoch"] for row in history]
    fig, (ax_loss, ax_metric) = plt.subplots(1, 2, figsize=(10, 3.8))
    ax_loss.plot(epochs, [row.get("train_loss", np.nan) for row in history], marker="o", ms=3)
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("train loss")
    ax_loss.set_title("training loss")
    ax_loss.grid(alpha=0.3)
    for key in dict.fromkeys([metric, "valid_opa"]):
        values = [row.get(key, np.nan) for row in history]
        if np.any(np.isfinite(np.asarray(values, dtype=float))):
            ax_metric.plot(epochs, values, marker="o", ms=3, label=key)
    ax_metric.set_xlabel("epoch")
    ax_metric.set_title("validation")
    ax_metric.grid(alpha=0.3)
    if ax_metric.get_legend_handles_labels()[0]:
        ax_metric.legend()
    out = _save(fig, Path(path))
    plt.close(fig)
    return out


def ranks(values: np.ndarray) -> np.ndarray:
    """0-based ascending ranks (stable for ties)."""
    order = np.argsort(np.asarray(values), kind="stable")
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(len(order))
    return out


def plot_rank_scatter(
    scores: Mapping[str, np.ndarray], runtimes: Mapping[str, np.ndarray], path: str | Path, max_graphs: int = 6
) -> Path:
    """Predicted rank vs true rank for up to `max_graphs` graphs (one panel each)."""
    plt = _pyplot()
    names = [n for n in scores if n in runtimes][:max_graphs]
    cols = min(3, max(1, len(names)))
    rows = max(1, -(-len(names) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.4 * rows), squeeze=False)
    for ax in axes.ravel():
        ax.set_visible(False)
    for ax, name in zip(axes.ravel(), names):
        ax.set_visible(True)
        true_rank = ranks(runtimes[name])
        pred_rank = ranks(scores[name])
        ax.scatter(true_rank, pred_rank, s=6, alpha=0.6)
        top = max(1, len(true_rank) - 1)
        ax.plot([0, top], [0, top], color="grey", lw=0.8)
        ax.set_title(name if len(name) <= 32 else name[:29] + "...", fontsize=8)
        ax.set_xlabel("true rank (0 = fastest)")
        ax.set_ylabel("predicted rank")
    out = _save(fig, Path(path))
    plt.close(fig)
    return out
