"""--threads auto: the intra-op threads follow the cores free now (mocked load, affinity, cgroup quota)."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from graphcost import threads
from graphcost.threads import auto_threads


@pytest.mark.parametrize("load, expected", [(0.0, 2), (0.4, 2), (0.6, 1), (1.3, 1), (2.4, 1), (5.0, 1)])
def test_two_cores_share_with_the_load(load, expected):
    choice = auto_threads(cores=2, load=load, machine_cores=2)
    assert choice.threads == expected and choice.cores == 2


def test_the_load_is_spread_over_the_machine_and_bounded_by_the_cores():
    assert auto_threads(cores=16, load=3.0, machine_cores=16).threads == 13
    assert auto_threads(cores=4, load=40.0, machine_cores=64).threads == 2  # a 4-core slice of a busy 64-core host
    assert auto_threads(cores=8, load=0.0, machine_cores=8).threads == 8
    assert auto_threads(cores=8, load=-1.0, machine_cores=8).threads == 8  # nonsense load: idle


def test_defaults_read_affinity_load_and_cgroup_quota(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(threads, "PROC_STAT", tmp_path / "no-proc-stat")  # the load-average fallback
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 0.0, 0.0))
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    quota = tmp_path / "cpu.max"
    quota.write_text("max 100000\n")
    monkeypatch.setattr(threads, "CGROUP_CPU_MAX", quota)
    choice = auto_threads()
    assert (choice.threads, choice.cores, choice.load) == (3, 4, 1.2)  # round(4 - 1.2)
    assert "threads: 3" in choice.describe() and "load 1.20" in choice.describe()
    quota.write_text("150000 100000\n")  # 1.5 CPUs of quota -> 2 cores usable
    assert auto_threads().cores == 2
    monkeypatch.setattr(os, "getloadavg", lambda: (_ for _ in ()).throw(OSError("no load average")))
    assert auto_threads().threads == 2 and auto_threads().load is None


def test_busy_cores_are_measured_now_from_proc_stat(monkeypatch, tmp_path):
    """/proc/stat's counters over the window, not the lagging load average: 3 of 4 cores busy."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 95 800 20 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    monkeypatch.setattr(threads, "PROC_STAT", stat)
    assert threads._cpu_times() == (200, 1020)  # busy = total - idle - iowait
    counters = iter([(200, 1000), (500, 1400)])  # +300 busy of +400 jiffies
    monkeypatch.setattr(threads, "_cpu_times", lambda: next(counters))
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # the load average would say idle
    assert threads.busy_cores(window_s=0.0, machine_cores=4) == pytest.approx(3.0)



def test_bursty_work_counts_through_the_load_average(monkeypatch):
    """A quarter of a second between two bursts of other work read 0.04 busy cores while `uptime` said 2.36, and
    two threads were taken (issue 80): the larger figure decides, and the line says which."""
    monkeypatch.setattr(threads, "busy_cores", lambda window_s=0.25, machine_cores=None: 0.04)
    monkeypatch.setattr(os, "getloadavg", lambda: (2.36, 1.0, 0.5))
    choice = auto_threads(cores=2, machine_cores=2)
    assert choice.threads == 1 and choice.load == pytest.approx(2.36)
    assert "load 2.36 on 2 cores, the 1-minute load average" in choice.describe()
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    monkeypatch.setattr(threads, "busy_cores", lambda window_s=0.25, machine_cores=None: 1.9)  # a job just started
    choice = auto_threads(cores=2, machine_cores=2)
    assert choice.threads == 1 and "busy over the last 0.25 s" in choice.describe()


def test_cli_option_accepts_auto_or_a_count(monkeypatch, capsys):
    import torch

    from graphcost.cli import app
    from graphcost.commands.common import set_threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "auto_threads", lambda: threads.ThreadChoice(1, 2, 1.5, 2))
    before = torch.get_num_threads()
    try:
        set_threads("auto")
        assert "threads: 1 (auto: 2 cores" in capsys.readouterr().err and torch.get_num_threads() == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        set_threads("auto")  # the user's OMP_NUM_THREADS stays in charge
        assert "threads: 1 (OMP_NUM_THREADS" in capsys.readouterr().err
        set_threads("3")
        assert torch.get_num_threads() == 3
        r = CliRunner().invoke(app, ["rank", "/nonexistent", "/nonexistent.npz", "--threads", "many"])
        assert r.exit_code == 2 and "--threads" in r.output and "auto or a number" in r.output
        r = CliRunner().invoke(app, ["rank", "/nonexistent", "/nonexistent.npz"])
        assert r.exit_code == 1 and "threads:" not in r.output  # an error stays one line
    finally:
        torch.set_num_threads(before)
