"""Does a tuning run's kept speedup reproduce as a user would time it? (issue 67 §4)

    python benchmarks/tune/bench_verify_suite.py --programs dwsep,recsys,moe,unet --budget 16 \\
        --work /tmp/verify_suite --out benchmarks/results/verify_suite.json

For each tune-suite program (`benchmarks/tune/tune_suite.py`): `graphcost tune benchmarks/tune/tune_suite.py:make_NAME
--budget B --out WORK/NAME` with no other options (what a user gets), then `graphcost verify WORK/NAME`
(`graphcost.workload.verify`: plain ``jax.jit(fn)`` against ``graphcost.compile_with(fn, best.json)`` in 3 fresh
processes, mean per call, beside the final check's two executables, minimum per call). A finished run or
verification in WORK is kept (re-run to resume). The JSON holds, per program, the run's claim (kept speedup
and its range over the final check's processes) and the four reproduction figures: user pair / executables
pair x mean / min per call. This is a timing: run it alone, and the load is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from graphcost.guards.atomic import atomic_write_json  # noqa: E402


def run(cmd: list[str]) -> int:
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", default="dwsep,recsys,moe,unet")
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--work", type=Path, default=Path("/tmp/verify_suite"))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "verify_suite.json")
    args = ap.parse_args()
    gc = [sys.executable, "-m", "graphcost"]
    out = {"budget": args.budget, "programs": {}, "started_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    loads = [os.getloadavg()[0]]
    for name in [p for p in args.programs.split(",") if p]:
        run_dir = args.work / name
        t0 = time.perf_counter()
        if not (run_dir / "result.json").exists():
            rc = run([*gc, "tune", f"benchmarks/tune/tune_suite.py:make_{name}", "--budget", str(args.budget),
                      "--out", str(run_dir)])
            if not (run_dir / "result.json").exists():
                out["programs"][name] = {"error": f"graphcost tune exited {rc} without result.json"}
                continue
        tune_s = time.perf_counter() - t0
        loads.append(os.getloadavg()[0])
        if not (run_dir / "verify.json").exists():
            rc = run([*gc, "verify", str(run_dir)])  # exit 1 when it does not agree: still a result
            if not (run_dir / "verify.json").exists():
                out["programs"][name] = {"error": f"graphcost verify exited {rc} without verify.json"}
                continue
        loads.append(os.getloadavg()[0])
        result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
        verify = json.loads((run_dir / "verify.json").read_text(encoding="utf-8"))
        out["programs"][name] = {
            "claimed": verify["claimed"], "agrees": verify["agrees"],
            **{k: {s: round(v[s], 4) for s in ("median", "min", "max")} for k, v in verify["figures"].items()},
            "strategy": result.get("strategy"), "tune_wall_s": round(tune_s, 1)}
        print(f"{name}: claimed {verify['claimed']['speedup']:.3f}x "
              f"({verify['claimed']['speedup_range'][0]:.3f}-{verify['claimed']['speedup_range'][1]:.3f}); "
              f"user mean {verify['figures']['user_mean']['median']:.3f}x, user min "
              f"{verify['figures']['user_min']['median']:.3f}x, executables min "
              f"{verify['figures']['executables_min']['median']:.3f}x: {'agrees' if verify['agrees'] else 'DOES NOT agree'}",
              flush=True)
        out["load_1min"] = {"min": min(loads), "max": max(loads)}
        atomic_write_json(out, args.out, indent=1)
    agree = sum(bool(p.get("agrees")) for p in out["programs"].values())
    print(f"{agree} of {len(out['programs'])} runs reproduce within their reported range")
    out["agree"] = agree
    out["finished_utc"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    atomic_write_json(out, args.out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
