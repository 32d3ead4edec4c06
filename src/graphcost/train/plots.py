"""PNG plots of a training run (matplotlib, Agg backend: no display needed).

* `plot_learning_curves`: training loss (named) with the learning rate on a secondary axis, and the
  validation metrics (Kendall τ / OPA, or tile score / OPA) per epoch; the epoch kept as best.pt
  is marked.
* `plot_valid_ranks`: for the best, median and worst validation graph (by τ): predicted rank vs
  true rank of every configuration (rank 0 = fastest; a perfect model puts every point on the
  diagonal; the top-K region shaded; hexbin for thousands of configurations), and the predicted
  score against the measured runtime on a log axis.
* `plot_run`: both, for a finished `Trainer` (its history, last validation report and graphs).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from graphcost.guards.atomic import atomic_write

HEXBIN_MIN = 2000  # configurations from which a rank panel switches from a scatter to a hexbin
# the plots' label of each loss, keyed by graphcost.models.losses.LOSS_NAMES
LOSS_LABELS = {"hinge": "pairwise hinge", "logistic": "pairwise logistic", "listmle": "ListMLE", "mse": "MSE"}
METRIC_LABELS = {"valid_kendall_tau": "Kendall τ", "valid_opa": "OPA", "valid_tile_score": "tile score"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    path = Path(path)
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=120)
    return path


def best_epoch(history: Sequence[Mapping], metric: str) -> int | None:
    """The epoch whose model best.pt holds, as the trainer picks it: the first epoch with the
    highest finite `metric` (strictly better replaces), or with the lowest train loss when no
    row has the metric. None when no row qualifies."""
    key, sign = (metric, 1.0) if any(_finite(r.get(metric)) for r in history) else ("train_loss", -1.0)
    best, chosen = -math.inf, None
    for row in history:
        value = row.get(key)
        if value is not None and _finite(value) and sign * float(value) > best:
            best, chosen = sign * float(value), int(row["epoch"])
    return chosen


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def plot_learning_curves(
    history: Sequence[Mapping], path: str | Path, metric: str = "valid_kendall_tau", loss: str = "", title: str = ""
) -> Path:
    """Two panels against (integer) epoch: the train loss named `loss` with the learning rate on a
    secondary axis, and `metric` plus valid OPA; a dotted line marks the best.pt epoch."""
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    epochs = [row["epoch"] for row in history]  # (E,)
    best = best_epoch(history, metric)
    fig, (ax_loss, ax_metric) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    loss_name = LOSS_LABELS.get(loss, loss) or "loss"
    ax_loss.plot(epochs, [row.get("train_loss", np.nan) for row in history], marker="o", ms=3, color="C0",
                 label=f"train loss ({loss_name})")  # fmt: skip
    ax_loss.set_ylabel(f"train loss ({loss_name})")
    ax_loss.set_title("training")
    lrs = [row.get("lr", np.nan) for row in history]
    if any(_finite(v) for v in lrs):
        ax_lr = ax_loss.twinx()
        ax_lr.plot(epochs, lrs, color="C3", ls="--", lw=1, label="learning rate (end of epoch)")
        ax_lr.set_ylabel("learning rate", color="C3")
        ax_lr.tick_params(axis="y", colors="C3")
        ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
        lines = ax_loss.get_legend_handles_labels()[0] + ax_lr.get_legend_handles_labels()[0]
        ax_loss.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="upper right")
    plotted = []
    for key in dict.fromkeys([metric, "valid_opa"]):
        values = [row.get(key, np.nan) for row in history]
        if any(_finite(v) for v in values):
            ax_metric.plot(epochs, values, marker="o", ms=3, label=METRIC_LABELS.get(key, key))
            plotted.append(METRIC_LABELS.get(key, key))
    ax_metric.set_ylabel(" / ".join(plotted) if plotted else "no validation split")
    ax_metric.set_title("validation (mean over graphs)")
    for ax in (ax_loss, ax_metric):
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if best is not None:
            ax.axvline(best, color="0.3", ls=":", lw=1.2, label=f"best.pt (epoch {best})")
    if plotted or best is not None:
        ax_metric.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    out = _save(fig, Path(path))
    plt.close(fig)
    return out


def ranks(values: np.ndarray) -> np.ndarray:
    """0-based ascending ranks (stable for ties)."""
    order = np.argsort(np.asarray(values), kind="stable")
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(len(order))
    return out


def representative_graphs(rows: Sequence[Mapping], key: str = "kendall_tau") -> list[tuple[str, str]]:
    """[(role, graph name)] for the best, median and worst graph by `key` (finite values only;
    fewer entries when graphs coincide). `rows`: per-graph metric dicts with a "graph" field."""
    scored = sorted((float(r[key]), r["graph"]) for r in rows if _finite(r.get(key)))
    n = len(scored)
    if not n:
        return []
    picks = [("best", n - 1)] + ([("median", n // 2)] if 0 < n // 2 < n - 1 else []) + ([("worst", 0)] if n > 1 else [])
    return [(role, scored[i][1]) for role, i in picks]


def _metric_text(row: Mapping, num_configs: int | None = None) -> str:
    """Two lines: τ / OPA (/ tile score), then the top-K slowdowns of one graph's metric row; a top-K of a graph
    of at most K configurations (`num_configs`) is left out: it holds every configuration, so it is 0% by
    construction."""
    named = (("kendall_tau", "τ"), ("opa", "OPA"), ("tile_score", "tile score"))
    head = [f"{label} {row[key]:.3f}" for key, label in named if _finite(row.get(key))]
    tops = sorted((k for k in row if k.startswith("top") and k.endswith("_slowdown")
                   and (num_configs is None or int(k[3:-9]) < num_configs)), key=lambda k: int(k[3:-9]))
    slow = [f"top-{k[3:-9]} {100 * row[k]:.1f}%" for k in tops if _finite(row[k])]
    return "   ".join(head) + ("\nslowdown " + "  ".join(slow) if slow else "")


def plot_valid_ranks(
    scores: Mapping[str, np.ndarray], runtimes: Mapping[str, np.ndarray], rows: Sequence[Mapping], path: str | Path,
    kind: str = "layout", top_k: int | None = None, title: str = "",
) -> Path:
    """One column per representative graph (best / median / worst τ among `rows` that have scores
    and runtimes): top, predicted vs true rank with the top-`top_k` region shaded and the metrics
    written in; bottom, predicted score vs measured runtime (log x; ns for layout, normalised for
    tile). `scores`/`runtimes`: graph name -> (K,) arrays."""
    plt = _pyplot()
    by_name = {r["graph"]: r for r in rows if r["graph"] in scores and r["graph"] in runtimes}
    picks = representative_graphs(list(by_name.values())) or [("", n) for n in list(by_name)[:3]]
    if not picks:
        raise ValueError("no validation graph with both scores and runtimes to plot")
    if top_k is None:
        top_k = 5 if kind == "tile" else 10
    unit = "normalised runtime (÷ default config)" if kind == "tile" else "measured runtime (ns)"
    cols = len(picks)
    fig, axes = plt.subplots(2, cols, figsize=(4.2 * cols, 7.6), squeeze=False, layout="constrained")
    for col, (role, name) in enumerate(picks):
        score = np.asarray(scores[name], dtype=np.float64)  # (K,)
        runtime = np.asarray(runtimes[name], dtype=np.float64)  # (K,)
        true_rank, pred_rank = ranks(runtime), ranks(score)
        n = len(true_rank)
        ax = axes[0, col]
        k = min(top_k, n)
        ax.axvspan(-0.5, k - 0.5, color="C2", alpha=0.15, lw=0, zorder=0, label=f"true top-{k}")
        ax.axhspan(-0.5, k - 0.5, color="C1", alpha=0.15, lw=0, zorder=0)
        if n >= HEXBIN_MIN:
            hb = ax.hexbin(true_rank, pred_rank, gridsize=40, mincnt=1, cmap="Blues")
            fig.colorbar(hb, ax=ax, label="configurations per cell")
        else:
            ax.scatter(true_rank, pred_rank, s=6, alpha=0.6, lw=0)
        picked = pred_rank < k  # the configurations a tuner would try: where do they truly rank?
        ax.scatter(true_rank[picked], pred_rank[picked], s=16, color="C1", lw=0, zorder=4,
                   label=f"predicted top-{k}")  # fmt: skip
        ax.plot([0, n - 1], [0, n - 1], color="grey", lw=0.8)
        short = name if len(name) <= 34 else name[:31] + "..."
        ax.set_title(f"{role + ' τ: ' if role else ''}{short} ({n} configurations)\n{_metric_text(by_name[name], n)}",
                     fontsize=8)  # fmt: skip
        ax.set_xlabel("true rank (0 = fastest)")
        ax.set_ylabel("predicted rank")
        ax.legend(loc="upper left", fontsize=7)
        ax = axes[1, col]
        ax.scatter(runtime, score, s=6, alpha=0.5 if n < HEXBIN_MIN else 0.15, lw=0)
        chosen = np.argsort(score, kind="stable")[:k]  # the configurations a tuner would try
        ax.scatter(runtime[chosen], score[chosen], s=14, color="C1", lw=0, label=f"predicted top-{k}")
        ax.axvline(runtime.min(), color="C2", ls=":", lw=1, label="fastest measured")
        if runtime.min() > 0:
            _log_runtime_axis(ax.xaxis, runtime, kind)
        ax.set_xlabel(unit)
        ax.set_ylabel("predicted score (lower = faster)")
        ax.legend(loc="upper left", fontsize=7)
        ax.grid(alpha=0.3, which="both")
    roles = [role for role, _ in picks if role]
    if title or roles:
        fig.suptitle(", ".join(filter(None, [title, roles and f"validation graphs of {' / '.join(roles)} Kendall τ"])))
    out = _save(fig, Path(path))
    plt.close(fig)
    return out


def _log_runtime_axis(axis, runtime: np.ndarray, kind: str) -> None:
    """Log scale with readable, non-colliding tick labels: ns as 20k / 50k / 100k (layout), plain
    numbers for normalised tile runtimes; ticks at 1-2-5 per decade, every integer multiple when
    the values span less than a factor of 4."""
    from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator, NullFormatter

    axis.axes.set_xscale("log")
    span = float(runtime.max() / runtime.min())
    axis.set_major_locator(LogLocator(base=10, subs=tuple(range(1, 10)) if span < 4 else (1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}") if kind == "tile" else EngFormatter(sep=""))
    axis.set_minor_formatter(NullFormatter())


def run_title(out_dir: Path, model: str, kind: str) -> str:
    """"<model> on <collection>": the collection from run.json in `out_dir` or its parent (a fold
    directory of a cross-validation), else the graph kind."""
    collection = None
    for where in (Path(out_dir), Path(out_dir).parent):
        try:
            collection = json.loads((where / "run.json").read_text()).get("collection")
            break
        except (OSError, ValueError, AttributeError):
            continue
    return f"{model} on {collection or kind}"


def plot_run(out_dir: Path, history: Sequence[Mapping], report, valid_graphs: Sequence, config,
             kind: str) -> list[Path]:
    """learning_curves.png and (with a validation report) valid_ranks.png in `out_dir`; their paths.
    `report`: the last `EvalReport` or None; `config`: the run's `TrainConfig`."""
    from graphcost.data.transforms.pool import graph_names
    from graphcost.inference.ranking import selection_metric

    out_dir = Path(out_dir)
    title = run_title(out_dir, config.model, kind)
    plot_learning_curves(history, out_dir / "learning_curves.png", metric=f"valid_{selection_metric(kind)}",
                         loss=config.loss, title=title)  # fmt: skip
    written = [out_dir / "learning_curves.png"]
    if report is None or not report.scores:
        return written
    wanted = {name for _, name in representative_graphs(report.rows)} or set(list(report.scores)[:3])
    names = graph_names(valid_graphs)
    runtimes = {n: np.asarray(valid_graphs[i].runtime) for i, n in enumerate(names) if n in wanted}
    plot_valid_ranks(report.scores, runtimes, report.rows, out_dir / "valid_ranks.png", kind=kind, title=title)
    return [*written, out_dir / "valid_ranks.png"]
