"""A collection killed with SIGKILL mid-graph resumes without repeating finished work: finished
graphs keep their files, finished measuring processes of the interrupted graph are not re-run."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

PROGRAMS = "mlp-d1-w64-b8-fwd,mlp-d1-w64-b8-train"


def _cmd(out):
    return [sys.executable, "-m", "graphcost.cli", "collect", "--programs", PROGRAMS, "--limit", "0", "--configs", "2",
            "--rounds", "1", "--calls", "1", "--warmup", "0", "--processes", "2", "--measure-core", "-1",
            "--max-load", "1000", "--out", str(out)]


def test_kill_9_mid_graph_then_resume(tmp_path):
    out = tmp_path / "col"
    proc = subprocess.Popen(_cmd(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    marker = out / ".work" / "mlp-d1-w64-b8-train" / "proc0.npz"  # graph 1 done, graph 2 has one process
    deadline = time.time() + 240
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert marker.exists(), "the collection did not reach the second graph's first process"
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["graphs"]) == ["mlp-d1-w64-b8-fwd"]
    first = out / manifest["graphs"]["mlp-d1-w64-b8-fwd"]["file"]
    first_mtime, kept = first.stat().st_mtime_ns, np.load(marker)["runtime_ns"]

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
