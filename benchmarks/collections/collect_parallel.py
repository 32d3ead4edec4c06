"""Collect on every core of a many-core machine at once, then merge (graphcost.collect.parallel).

    python benchmarks/collections/collect_parallel.py --programs-file F --work W --out DATASET \\
        [--cores 0-15] [--repeat-cores 2] [--deadline 480] [collect options...]

Each core runs its own ``graphcost collect`` under ``taskset -c CORE`` (driver, one compile thread and
the measuring processes on that core; XLA single-threaded; no load wait, since the other cores are
busy by design) into ``W/shards/main-CORE`` or ``W/shards/repeat-CORE``. At ``--deadline`` seconds
every collection is interrupted (SIGINT: finished graphs are kept, the graph in flight is dropped)
and the shards are merged into ``--out`` with a family split. Every collection is resumable: run the
same command again to continue the shards (the merge is redone into a new --out).

The labels are this machine's own: ship them as a dataset named for its CPU, never mixed with
another machine's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def parse_cores(text: str) -> list[int]:
    cores: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cores.extend(range(int(lo), int(hi or lo) + 1))
    return cores


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--programs-file", type=Path, required=True, help="one zoo program name a line, in order")
    p.add_argument("--work", type=Path, required=True, help="shard directories go under WORK/shards")
    p.add_argument("--out", type=Path, help="merged collection (must not exist); default: no merge")
    p.add_argument("--cores", default=None, help="cores to use, e.g. 0-15 (default: every core allowed)")
    p.add_argument("--repeat-cores", type=int, default=2, help="cores running repeat shards")
    p.add_argument("--deadline", type=float, default=0, help="seconds until every collection is interrupted (0: none)")
    p.add_argument("--space", default="layout")
    p.add_argument("--configs", type=int, default=32)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", default="family", choices=("family", "stratified"))
    args = p.parse_args()

    names = [line.strip() for line in args.programs_file.read_text().splitlines() if line.strip()]
    cores = parse_cores(args.cores) if args.cores else sorted(os.sched_getaffinity(0))
    n_main = len(cores) - args.repeat_cores
    sys.path.insert(0, str(ROOT / "src"))
    from graphcost.collect.parallel import merge_shards, shard_programs

    mains, repeats = shard_programs(names, n_main, args.repeat_cores)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    shards_dir = args.work / "shards"
    shards_dir.mkdir(parents=True, exist_ok=True)
    procs = []
    for core, (role, progs) in zip(cores, [("main", m) for m in mains] + [("repeat", r) for r in repeats]):
        if not progs:
            continue
        shard = shards_dir / f"{role}-{core:02d}"
        cmd = ["taskset", "-c", str(core), sys.executable, "-m", "graphcost", "collect",
               "--programs", ",".join(progs), "--limit", "0", "--space", args.space, "--configs", str(args.configs),
               "--rounds", str(args.rounds), "--calls", str(args.calls), "--warmup", "2", "--seed", str(args.seed),
               "--processes", str(args.processes), "--compile-workers", "1", "--max-wait", "0",
               "--measure-core", str(core), "--out", str(shard), "--cache-dir", str(args.work / "cache" / shard.name)]
        log = open(shard.with_suffix(".log"), "a")
        procs.append((shard, subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True)))
    print(f"{len(procs)} collections on cores {cores}: {n_main} main, {args.repeat_cores} repeat; "
          f"{len(names)} programs", flush=True)
    t0 = time.time()
    while any(pr.poll() is None for _, pr in procs):
        time.sleep(5)
        if args.deadline and time.time() - t0 > args.deadline:
            for _, pr in procs:
                if pr.poll() is None:
                    os.killpg(pr.pid, signal.SIGINT)
            for _, pr in procs:
                try:
                    pr.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    os.killpg(pr.pid, signal.SIGKILL)
            break
    done = {}
    for shard, pr in procs:
        try:
            done[shard.name] = len(json.loads((shard / "manifest.json").read_text())["graphs"])
        except (OSError, ValueError, KeyError):
            done[shard.name] = 0
    print(f"after {time.time() - t0:.0f} s: graphs per shard {done} (total main "
          f"{sum(v for k, v in done.items() if k.startswith('main'))})", flush=True)
    if args.out:
        main_dirs = [s for s, _ in procs if s.name.startswith("main") and done[s.name]]
        repeat_dirs = [s for s, _ in procs if s.name.startswith("repeat") and done[s.name]]
        manifest = merge_shards(main_dirs, repeat_dirs, args.out, split=args.split, seed=args.seed)
        reps = [g["repeat"]["spearman_vs_label"] for g in manifest["graphs"].values() if "repeat" in g]
        print(f"merged {len(manifest['graphs'])} graphs into {args.out}; repeats {len(reps)}"
              + (f", median Spearman {sorted(reps)[len(reps) // 2]:.3f}" if reps else ""), flush=True)


if __name__ == "__main__":
    main()
