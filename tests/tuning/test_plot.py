"""progress.png draws every trial (not only the best so far), the failures and the final check's range."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from graphcost.tuning.trial import OK, Trial  # noqa: E402
from graphcost.tuning.plot import plot_progress, progress_figure  # noqa: E402


def _trials():
    # nothing beats the default: the best-so-far line alone would be flat at 1.0
    ratios = {"tpe": [1.3, None, 1.1, 1.6], "random": [1.2, 1.05, None]}
    return [Trial((i,), OK if r else "compile_error", ratio=r, strategy=s, number=i)
            for s, rs in ratios.items() for i, r in enumerate(rs)]


def test_every_trial_failures_and_the_final_range_are_drawn(tmp_path):
    fig = progress_figure(_trials(), {"median": 1.004, "min": 0.99, "max": 1.02, "kept": False})
    ax = fig.axes[0]
    dots = [line for line in ax.get_lines() if line.get_marker() == "o"]
    speedups = sorted(float(y) for line in dots for y in line.get_ydata())
    np.testing.assert_allclose(speedups, sorted(1 / r for r in (1.3, 1.1, 1.6, 1.2, 1.05)))
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x" and len(line.get_xdata())]
    assert sorted(int(x) for line in crosses for x in line.get_xdata()) == [2, 3]  # measurement numbers, 1-based
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("final check" in t and "0.990-1.020" in t for t in labels)
    assert any(t.startswith("failed") for t in labels)
    assert ax.get_xlabel() == "configurations measured"  # the legend, not the axis label, explains the marks
    assert not ax.get_legend()  # one legend, outside the axes
    plt.close(fig)
    path = plot_progress(_trials(), tmp_path / "progress.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_legend_stays_inside_the_figure_when_the_default_is_kept(tmp_path):
    """progress.png's legend was cut off at both edges ("odel+online: each trial", "not kept: the defa"; issue 80)."""
    trials = [Trial((i,), OK, ratio=r, strategy="model+online", number=i) for i, r in enumerate([1.01, 0.99, 1.2])]
    fig = progress_figure(trials, {"median": 1.0031, "min": 0.9894, "max": 1.0187, "kept": False})
    fig.canvas.draw()
    inside, box = fig.legends[0].get_window_extent(), fig.bbox
    assert box.x0 <= inside.x0 and inside.x1 <= box.x1 and box.y0 <= inside.y0, (inside, box)
    plt.close(fig)
