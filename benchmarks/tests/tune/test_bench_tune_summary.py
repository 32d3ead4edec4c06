"""benchmarks/tune/bench_tune.py's summary arithmetic (issue 25's summary.json) on hand-made replay runs."""

from __future__ import annotations

import re
from argparse import Namespace

import pytest
from bench_modules import load_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from load_benchmark("tune/bench_tune.py")


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
    # behind random search beyond the seeds' spread (none here: identical seeds): c at both budgets
    assert [summary["model+online"][b]["behind_random_clearly"] for b in (8, 16)] == [1, 1]
    assert summary["random"][8]["behind_random_clearly"] == 0
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


def test_a_clear_win_is_beyond_the_seeds_spread(bench):
    """clear_difference: +1 / -1 only when the mean log speedups differ by more than 2 standard errors."""
    assert bench.clear_difference([1.2, 1.21, 1.19], [1.1, 1.11, 1.09]) == 1
    assert bench.clear_difference([1.1, 1.11, 1.09], [1.2, 1.21, 1.19]) == -1
    assert bench.clear_difference([1.3, 1.0, 1.2], [1.1, 1.12, 1.08]) == 0  # a higher mean, within the spread
    assert bench.clear_difference([1.2, 1.2], [1.1, 1.1]) == 1  # no spread at all: any difference is clear
    assert bench.clear_difference([1.2, 1.2], [1.2, 1.2]) == 0
    assert bench.clear_difference([1.5], [1.0]) == 0  # one seed: nothing to judge the spread by


def test_summary_counts_clear_wins_and_merges_replays_of_other_seeds(bench, tmp_path):
    import json

    def runs(found: dict[str, list[float]], seeds) -> dict:  # found[strategy][seed], the same at budget 8
        return {f"{s}|8|{seed}": {"found": f[i], "reach95": None, "measured": 8}
                for s, f in found.items() for i, seed in enumerate(seeds)}

    flags = {"budgets": [8], "seeds": [0, 1, 2], "min_speedup": 1.05, "models": {"tile": "a"}, "programs": {
        # a: model+online above TPE beyond the spread; b: above on the mean only; random below TPE clearly on b
        "a|flags": {"best_known": 1.5, "noise": 0.02, "runs": runs(
            {"random": [1.2, 1.21, 1.19], "tpe": [1.2, 1.21, 1.19], "model": [1.2, 1.2, 1.2],
             "model+online": [1.4, 1.41, 1.39]}, (0, 1, 2))},
        "b|flags": {"best_known": 1.5, "noise": 0.02, "runs": runs(
            {"random": [1.0, 1.0, 1.01], "tpe": [1.2, 1.21, 1.19], "model": [1.2, 1.2, 1.2],
             "model+online": [1.5, 1.0, 1.2]}, (0, 1, 2))}}}
    both = {"budgets": [8], "seeds": [0, 1], "min_speedup": 1.05, "models": {"layout": "b"}, "programs": {
        "a|both": {"best_known": 1.2, "noise": 0.02, "runs": runs(
            {"random": [1.1, 1.1], "tpe": [1.0, 1.0], "model": [1.1, 1.1], "model+online": [1.2, 1.2]}, (0, 1))}}}
    for name, data in (("flags.json", flags), ("both.json", both), ("again.json", flags)):
        (tmp_path / name).write_text(json.dumps(data))
    summary = tmp_path / "summary.json"
    bench.merge_replays(Namespace(replays=[tmp_path / "flags.json", tmp_path / "both.json"], json=None,
                                  summary=summary, out=None))
    spaces = json.loads(summary.read_text())["spaces"]
    assert spaces["flags"]["wins_vs_tpe_by_budget"]["model+online"] == {"8": 2}
    assert spaces["flags"]["clear_wins_vs_tpe_by_budget"]["model+online"] == {"8": 1}
    assert spaces["flags"]["clear_losses_vs_tpe_by_budget"]["random"] == {"8": 1}
    assert spaces["flags"]["seeds"] == 3 and spaces["both"]["seeds"] == 2
    assert spaces["both"]["clear_wins_vs_tpe_by_budget"]["model+online"] == {"8": 1}
    with pytest.raises(SystemExit, match=re.escape("replays 'a|flags' again")):
        bench.merge_replays(Namespace(replays=[tmp_path / "flags.json", tmp_path / "again.json"], json=None,
                                      summary=None, out=None))


def test_the_kernel_priors_arithmetic_from_cached_kernel_costs(bench, tmp_path):
    """``--prior-models``: the main-effects prior sums each option's log-cost change from the default's
    single-option neighbours; the table prior is log T̂, a failed compile ranked last; rerank64 keeps the graph
    model's values but orders its best by T̂. Costs come from the cache, so nothing is compiled."""
    import numpy as np

    from graphcost.frontend.programs.flags import FLAG_COLUMNS
    from graphcost.tuning.space import FlagSpace

    base = FlagSpace(columns=FLAG_COLUMNS[:3])
    d = base.default()
    singles = [d[:i] + (v,) + d[i + 1:] for i, dim in enumerate(base.dims) for v in range(1, len(dim.choices))]
    table = [d, singles[0], singles[-1], tuple(s0 or s1 for s0, s1 in zip(singles[0], singles[-1]))]
    program = Namespace(name="p")
    graph = Namespace(memo={c: float(i) for i, c in enumerate(table)}, predictors={}, space=base, program=program)
    effect_costs = np.ones(1 + len(singles))
    effect_costs[1], effect_costs[-1] = 0.5, 4.0  # the first option halves the time, the last quadruples it
    np.save(tmp_path / f"p-effects-{1 + len(singles)}.npy", effect_costs)
    prior = bench.KernelPriorMemo(graph, program, base, table, "effects", tmp_path)
    assert np.allclose(prior(table), [0.0, np.log(0.5), np.log(4.0), np.log(2.0)])
    np.save(tmp_path / f"p-table-{len(table)}.npy", np.array([1.0, 0.5, np.inf, 2.0]))
    prior = bench.KernelPriorMemo(graph, program, base, table, "kernels", tmp_path)
    assert np.allclose(prior(table), np.log([1.0, 0.5, 4.0, 2.0]))  # inf -> twice the slowest that compiled
    prior = bench.KernelPriorMemo(graph, program, base, table, "rerank64", tmp_path)
    assert sorted(prior(table)) == sorted(graph.memo.values()) and prior([table[1]])[0] == 0.0
