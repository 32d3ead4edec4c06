"""benchmarks/bench_tune.py's summary arithmetic (issue 25's summary.json) on hand-made replay runs."""

from __future__ import annotations

import importlib.util
import sys
from argparse import Namespace
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_tune.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH.parent))
    try:
        spec = importlib.util.spec_from_file_location("bench_tune_under_test", BENCH)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCH.parent))


def _runs(found: dict[str, list[float]], reach: dict[str, int | None], budgets=(8, 16)) -> dict:
    """found[strategy] = the found speedup per budget (the same for both seeds)."""
    return {f"{s}|{b}|{seed}": {"found": f[i], "reach95": reach.get(s), "measured": b}
            for s, f in found.items() for i, b in enumerate(budgets) for seed in (0, 1)}


def test_wins_losses_and_default_against_random(bench):
    results = {"programs": {
        # a: model+online beats TPE at both budgets and random everywhere
        "a|flags": {"best_known": 1.5, "noise": 0.02, "runs": _runs(
            {"random": [1.1, 1.2], "tpe": [1.2, 1.3], "model": [1.2, 1.3], "model+online": [1.4, 1.5]},
            {"random": None, "tpe": 12, "model": 14, "model+online": 3})},
        # b: nothing to find: every strategy ties (no wins, no losses; left out of the reach median)
        "b|flags": {"best_known": 1.0, "noise": 0.02, "runs": _runs(
            {"random": [1.0, 1.0], "tpe": [1.0, 1.0], "model": [1.0, 1.0], "model+online": [1.0, 1.0]}, {})},
        # c: model+online loses to TPE at budget 8 and to random by 10% (> the 3% noise) at budget 8
        "c|flags": {"best_known": 1.3, "noise": 0.03, "runs": _runs(
            {"random": [1.3, 1.3], "tpe": [1.25, 1.2], "model": [1.1, 1.3], "model+online": [1.17, 1.29]},
            {"random": 6, "tpe": 10, "model": 16, "model+online": 15})},
    }}
    args = Namespace(min_speedup=1.05, budgets=[8, 16], seeds=[0, 1])
    summary = bench.summarise(results, args)["flags"]
    assert summary["model+online"][8]["beats_tpe"] == 1 and summary["model+online"][8]["loses_to_tpe"] == 1
    assert summary["model+online"][16]["beats_tpe"] == 2 and summary["model+online"][16]["loses_to_tpe"] == 0
    assert summary["model"][8]["beats_tpe"] == 0 and summary["model"][8]["loses_to_tpe"] == 1
    assert summary["model+online"]["median_reach95"] == pytest.approx(9.0)  # a: 3, c: 15 (b has no gain)
    assert summary["random"]["median_reach95"] is None  # never reached on a, 6 on c: the median (inf, 6) is not reached
    out = bench.issue_summary(results, {"flags": summary}, args)["spaces"]["flags"]
    assert out["programs"] == 3 and out["programs_with_gain"] == 2
    assert out["wins_vs_tpe"]["model+online"] == pytest.approx(1.5)  # median of 1 (b8) and 2 (b16)
    assert out["wins_vs_tpe_by_budget"]["model+online"] == {8: 1, 16: 2}
    worse = out["default_worse_than_random"]
    assert [(w["program"], w["budget"]) for w in worse] == [("c", 8)]
    assert out["mean_speedup_by_budget"]["random"][8] == pytest.approx((1.1 * 1.0 * 1.3) ** (1 / 3))


def test_table_noise_comes_from_the_confirmation(bench):
    assert bench.table_noise({}) == 0.02
    confirm = {"table_speedups": [1.2, 1.1, 1.1], "speedup_median": [1.1, 1.1, 1.0]}
    assert bench.table_noise({"confirm": confirm}) == pytest.approx(1.2 / 1.1 - 1.0)


def test_summary_of_a_missing_or_foreign_file_is_one_line(bench, tmp_path):
    """A --replays file that is missing or is not a replay JSON was a traceback."""
    (tmp_path / "other.json").write_text('{"runs": 1}')
    (tmp_path / "broken.json").write_text("{")
    for name, needle in (("missing.json", "cannot be read"), ("broken.json", "cannot be read"),
                         ("other.json", r"not a replay JSON of this script \(no 'programs'\)")):
        with pytest.raises(SystemExit, match=needle) as caught:
            bench.merge_replays(Namespace(replays=[tmp_path / name]))
        assert str(caught.value).startswith(f"--replays {tmp_path / name}:") and "\n" not in str(caught.value)


def test_report_keeps_the_live_section(bench, tmp_path):
    """A replay's summary.json rewrite keeps the live section bench_tune_live.py wrote there."""
    import json

    results = {"programs": {"a|flags": {"best_known": 1.2, "noise": 0.02, "runs": _runs(
        {"random": [1.1, 1.2], "tpe": [1.1, 1.1], "model": [1.1, 1.2], "model+online": [1.2, 1.2]}, {})}}}
    summary_path = tmp_path / "summary.json"
    summary_path.write_text(json.dumps({"live": {"programs": ["a"]}, "stale": 1}))
    args = Namespace(min_speedup=1.05, budgets=[8, 16], seeds=[0, 1], json=None, summary=summary_path, out=None)
    bench.report(results, args)
    written = json.loads(summary_path.read_text())
    assert written["live"] == {"programs": ["a"]} and "stale" not in written and "spaces" in written
