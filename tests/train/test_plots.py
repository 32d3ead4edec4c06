"""Training-run plots: pure helpers (best.pt epoch, representative graphs) and PNGs written."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from graphcost import metrics
from graphcost.train import plots

PNG_MAGIC = b"\x89PNG"


def _is_png(path) -> bool:
    return path.is_file() and path.stat().st_size > 1000 and path.read_bytes()[:4] == PNG_MAGIC


def test_best_epoch_is_first_maximum_of_the_metric():
    hist = [{"epoch": 1, "valid_kendall_tau": 0.2}, {"epoch": 2, "valid_kendall_tau": 0.5},
            {"epoch": 3, "valid_kendall_tau": 0.5}, {"epoch": 4, "valid_kendall_tau": math.nan}]  # fmt: skip
    assert plots.best_epoch(hist, "valid_kendall_tau") == 2  # a tie does not replace best.pt


def test_best_epoch_without_validation_is_lowest_train_loss():
    hist = [{"epoch": 1, "train_loss": 0.9}, {"epoch": 2, "train_loss": 0.4}, {"epoch": 3, "train_loss": 0.6}]
    assert plots.best_epoch(hist, "valid_kendall_tau") == 2
    assert plots.best_epoch([{"epoch": 1, "train_loss": math.nan}], "valid_kendall_tau") is None


def test_representative_graphs_best_median_worst():
    taus = [("a", 0.1), ("b", 0.9), ("c", 0.5), ("d", math.nan), ("e", 0.3)]
    rows = [{"graph": g, "kendall_tau": t} for g, t in taus]
    assert plots.representative_graphs(rows) == [("best", "b"), ("median", "c"), ("worst", "a")]
    assert plots.representative_graphs(rows[:2]) == [("best", "b"), ("worst", "a")]
    assert plots.representative_graphs(rows[:1]) == [("best", "a")]
    assert plots.representative_graphs(rows[3:4]) == []


def test_learning_curves_png(tmp_path):
    hist = [{"epoch": e, "train_loss": 1.0 / e, "lr": 1e-3 / e, "valid_kendall_tau": 0.1 * e,
             "valid_opa": 0.5 + 0.05 * e} for e in range(1, 4)]  # fmt: skip
    out = plots.plot_learning_curves(hist, tmp_path / "lc.png", loss="listmle", title="tgraph on layout:xla:default")
    assert _is_png(out)
    # no validation split: loss panel only, the best epoch from the training loss
    out = plots.plot_learning_curves([{k: r[k] for k in ("epoch", "train_loss")} for r in hist], tmp_path / "lc2.png")
    assert _is_png(out)


def _graphs(sizes, kind, seed=0):
    rng = np.random.default_rng(seed)
    scores, runtimes, rows = {}, {}, []
    for i, n in enumerate(sizes):
        runtime = rng.lognormal(10, 0.5, n) if kind == "layout" else rng.lognormal(0, 0.4, n)  # (n,)
        score = np.log(runtime) + rng.normal(0, 0.3 * (i + 1), n)  # (n,)
        name = f"g{i}"
        scores[name], runtimes[name] = score, runtime
        rows.append({"graph": name, **metrics.evaluate_graph(score, runtime, kind)})
    return scores, runtimes, rows


@pytest.mark.parametrize("kind, sizes", [("layout", [40, 60, 80, 30]), ("tile", [plots.HEXBIN_MIN, 50])])
def test_valid_ranks_png(tmp_path, kind, sizes):
    scores, runtimes, rows = _graphs(sizes, kind)
    assert _is_png(plots.plot_valid_ranks(scores, runtimes, rows, tmp_path / "vr.png", kind=kind, title="t"))


def test_valid_ranks_needs_a_graph(tmp_path):
    with pytest.raises(ValueError, match="no validation graph"):
        plots.plot_valid_ranks({}, {}, [], tmp_path / "vr.png")
    assert not (tmp_path / "vr.png").exists()


def test_run_title_names_model_and_collection(tmp_path):
    assert plots.run_title(tmp_path, "sage", "layout") == "sage on layout"
    (tmp_path / "run.json").write_text(json.dumps({"collection": "layout:nlp:random"}))
    assert plots.run_title(tmp_path / "fold0", "tgraph", "layout") == "tgraph on layout:nlp:random"


def test_a_top_k_that_holds_every_configuration_is_not_shown():
    """valid_ranks.png said "top-100 0.0%" for a graph of 64 configurations (issue 80)."""
    row = {"kendall_tau": 0.5, "top1_slowdown": 0.1, "top10_slowdown": 0.02, "top100_slowdown": 0.0}
    assert "top-100" not in plots._metric_text(row, 64) and "top-10 2.0%" in plots._metric_text(row, 64)
    assert "top-100 0.0%" in plots._metric_text(row, 1000)
