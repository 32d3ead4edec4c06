"""Time the README's main job (`graphcost train`, then `graphcost evaluate RUN`) and record the load.

Runs both commands as a user would (fresh processes, default options, a fresh run directory) and
records, per command, the wall time, the 1-minute load average at its start and end and its mean
over the run (sampled every 2 s), the `threads:` line the command printed, and the test Kendall τ
`evaluate` reports. `--busy N` first starts N processes that each keep one core busy (a pure-Python
spin loop) and stops them at the end: the main job timed at load, on purpose. Prints a table and
writes JSON.

    python benchmarks/models/bench_main_job.py --tag quiet
    python benchmarks/models/bench_main_job.py --tag busy3 --busy 3
    python benchmarks/models/bench_main_job.py --tag busy3-t2 --busy 3 --train-args "--threads 2"

Needs graphcost installed (or PYTHONPATH=src); nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

SPIN = "while True: pass"


def _load() -> float:
    return os.getloadavg()[0]


def _run(cmd: list[str], env: dict) -> dict:
    """Run `cmd`, sampling the load every 2 s; wall time, loads, its output."""
    samples, stop = [], threading.Event()

    def sample() -> None:
        while not stop.wait(2.0):
            samples.append(_load())

    start_load = _load()
    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    stop.set()
    watcher.join()
    if proc.returncode != 0:
        sys.exit(f"error: {shlex.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    threads = next((line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("threads: ")), "")
    return {"command": shlex.join(cmd), "wall_s": round(wall, 1), "load_start": round(start_load, 2),
            "load_end": round(_load(), 2), "load_mean": round(sum(samples) / len(samples), 2) if samples else None,
            "threads_line": threads, "stdout": proc.stdout}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tag", default="run", help="name of this measurement (in the JSON file name)")
    ap.add_argument("--busy", type=int, default=0, help="spin this many one-core processes beside the job")
    ap.add_argument("--train-args", default="", help="extra arguments of graphcost train (e.g. '--threads 2')")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/main_job"), help="directory of the JSON")
    a = ap.parse_args()
    env = os.environ.copy()
    env.pop("OMP_NUM_THREADS", None)  # the job chooses its own threads, as a user's would
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(a.busy)]
    try:
        if spinners:
            time.sleep(60)  # let the 1-minute load average see them
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp) / "run"
            train = _run([sys.executable, "-m", "graphcost", "train", "--out", str(run), "--no-progress",
                          *shlex.split(a.train_args)], env)
            evaluate = _run([sys.executable, "-m", "graphcost", "evaluate", str(run), "--format", "json"], env)
    finally:
        for p in spinners:
            p.terminate()
        for p in spinners:
            p.wait()
    tau = json.loads(evaluate.pop("stdout"))["aggregate"]["kendall_tau"]
    epochs = [line for line in train.pop("stdout").splitlines() if re.match(r"epoch \d+/\d+: ", line)]
    result = {"tag": a.tag, "busy_processes": a.busy, "train": train, "evaluate": evaluate, "test_kendall_tau": tau,
              "epochs_run": len(epochs), "cpus": os.cpu_count(),
              "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
              "machine": platform.processor() or platform.machine(), "python": platform.python_version(),
              "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    print(f"{'command':<10} {'wall s':>8} {'load start':>10} {'load mean':>10} {'load end':>9}  threads")
    for name in ("train", "evaluate"):
        r = result[name]
        print(f"{name:<10} {r['wall_s']:>8.1f} {r['load_start']:>10.2f} {str(r['load_mean']):>10} "
              f"{r['load_end']:>9.2f}  {r['threads_line']}")
    print(f"test Kendall tau {tau:.4f}; {a.busy} busy process(es) beside the job; {result['epochs_run']} epochs")
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / f"{a.tag}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
