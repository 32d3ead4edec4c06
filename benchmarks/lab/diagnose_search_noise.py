"""Where does the tuner's in-search speedup disagree with its final check? (issue 34, item 2)

    python benchmarks/lab/diagnose_search_noise.py [--programs moe unet ...] [--configs 8] [--json OUT.json]

For each program of the tune suite, `--configs` random flag configurations that pass the output
check (and the default) are timed against the default with the tuner's interleaved protocol in
four ways, and every pair of ways is compared (Spearman of the speedups default/candidate, and
the spread of their log ratio):

* ``batch A`` / ``batch B``: two interleaved batches in THIS process, on the SAME executables
  (what racing the incumbents within the search would add);
* ``recompiled``: the same configurations compiled again in this process, new executables;
* ``process 1..P``: the final check's cross-process protocol (fresh worker processes;
  `graphcost.tuning.crossproc.remeasure_cross_process`), and their median (``final``).

If A and B agree far better with each other than with the final check, the noise is a property of
the process (or of the executables in it), and more repetitions in the search process cannot fix
the agreement; if ``process p`` vs ``process q`` agree about as well as A vs ``final``, the search's
one process is simply one more process. Timing: run it alone; the load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite

from tune_suite import SUITE  # noqa: E402

from graphcost.guards.atomic import atomic_write_json  # noqa: E402
from graphcost.measure.interleaved import TimingProtocol, cpu_model, load_average, measure_executables, spearman  # noqa: E402


def speedups(runtime_ns: np.ndarray) -> np.ndarray:
    """(K-1,) default runtime / candidate runtime of one measurement whose column 0 is the default."""
    return runtime_ns[0] / runtime_ns[1:]


def compare(a: np.ndarray, b: np.ndarray) -> dict:
    d = np.log(a / b)
    return {"spearman": round(float(spearman(a, b)), 3), "log_ratio_std": round(float(d.std()), 4),
            "median_ratio": round(float(np.exp(np.median(d))), 4)}


def one_program(name: str, configs: int, processes: int, seed: int) -> dict:
    from graphcost.tuning.crossproc import remeasure_cross_process
    from graphcost.frontend.programs.user_program import TuneProgram
    from graphcost.tuning.space import make_space
    from graphcost.tuning.trial import Evaluator, Trial

    fn, args = SUITE[name]()
    program = TuneProgram(fn, args, name)
    space = make_space("flags", program)
    protocol = TimingProtocol(rounds=5, calls=10, warmup=2, seed=seed)
    evaluator = Evaluator(program, space, protocol)
    rng = np.random.default_rng(seed)
    chosen, exes = [], []
    for _ in range(20 * configs):  # random configurations that compile and pass the output check
        codes = space.sample(rng)
        exe = evaluator.compile_many([codes])[0]
        if not isinstance(exe, Trial) and evaluator.check(codes, exe) is None:
            chosen.append(codes)
            exes.append(exe)
        if len(chosen) == configs:
            break
    else:
        raise SystemExit(f"{name}: only {len(chosen)} of {20 * configs} random configurations passed the output check")
    ways: dict[str, np.ndarray] = {}
    batch = [evaluator.default_exe] + exes
    ways["batch A"] = speedups(measure_executables(batch, program.flat_args, protocol).runtime_ns)
    ways["batch B"] = speedups(measure_executables(batch, program.flat_args, replace(protocol, seed=seed + 1)).runtime_ns)
    again = [evaluator.compile(space.default())] + [evaluator.compile(c) for c in chosen]
    ways["recompiled"] = speedups(measure_executables(again, program.flat_args, replace(protocol, seed=seed + 2)).runtime_ns)
    ref = f"{Path(__file__).resolve().parents[1] / 'tune' / 'tune_suite.py'}:{SUITE[name].__name__}"
    rem = remeasure_cross_process(ref, "flags", [space.default()] + chosen, processes, protocol)
    for p in range(processes):
        ways[f"process {p + 1}"] = rem.speedups[p]
    ways["final"] = np.median(rem.speedups, axis=0)
    names = list(ways)
    pairs = {f"{a} vs {b}": compare(ways[a], ways[b]) for i, a in enumerate(names) for b in names[i + 1:]}
    return {"speedups": {k: [round(float(x), 4) for x in v] for k, v in ways.items()}, "pairs": pairs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", nargs="+", default=["moe", "neural_ode", "unet", "recsys"])
    ap.add_argument("--configs", type=int, default=8)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/search_noise.json"))
    args = ap.parse_args()
    out = {"command": "python " + " ".join(sys.argv), "cpu": cpu_model(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
           "load_before": load_average(), "programs": {}}
    for name in args.programs:
        t0 = time.perf_counter()
        res = one_program(name, args.configs, args.processes, args.seed)
        res["seconds"] = round(time.perf_counter() - t0, 1)
        out["programs"][name] = res
        p = res["pairs"]
        print(f"{name}: A~B {p['batch A vs batch B']['spearman']:+.2f}  A~recompiled "
              f"{p['batch A vs recompiled']['spearman']:+.2f}  A~final {p['batch A vs final']['spearman']:+.2f}  "
              f"p1~p2 {p['process 1 vs process 2']['spearman']:+.2f}  ({res['seconds']:.0f} s)", flush=True)
    out["load_after"] = load_average()
    keys = next(iter(out["programs"].values()))["pairs"]
    out["mean_over_programs"] = {k: {m: round(float(np.mean([v["pairs"][k][m] for v in out["programs"].values()])), 4)
                                     for m in ("spearman", "log_ratio_std")} for k in keys}
    atomic_write_json(out, args.json, indent=1)
    print(json.dumps(out["mean_over_programs"], indent=1))


if __name__ == "__main__":
    main()
