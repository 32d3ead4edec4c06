"""The tuning plots. progress.png: every trial's speedup over the default against the number of
real measurements spent, per strategy, with the best so far, the failed trials and the final check
in fresh processes. kernels.png and `graphcost profile --plot` (`plot_profile`): the top kernels'
share of the call, a tuned configuration's beside the default's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphcost.kernels.times import KernelTime, ProgramProfile, compare
from graphcost.tuning.trial import COPY, OK, Trial


def best_so_far(trials: list[Trial]) -> np.ndarray:
    """(n,) best speedup (default runtime / runtime) after each measurement, 1.0 before any win."""
    best, out = 1.0, []
    for t in trials:
        if t.status == OK and t.ratio:
            best = max(best, 1.0 / t.ratio)
        out.append(best)
    return np.array(out)


def plot_progress(trials: list[Trial], path: str | Path, final: dict | None = None) -> Path:
    """Write the progress plot (`progress_figure`) as a PNG, atomically, and return its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from graphcost.guards.atomic import atomic_write

    fig = progress_figure(trials, final)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    plt.close(fig)
    return Path(path)


def progress_figure(trials: list[Trial], final: dict | None = None):
    """The progress plot as a matplotlib Figure.

    Each measured trial is a dot at (its measurement number, default runtime / its runtime), so a
    search where nothing beats the default still shows how far below 1 its trials fell; the step
    line is the best so far; failed trials are crosses along the bottom edge; the legend sits
    below the axes.

    Args:
        trials: every trial, all strategies (`Trial.strategy`, `Trial.number` order them).
        final: the kept configuration's speedups against the default in fresh processes, ``{"median", "min",
            "max", "kept", "confirmed"}`` (`result.final_point`: the confirmation batch's when ``confirmed``, else
            the final check's; the best candidate's when the default was kept).

    Returns:
        The Figure (close it with ``plt.close(fig)``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7.0, 5.2), layout="constrained")
    by: dict[str, list[Trial]] = {}
    for t in trials:
        if t.status != COPY:  # a copy of a timed executable measured nothing and used no budget
            by.setdefault(t.strategy, []).append(t)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    bottom = ax.get_xaxis_transform()  # x in data, y in axes coordinates: failures along the bottom edge
    any_failed = False
    for k, (name, ts) in enumerate(by.items()):
        ts = sorted(ts, key=lambda t: t.number)
        color = colors[k % len(colors)]
        x = np.arange(1, len(ts) + 1)
        ok = [(i + 1, 1.0 / t.ratio) for i, t in enumerate(ts) if t.status == OK and t.ratio]
        if ok:
            ax.plot(*zip(*ok), "o", color=color, ms=3.5, alpha=0.6, label=f"{name or 'trials'}: each trial")
        y = best_so_far(ts)
        ax.step(x, y, where="post", color=color,
                label=f"{name or 'trials'}: in-search estimate, best so far ({y[-1]:.3f}x)")
        failed = [i + 1 for i, t in enumerate(ts) if t.status != OK]
        if failed:
            any_failed = True
            ax.plot(failed, [0.03] * len(failed), "x", color=color, ms=5, transform=bottom, clip_on=False)
    if any_failed:
        ax.plot([], [], "x", color="grey", label="failed (compile error, wrong output, too slow)")
    ax.axhline(1.0, color="black", lw=0.8, ls=":", label="XLA default")
    if final is not None:
        x = max((len(v) for v in by.values()), default=0) + 1
        ax.errorbar([x], [final["median"]], yerr=[[final["median"] - final["min"]], [final["max"] - final["median"]]],
                    fmt="D", color="black", capsize=4,
                    label=(f"{'kept, timed after it was chosen' if final.get('confirmed') else 'final check: kept'} "
                           f"{final['median']:.3f}x ({final['min']:.3f}-{final['max']:.3f})"
                           if final["kept"] else f"final check: best candidate {final['median']:.3f}x "
                           f"({final['min']:.3f}-{final['max']:.3f}); not kept: the default stays"))
    ax.set_xlabel("configurations measured")
    ax.set_ylabel("speedup over the XLA default (x)")
    ax.set_title("graphcost tune: every measured configuration, and the best so far", fontsize=10)
    fig.legend(loc="outside lower center", ncols=1, fontsize=8, frameon=False)  # one column: long labels stay inside
    ax.grid(alpha=0.3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


def _bar_label(default: KernelTime | None, tuned: KernelTime | None) -> str:
    k = default or tuned
    assert k is not None
    text = f"{k.name} ({k.kind})"
    if default is None:
        return text + " (tuned only)"
    return text + (f" / {tuned.name}" if tuned is not None and tuned.name != default.name else "")


def plot_profile(profile: ProgramProfile, path: Path, top: int = 15) -> None:
    """Horizontal bars of the top kernels' share of the call (the tuned configuration beside the default)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = profile.configs[0]
    tuned = profile.configs[1] if len(profile.configs) > 1 else None
    pairs = compare(base, tuned)[:top] if tuned is not None else [(k, None) for k in base.kernels[:top]]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(pairs) + 1.5))
    y = np.arange(len(pairs))
    width = 0.4 if tuned is not None else 0.7
    scale = 100.0 / base.wall_ns if base.wall_ns > 0 else 0.0  # % of the default's profiled call, both sides
    ax.barh(y, [d.self_ns * scale if d else 0 for d, _ in pairs], height=width,
            label=f"default ({base.runtime_ns / 1e3:.0f} µs)")
    if tuned is not None:
        ax.barh(y + width, [t.self_ns * scale if t else 0 for _, t in pairs], height=width,
                label=f"tuned ({tuned.runtime_ns / 1e3:.0f} µs), same scale")
        ax.legend(loc="lower right")
    ax.set_yticks(y + (width / 2 if tuned is not None else 0), [_bar_label(d, t) for d, t in pairs], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("% of the default's profiled call")
    ax.set_title(f"{profile.program}: top kernels (coverage {base.coverage:.0%}, {profile.processes} processes)",
                 fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(path)
