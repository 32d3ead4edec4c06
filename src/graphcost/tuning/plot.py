"""The tuning progress plot: best speedup over the default found so far, per strategy, against
the number of real measurements spent."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphcost.tuning.evaluate import OK, Trial


def best_so_far(trials: list[Trial]) -> np.ndarray:
    """(n,) best speedup (default runtime / runtime) after each measurement, 1.0 before any win."""
    best, out = 1.0, []
    for t in trials:
        if t.status == OK and t.ratio:
            best = max(best, 1.0 / t.ratio)
        out.append(best)
    return np.array(out)


def plot_progress(trials: list[Trial], path: str | Path) -> Path:
    """Write the PNG (atomically) and return its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from graphcost.atomic import atomic_write

    fig, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    by: dict[str, list[Trial]] = {}
    for t in trials:
        by.setdefault(t.strategy, []).append(t)
    for name, ts in by.items():
        ts = sorted(ts, key=lambda t: t.number)
        y = best_so_far(ts)
        ax.step(np.arange(1, len(y) + 1), y, where="post", label=f"{name} (best {y[-1]:.3f}x)")
        failed = [i + 1 for i, t in enumerate(ts) if t.status != OK]
        if failed:
            ax.plot(failed, y[np.array(failed) - 1], "x", color="grey", ms=4)
    ax.axhline(1.0, color="black", lw=0.8, ls=":")
    ax.set_xlabel("configurations measured (x = failed: compile error, wrong output, too slow)")
    ax.set_ylabel("best speedup over XLA default so far (x)")
    ax.set_title("graphcost tune: best configuration found vs. measurement budget")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    plt.close(fig)
    return Path(path)
