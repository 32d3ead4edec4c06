"""benchmarks/tune/bench_tune_live.py's summary arithmetic on hand-made runs (no tuning)."""

from __future__ import annotations

import pytest
from bench_modules import load_benchmark


@pytest.fixture(scope="module")
def live():
    yield from load_benchmark("tune/bench_tune_live.py")


def _row(program, strategy, seed, final, in_search=None):
    return {"program": program, "space": "flags", "strategy": strategy, "budget": 8, "seed": seed,
            "strategy_used": ["model+online" if strategy == "default" else strategy], "model": "shipped",
            "final_speedup": final, "in_search_best": in_search or final,
            "search_vs_final": {"candidates": [{"in_search": final * 1.01, "final": final},
                                               {"in_search": 1.0, "final": 1.0}, {"in_search": 1.02, "final": 1.01}]},
            "seconds": 10.0, "loadavg_before": [1.0, 1.0, 1.0], "loadavg_after": [1.5, 1.0, 1.0],
            "cpu": "x", "cpus": 2, "date_utc": "2026-12-01T00:00:00Z"}


def test_live_summary_per_program_and_per_seed(live):
    finals = {("a", "default"): (1.2, 1.4), ("a", "tpe"): (1.1, 1.1), ("a", "random"): (1.0, 1.0),
              ("b", "default"): (1.0, 1.0), ("b", "tpe"): (1.3, 1.1), ("b", "random"): (1.0, 1.06)}
    rows = [_row(p, s, seed, f[seed]) for (p, s), f in finals.items() for seed in (0, 1)]
    out = live.summarise(rows)
    cell = out["strategies"]["default"]["by_budget"]["8"]
    assert cell["final_by_program"] == {"a": pytest.approx(1.3), "b": pytest.approx(1.0)}
    assert cell["geomean_final_per_seed"] == [pytest.approx(1.2 ** 0.5, abs=1e-4), pytest.approx(1.4 ** 0.5, abs=1e-4)]
    assert (cell["beats_tpe"], cell["loses_to_tpe"], cell["beats_random"], cell["loses_to_random"]) == (1, 1, 1, 1)
    table = live.markdown_table(out)
    assert table.splitlines()[0] == "| program (default / tpe / random) | budget 8 |"
    assert "| a | 1.30 / 1.10 / 1.00 |" in table and "| b | 1.00 / 1.20 / 1.03 |" in table
