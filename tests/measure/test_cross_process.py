"""The cross-process protocol (graphcost.measure.cross_process) on a fake clock: real worker
processes, simulated programs whose calls advance a fake clock by known amounts."""

import json

import numpy as np
import pytest

from graphcost.collect.local import label_arrays, repeat_summary, summarize
from graphcost.measure.cross_process import (CrossProcess, check_executable_ids, combine, measure_processes,
                                                      noise_stats, pool_executables, wait_for_quiet)

NOT_PINNED = CrossProcess(processes=3, measure_core=-1, max_load=1e9, max_wait_s=0)


def fake_job(runtime_ns, rounds=3, calls=2, warmup=1):
    return {"space": "fake", "fake_runtime_ns": runtime_ns,
            "protocol": {"rounds": rounds, "calls": calls, "warmup": warmup, "seed": 0}}


def test_samples_are_per_process_min_over_calls_median_over_rounds(tmp_path):
    # process p, configuration k: ns per call (a list is taken in turn by successive calls, warm-up first)
    fake = [[1000, [5000, 2000, 2500], 3000],
            [1100, 2100, [2900, 9000]],
            [900, 2200, [3500, 3100]]]
    samples, records = measure_processes(fake_job(fake), tmp_path, "proc", NOT_PINNED)
    # config 1 in process 0: warm-up 5000, then rounds (2000, 2500) (5000, 2000) (2500, 5000) -> minima
    # 2000, 2000, 2500 -> median 2000. config 2 in process 1: 2900/9000 alternate, every round sees 2900.
    # config 2 in process 2: warm-up 3500, then (3100, 3500) x3 -> 3100.
    expected = np.array([[1000, 1100, 900], [2000, 2100, 2200], [3000, 2900, 3100]], float)
    np.testing.assert_array_equal(samples, expected)
    np.testing.assert_array_equal(combine(samples), [1000, 2100, 3000])  # median, not mean (3000 vs 3000)
    labels = label_arrays("layout", samples)
    assert labels["config_runtime"].tolist() == [1000, 2100, 3000]
    assert labels["config_runtime_samples"].shape == (3, 3) and labels["config_runtime_samples"].dtype == np.int64
    assert [r["core"] for r in records] == [-1, -1, -1] and all(len(r["load_start"]) == 3 for r in records)


def test_median_over_processes_resists_one_disturbed_process(tmp_path):
    fake = [[1000, 2000], [1010, 2020], [50000, 1990]]  # process 2 was hit by a load spike on config 0
    samples, _ = measure_processes(fake_job(fake, rounds=1, calls=1, warmup=0), tmp_path, "proc", NOT_PINNED)
    np.testing.assert_array_equal(combine(samples), [1010, 2000])


def test_level_median_takes_out_each_process_level_before_the_median():
    # p0, p1, p2 ran at levels 1.00, 1.02, 1.03; p0 and p1 see config 0 faster, p2 (noise) the other way.
    # The plain median takes p1 for config 0 and p2 for config 1, mixing levels: the order flips.
    samples = np.array([[100.0, 102.0, 104.0], [101.0, 103.0, 101.5]])
    plain, level = combine(samples), combine(samples, "level-median")
    assert plain[1] < plain[0] and level[0] < level[1]
    levels = np.median(samples, axis=0)
    np.testing.assert_allclose(level, np.median(samples / levels, axis=1) * np.median(levels))
    same = np.array([[1000.0] * 3, [2000.0] * 3, [1500.0] * 3])  # identical processes: both statistics agree
    np.testing.assert_allclose(combine(same, "level-median"), combine(same))
    one = np.array([[10.0], [30.0]])  # one process: its own runtimes
    np.testing.assert_allclose(combine(one, "level-median"), [10.0, 30.0])
    with pytest.raises(ValueError, match="label statistic must be one of level-median, median"):
        combine(samples, "mean")
    labels = label_arrays("tile", samples, "level-median")
    assert labels["config_runtime"].tolist() == np.round(combine(np.round(samples), "level-median")).tolist()
    assert labels["config_runtime_normalizers"].tolist() == [labels["config_runtime"][0]] * 2


def test_finished_processes_are_kept_and_a_changed_job_discards_them(tmp_path):
    job = fake_job([[100, 200], [110, 210], [120, 220]])
    measure_processes(job, tmp_path, "proc", CrossProcess(processes=2, measure_core=-1, max_load=1e9))
    kept = (tmp_path / "proc0.npz").stat().st_mtime_ns
    samples, records = measure_processes(job, tmp_path, "proc", NOT_PINNED)  # P=3 now: only process 2 runs
    assert (tmp_path / "proc0.npz").stat().st_mtime_ns == kept
    assert [r.get("resumed", False) for r in records] == [True, True, False]
    np.testing.assert_array_equal(samples[:, 2], [120, 220])
    changed = fake_job([[300, 400], [310, 410], [320, 420]])
    samples, records = measure_processes(changed, tmp_path, "proc", NOT_PINNED)
    assert not any(r.get("resumed") for r in records)
    np.testing.assert_array_equal(samples[:, 0], [300, 400])
    assert json.loads((tmp_path / "proc-job.json").read_text())["fake_runtime_ns"][0] == [300, 400]


def test_a_failing_worker_is_a_one_line_error(tmp_path):
    job = fake_job([[100, 200]])  # one process's values, but three processes asked for
    with pytest.raises(RuntimeError, match="measuring process 1 failed"):
        measure_processes(job, tmp_path, "proc", NOT_PINNED)


def test_wait_for_quiet_waits_then_gives_up_after_the_bound():
    loads = iter([[3.0, 3, 3], [2.5, 3, 3], [1.0, 2, 2]])
    slept, said = [], []
    got = wait_for_quiet(1.5, 60, said.append, loadavg=lambda: next(loads), sleep=slept.append, step_s=5)
    assert got == {"load": [1.0, 2, 2], "waited_s": 10.0, "quiet": True} and len(said) == 2
    got = wait_for_quiet(1.5, 10, said.append, loadavg=lambda: [4.0, 4, 4], sleep=lambda s: None, step_s=5)
    assert got["quiet"] is False and got["waited_s"] == 10.0 and "measuring anyway" in said[-1]


def test_configurations_of_one_executable_share_one_label_from_their_samples_together():
    # configs 0 and 2 compiled to one executable; within each process their runtimes are pooled (median)
    samples = np.array([[100.0, 104.0, 98.0], [200.0, 210.0, 190.0], [102.0, 100.0, 101.0], [150.0, 150.0, 152.0]])
    ids = np.array([0, 1, 0, 3])
    pooled, inverse = pool_executables(samples, ids)
    np.testing.assert_allclose(pooled, [[101.0, 102.0, 99.5], [200.0, 210.0, 190.0], [150.0, 150.0, 152.0]])
    assert inverse.tolist() == [0, 1, 0, 2]
    for statistic in ("median", "level-median"):
        label = combine(samples, statistic, ids)
        assert label[0] == label[2]  # one executable, one label
        np.testing.assert_allclose(label[[0, 1, 3]], combine(pooled, statistic))
        assert noise_stats(samples, statistic, ids) == noise_stats(pooled, statistic)
    np.testing.assert_allclose(combine(samples, "median", None), combine(samples))  # no ids: every config its own
    labels = label_arrays("tile", samples, "median", ids)
    assert labels["config_runtime"][0] == labels["config_runtime"][2]
    summary = summarize(samples, "median", ids)
    assert summary["num_configs"] == 4 and summary["num_executables"] == 3
    # the repeat's agreement is taken over executables, each once: the two ties are one point
    repeat = samples[:, ::-1] * 1.01
    assert repeat_summary(repeat, labels["config_runtime"], "median", ids)["spearman_vs_label"] == 1.0
    flipped = repeat[[0, 3, 2, 1]]  # executables 1 and 3 swap places: 3 points, one swap -> Spearman 0.5
    assert repeat_summary(flipped, labels["config_runtime"], "median", ids)["spearman_vs_label"] == 0.5


@pytest.mark.parametrize("ids, problem", [([0, 1], "must be (3,) integers"), ([0.0, 1.0, 2.0], "must be (3,) integers"),
                                          ([0, 2, 2], "index of the first configuration"),
                                          ([0, 0, 1], "index of the first configuration"),
                                          ([-1, 1, 2], "index of the first configuration")])
def test_executable_ids_must_point_at_the_first_configuration_of_their_executable(ids, problem):
    with pytest.raises(ValueError, match=rf"x\.npz: key 'ids': .*{problem.replace('(', '.').replace(')', '.')}"):
        check_executable_ids(np.asarray(ids), 3, "x.npz: key 'ids'")
    assert check_executable_ids(np.array([0, 0, 2]), 3).tolist() == [0, 0, 2]


def test_noise_stats_flag_graphs_whose_configurations_the_processes_cannot_tell_apart():
    rng = np.random.default_rng(0)
    truth = np.exp(rng.uniform(0, 1, size=64)) * 1e6  # (64,) spread e^1
    clear = truth[:, None] * np.exp(rng.normal(0, 0.01, size=(64, 3)))
    noisy = truth[:, None] * np.exp(rng.normal(0, 1.0, size=(64, 3)))
    a, b = noise_stats(clear), noise_stats(noisy)
    assert a["noise_ratio"] < 0.1 and a["process_spearman_mean"] > 0.95 and not a["flagged"]
    assert b["noise_ratio"] > 0.5 and b["flagged"]


def test_only_results_of_recorded_processes_are_adopted(tmp_path):
    """issue 26: a result file that no finished, recorded process wrote (e.g. an orphaned measuring
    process of a killed driver finishing later) is measured again, not adopted."""
    job = fake_job([[100, 200], [110, 210]])
    two = CrossProcess(processes=2, measure_core=-1, max_load=1e9, max_wait_s=0)
    measure_processes(job, tmp_path, "proc", two)
    assert sorted(json.loads((tmp_path / "proc-done.json").read_text())) == ["0", "1"]
    np.savez(tmp_path / "proc0.npz", runtime_ns=np.array([1.0, 2.0]), compile_s=0.0, core=-1,
             loadavg_start=np.zeros(3), loadavg_end=np.zeros(3))  # rewritten behind the driver's back
    samples, records = measure_processes(job, tmp_path, "proc", two)
    assert [r.get("resumed", False) for r in records] == [False, True]
    np.testing.assert_array_equal(samples[:, 0], [100, 200])
    (tmp_path / "proc-done.json").unlink()  # a result without any record
    samples, records = measure_processes(job, tmp_path, "proc", two)
    assert not any(r.get("resumed") for r in records)


def test_run_child_does_not_pass_on_jaxs_fork_warning():
    import subprocess
    import sys
    import warnings

    import pytest

    jax = pytest.importorskip("jax")
    from graphcost.measure.cross_process import run_child

    jax.numpy.ones(2).block_until_ready()  # JAX's threads are up
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        subprocess.run([sys.executable, "-c", "pass"], preexec_fn=lambda: None, check=True)
    if not any("os.fork()" in str(w.message) for w in plain):
        pytest.skip("this JAX does not warn on fork")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proc = run_child([sys.executable, "-c", "print('ok')"], timeout_s=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok"
    assert not any("os.fork()" in str(w.message) for w in caught)


def test_the_worker_runs_only_graphcost_builders():
    """A job's ``builder`` (how the tuner's final check lowers a user's program in the shared worker)
    must name a function of graphcost; anything else stops the worker before it imports it."""
    from graphcost.measure.worker import lower_job

    for builder in ("os:system", "graphcost.tuning.crossproc", "graphcost.x:not an identifier"):
        with pytest.raises(SystemExit, match="expected graphcost.MODULE:FUNCTION"):
            lower_job({"builder": builder})
