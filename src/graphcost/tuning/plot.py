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


def plot_progress(trials: list[Trial], path: str | Path, final: dict | None = None) -> Path:
    """Write the PNG (atomically) and return its path.

    final: the final check against the default in fresh processes, ``{"median", "min", "max",
    "kept"}`` (speedups of the best candidate; kept = it beat the default in every process)."""
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
    if final is not None:
        x = max((len(v) for v in by.values()), default=1) + 1
        ax.errorbar([x], [final["median"]], yerr=[[final["median"] - final["min"]], [final["max"] - final["median"]]],
                    fmt="D", color="black", capsize=3,
                    label=f"final check: {final['median']:.3f}x ({'kept' if final['kept'] else 'default kept'})")
    ax.set_xlabel("configurations measured (x = failed: compile error, wrong output, too slow)")
    ax.set_ylabel("best speedup over XLA default so far (x)")
    ax.set_title("graphcost tune: best configuration found vs. measurement budget\n"
                 "(search: one interleaved batch each; final check: fresh processes, median and range)", fontsize=9)
    ax.legend(loc="best", fontsize=8, framealpha=0.8)
    ax.grid(alpha=0.3)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    plt.close(fig)
    return Path(path)
