"""The ablation of a kept configuration: which changes carry its speedup (bookkeeping on known timings)."""

from __future__ import annotations

import numpy as np

from graphcost.measure.interleaved import TimingProtocol
from graphcost.tuning import ablation, final_check
from graphcost.tuning.crossproc import Remeasurement
from graphcost.tuning.space import FlagSpace


SEARCH = TimingProtocol(rounds=5, calls=10, warmup=2)  # the in-search protocol


def _kept(space, moved):
    codes = [0] * len(space.dims)
    for i in moved:
        codes[i] = 1
    return tuple(codes)


def _movable(space, n):
    return [i for i, d in enumerate(space.dims) if len(d.choices) > 1][:n]


def test_each_change_is_dropped_in_turn():
    space = FlagSpace()
    moved = _movable(space, 3)
    kept = _kept(space, moved)
    configs = ablation.ablated_configs(space, kept)
    assert [d for d, _, _ in configs] == [space.dims[i].param_name for i in moved]
    for (_, value, without), i in zip(configs, moved):
        assert value == space.dims[i].param_values[1]
        assert without[i] == 0 and sum(c != k for c, k in zip(without, kept)) == 1
    assert ablation.ablated_configs(space, space.default()) == []


def test_report_says_which_change_carries_the_gain():
    # kept 1.5x in 3 processes; without change A 1.0x (it carries all of it), without B 1.5x (nothing)
    sp = np.array([[1.50, 1.00, 1.49], [1.52, 1.01, 1.53], [1.48, 0.99, 1.50]])  # (P, 1 + A)
    report = ablation.ablation_report([("A", True), ("B", 2)], sp, "cross-process")
    assert report["kept_speedup"] == 1.5 and report["processes"] == 3
    a, b = report["changes"]  # the most important first
    assert a["dimension"] == "A" and a["carries"] and abs(a["share_of_gain"] - 1.0) < 1e-9
    assert a["range"] == [0.99, 1.01]
    assert b["dimension"] == "B" and not b["carries"] and abs(b["share_of_gain"]) < 0.01
    line = ablation.summary_line(report)
    assert "carried by A=True" in line and "1 of 2 change(s) within the noise" in line


def test_the_kept_one_is_confirmed_alone_as_timeit_times_then_ablated_with_the_search_protocol(monkeypatch):
    """The confirmation times [default, kept] in processes of their own, as the user runs the program (plain jit
    against compile_with), with visits of about 200 ms over 15 rounds; the ablation then times [default, kept, each
    ablation] together by the search's protocol, as executables."""
    space = FlagSpace()
    moved = _movable(space, 2)
    kept = _kept(space, moved)
    truth = {space.default(): 1000.0, kept: 500.0}  # kept 2x; dropping the first change loses all of it
    first, second = (c for _, _, c in ablation.ablated_configs(space, kept))
    truth.update({first: 1000.0, second: [490.0, 520.0, 505.0]})  # the second: within the processes' noise
    calls = []

    def remeasure(program, space_, evaluator, configs, processes, protocol, program_ref, allow_fast_math, out,
                  kernels=False, as_user=False):
        calls.append((list(configs), protocol, kernels, as_user))
        times = np.array([np.broadcast_to(truth[c], processes) for c in configs]).T  # (P, configs)
        return Remeasurement(times, "in-process", [0.0] * processes)

    monkeypatch.setattr(final_check, "_remeasure", remeasure)
    confirmed, report, profile = ablation.ablate_kept(None, space, None, kept, 3, SEARCH, None, False, None,
                                                      ablation=True, kernels=False)
    timeit_like = TimingProtocol(rounds=15, calls=3, warmup=2, visit_ms=200.0)
    assert calls == [([space.default(), kept], timeit_like, False, True),  # processes that agree: no more timed
                     ([space.default(), kept, first, second], SEARCH, False, False)]
    assert profile is None and report["kept_speedup"] == 2.0
    assert confirmed == {"speedup": 2.0, "range": [2.0, 2.0], "processes": 3, "protocol": "in-process",
                         "per_process": [2.0, 2.0, 2.0], "timing": {"rounds": 15, "visit_ms": 200.0, "min_calls": 3}}
    rows = {r["dimension"]: r for r in report["changes"]}
    assert rows[space.dims[moved[0]].param_name]["carries"]
    assert not rows[space.dims[moved[1]].param_name]["carries"]
    assert abs(rows[space.dims[moved[1]].param_name]["speedup_without"] - 1000 / 505) < 1e-3


def test_too_many_changes_are_not_ablated_but_the_kept_one_is_still_confirmed(monkeypatch):
    space = FlagSpace()
    kept = _kept(space, _movable(space, 2))
    monkeypatch.setattr(ablation, "ABLATION_MAX", 1)
    calls = []

    def remeasure(program, space_, evaluator, configs, processes, protocol, *rest, kernels=False, as_user=False):
        calls.append(list(configs))
        kept_ns = np.resize([800.0, 900.0, 850.0], processes)  # processes that disagree by 12%
        return Remeasurement(np.stack([np.full(processes, 1000.0), kept_ns], 1), "cross-process", [0.0] * processes)

    monkeypatch.setattr(final_check, "_remeasure", remeasure)
    confirmed, report, profile = ablation.ablate_kept(None, space, None, kept, 3, SEARCH, None, False, None,
                                                      ablation=True, kernels=False)
    # the confirmation alone, then more processes (2, 2, 2) while the median's standard error is above 1.5%
    assert calls == [[space.default(), kept]] * 4 and confirmed["processes"] == ablation.CONFIRM_PROCESSES
    sp = 1000 / np.resize([800.0, 900.0, 850.0], 9)
    assert confirmed["speedup"] == round(float(np.median(sp)), 4)
    lo, hi = confirmed["range"]  # a 95% prediction interval of one more process: wider than the processes' spread
    assert lo < sp.min() and hi > sp.max() and abs(np.log(hi) + np.log(lo) - 2 * np.log(np.median(sp))) < 1e-3
    assert "more than the 1 ablated" in report["skipped"] and profile is None
    assert ablation.summary_line(report).startswith("ablation: 2 changes")


def test_the_confirmation_grows_no_further_than_it_is_allowed(monkeypatch):
    space = FlagSpace()
    kept = _kept(space, _movable(space, 1))
    calls = []

    def remeasure(program, space_, evaluator, configs, processes, protocol, *rest, kernels=False, as_user=False):
        calls.append(processes)
        kept_ns = np.resize([800.0, 900.0, 850.0], processes)  # processes that disagree by 12%
        return Remeasurement(np.stack([np.full(processes, 1000.0), kept_ns], 1), "cross-process", [0.0] * processes)

    monkeypatch.setattr(final_check, "_remeasure", remeasure)
    confirmed, _, _ = ablation.ablate_kept(None, space, None, kept, 3, SEARCH, None, False, None, ablation=False,
                                           kernels=False, most=4)
    assert calls == [3, 1] and confirmed["processes"] == 4
    confirmed, _, _ = ablation.ablate_kept(None, space, None, kept, 3, SEARCH, None, False, None, ablation=False,
                                           kernels=False, most=1)
    assert calls[2:] == [1] and confirmed["processes"] == 1


def test_the_confirmation_interval_is_a_prediction_interval_and_more_processes_narrow_it():
    """Three processes that agree within 1% need no more; the interval of a fresh process's speedup is
    Student's t on the logs (t(0.975, 2) = 4.303), so it is wider than their min..max."""
    sp = np.array([1.40, 1.41, 1.42])
    assert ablation.median_standard_error(sp) < ablation.CONFIRM_SE
    c = ablation.confirmation(sp, "cross-process")
    half = 4.3027 * np.log(sp).std(ddof=1) * np.sqrt(4 / 3)
    assert abs(c["range"][0] - 1.41 * np.exp(-half)) < 1e-3 and abs(c["range"][1] - 1.41 * np.exp(half)) < 1e-3
    noisy = np.array([1.04, 1.40, 1.52])  # processes 40% apart: more of them are worth timing
    assert ablation.median_standard_error(noisy) > ablation.CONFIRM_SE


def test_the_reported_speedup_is_by_the_mean_per_call_as_a_user_times_it(monkeypatch):
    """The kept configuration's fastest calls are 1.5x the default's, but it has slow calls: by the mean per
    call (what `timeit` of the tuned function shows) it is only 1.1x, and that is the figure reported."""
    space = FlagSpace()
    kept = _kept(space, _movable(space, 1))

    def remeasure(program, space_, evaluator, configs, processes, protocol, *rest, kernels=False, as_user=False):
        extra = len(configs) - 2  # the ablated configurations: as fast as the default
        fastest = np.tile([1500.0, 1000.0] + [1500.0] * extra, (processes, 1))  # by the per-round minimum, 1.5x
        mean = np.tile([1650.0, 1500.0] + [1650.0] * extra, (processes, 1))  # by the mean per call, 1.1x
        return Remeasurement(fastest, "cross-process", [0.0] * processes, mean_ns=mean)

    monkeypatch.setattr(final_check, "_remeasure", remeasure)
    confirmed, report, _ = ablation.ablate_kept(None, space, None, kept, 3, SEARCH, None, False, None,
                                                ablation=True, kernels=False)
    assert confirmed["speedup"] == 1.1 and report["kept_speedup"] == 1.1


def test_measurements_keep_the_mean_per_call_beside_the_minimum():
    from graphcost.measure.interleaved import TimingProtocol, measure_interleaved

    steps = iter([100, 300] * 100)  # each call alternately takes 100 and 300 ns: minimum 100, mean 200
    now = [0]

    def clock():
        return now[0]

    def call():
        now[0] += next(steps)

    m = measure_interleaved([call], TimingProtocol(rounds=3, calls=4, warmup=0), clock=clock, block=lambda out: None)
    assert m.runtime_ns.tolist() == [100.0] and m.mean_ns.tolist() == [200.0]


def test_visits_sized_by_their_length_give_every_configuration_about_the_same_time():
    """With visit_ms, a configuration 10x slower than another makes 10x fewer calls per visit (at least `calls`):
    each visit lasts about visit_ms, as ``python -m timeit`` sizes its loops."""
    from graphcost.measure.interleaved import CALLS_PER_VISIT_MAX, measure_interleaved, visit_calls

    now = [0]
    made = [0, 0, 0]

    def make(j, ns):
        def call():
            now[0] += ns
            made[j] += 1
        return call

    calls = [make(0, 1_000_000), make(1, 100_000), make(2, 50_000_000)]  # 1 ms, 0.1 ms, 50 ms per call
    m = measure_interleaved(calls, TimingProtocol(rounds=2, calls=3, warmup=1, visit_ms=10.0), clock=lambda: now[0],
                            block=lambda out: None)
    assert m.calls_per_visit.tolist() == [10, 100, 3]  # 10 ms / 1 ms, 10 ms / 0.1 ms, and the floor of 3 calls
    assert made == [1 + 1 + 2 * 10, 1 + 1 + 2 * 100, 1 + 1 + 2 * 3]  # warm-up, the sizing call, 2 rounds
    assert m.mean_ns.tolist() == [1e6, 1e5, 5e7]
    assert visit_calls(1.0, 1e-9, 1) == CALLS_PER_VISIT_MAX
    m = measure_interleaved(calls, TimingProtocol(rounds=1, calls=3, warmup=0), clock=lambda: now[0],
                            block=lambda out: None)
    assert m.calls_per_visit.tolist() == [3, 3, 3]  # without visit_ms: `calls` each, as before
