"""A collection killed with SIGKILL mid-graph resumes without repeating finished work: finished
graphs keep their files, finished measuring processes of the interrupted graph are not re-run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

PROGRAMS = "mlp-d1-w64-b8-fwd,mlp-d1-w64-b8-train"


def _cmd(out):
    return [sys.executable, "-m", "graphcost.cli", "collect", "--programs", PROGRAMS, "--limit", "0", "--configs", "2",
            "--rounds", "1", "--calls", "1", "--warmup", "0", "--processes", "2", "--measure-core", "-1",
            "--max-load", "1000", "--out", str(out)]


def test_kill_9_mid_graph_then_resume(tmp_path):
    out = tmp_path / "col"
    proc = subprocess.Popen(_cmd(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    work = out / ".work" / "mlp-d1-w64-b8-train"
    marker = work / "proc-done.json"  # graph 1 done, graph 2 has one recorded process
    deadline = time.time() + 240
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert marker.exists(), "the collection did not reach the second graph's first process"
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["graphs"]) == ["mlp-d1-w64-b8-fwd"]
    first = out / manifest["graphs"]["mlp-d1-w64-b8-fwd"]["file"]
    first_mtime, kept = first.stat().st_mtime_ns, np.load(work / "proc0.npz")["runtime_ns"]

    done = subprocess.run(_cmd(out), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["graphs"]) == sorted(PROGRAMS.split(","))
    assert first.stat().st_mtime_ns == first_mtime  # the finished graph was not collected again
    second = manifest["graphs"]["mlp-d1-w64-b8-train"]
    assert [p.get("resumed", False) for p in second["processes"]] == [True, False]  # process 0 not re-run
    z = np.load(out / second["file"])
    np.testing.assert_array_equal(z["config_runtime_samples"][:, 0], np.round(kept).astype(np.int64))
    assert not (out / ".work").exists()  # the work area is removed once everything is finished


def _measuring_child(parent: int) -> int | None:
    """The pid of a measuring process whose parent is `parent`, if one runs."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and b"graphcost.measure.worker" in cmdline:
            return int(stat.parent.name)
    return None


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG are Linux's")
def test_a_second_collector_is_refused_and_kill_9_leaves_no_orphan(tmp_path):
    """issue 26: while one collection holds --out, another is refused naming its pid; when the driver is
    killed with SIGKILL (itself only), its measuring process dies with it."""
    out = tmp_path / "col"
    proc = subprocess.Popen(_cmd(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    child = None
    try:
        deadline = time.time() + 240
        while child is None and proc.poll() is None and time.time() < deadline:
            child = _measuring_child(proc.pid)
            time.sleep(0.02)
        assert child is not None, "no measuring process appeared"
        os.kill(child, signal.SIGSTOP)  # the driver now waits for it, holding --out
        second = subprocess.run(_cmd(out), capture_output=True, text=True, timeout=120)
        assert second.returncode == 1, second.stderr[-2000:]
        errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "in use by another graphcost process" in errors[0], second.stderr[-2000:]
        assert f"pid {proc.pid}" in errors[0] and "Traceback" not in second.stderr
        os.kill(proc.pid, signal.SIGKILL)  # the driver only, not its process group
        proc.wait()
        deadline = time.time() + 30
        while not _gone(child) and time.time() < deadline:
            time.sleep(0.05)
        assert _gone(child), "the measuring process outlived its killed driver"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
