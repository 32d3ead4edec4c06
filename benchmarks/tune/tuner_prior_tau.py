"""Zero-shot: how well the default tuner's flag prior ranks each suite program's measured configurations.

    python benchmarks/tune/tuner_prior_tau.py [--tables benchmarks/results/tune_wide/tables]
        [--into benchmarks/results/bench_real.json]

For each of the 14 suite programs' measured flag tables (`bench_tune.py measure`: configurations timed against
the default), the prior `graphcost tune` ships with for the flag space (`graphcost.tuning.kernel_prior.
KernelEffectsPrior`, built exactly as the tuner builds it: the default and its single-option configurations
compiled through a persistent cache and costed by the shipped kernel model) scores every configuration that ran,
and Kendall's τ with the measured ratios is taken (the prior never saw a timing of the program). The shipped
flag model v6's τ on the same configurations, from the replay that chose the prior
(`benchmarks/results/tune_robust/suite_replay_kernel_priors.json`, ``zero_shot_kendall``), stands beside it.

Writes `zero_shot.tuner_prior` into bench_real.json: ``{"flags": {"median_kendall_tau": .., "per_program": ..},
"model": "kernels:effects", "previous": {"model": .., "median_kendall_tau": ..}}`` with the command, machine,
date and load. Compiles only (nothing is timed): it may run beside other work.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tune import build, load_table, replay_space  # noqa: E402
from tune_suite import SUITE  # noqa: E402

from graphcost.frontend.programs.user_program import TuneProgram  # noqa: E402
from graphcost.guards.atomic import atomic_write_json  # noqa: E402
from graphcost.measure.interleaved import cpu_model, load_average  # noqa: E402
from graphcost.tuning.kernel_prior import LABEL, KernelEffectsPrior  # noqa: E402
from graphcost.tuning.trial import OK, Evaluator  # noqa: E402

REPLAY = Path(__file__).resolve().parents[1] / "results" / "tune_robust" / "suite_replay_kernel_priors.json"


def program_tau(path: Path) -> tuple[str, float, dict]:
    """(program, τ of the shipped prior against the table's measured ratios, the prior's description)."""
    from scipy.stats import kendalltau

    data, raw = load_table(path)
    program = TuneProgram(*build(data["program"]), data["program"])
    base, convert = replay_space(data, program)
    ok = {convert(c): t.ratio for c, t in raw.items() if t.status == OK}
    with tempfile.TemporaryDirectory(prefix="graphcost-prior-") as cache:
        prior = KernelEffectsPrior(base, Evaluator(program, base, cache_dir=Path(cache) / "jax_cache"))
    codes = list(ok)
    tau = float(kendalltau(prior(codes), [ok[c] for c in codes]).statistic)
    return data["program"], tau, prior.describe()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=Path, default=Path("benchmarks/results/tune_wide/tables"))
    ap.add_argument("--into", type=Path, default=Path("benchmarks/results/bench_real.json"))
    args = ap.parse_args()
    load0, start = load_average(), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    per_program, built = {}, {}
    for path in sorted(args.tables.glob("*-flags.json")):
        name = path.name[:-len("-flags.json")]
        if name not in SUITE:
            continue
        name, tau, about = program_tau(path)
        per_program[name], built[name] = round(tau, 4), about
        print(f"{name}: tau {tau:.3f} ({about['compiled']} configurations compiled in {about['seconds']:.1f} s)",
              flush=True)
    previous = json.loads(REPLAY.read_text())["programs"]
    v6 = {k.split("|")[0]: v["zero_shot_kendall"] for k, v in previous.items() if k.endswith("|flags")}
    entry = {"flags": {"median_kendall_tau": round(float(np.median(list(per_program.values()))), 4),
                       "programs": len(per_program), "per_program": per_program,
                       "prior_seconds_median": round(float(np.median([b["seconds"] for b in built.values()])), 2)},
             "model": LABEL,
             "previous": {"model": "the shipped flag model v6 (graph model, src/graphcost/pretrained/tile)",
                          "median_kendall_tau": round(float(np.median([v6[k] for k in per_program if k in v6])), 4),
                          "source": str(REPLAY.relative_to(REPLAY.parents[2]))},
             "command": "python benchmarks/tune/tuner_prior_tau.py " + " ".join(sys.argv[1:]),
             "machine": f"{cpu_model()}", "date_utc": start, "loadavg_before": load0, "loadavg_after": load_average()}
    report = json.loads(args.into.read_text())
    report.setdefault("zero_shot", {})
    if not isinstance(report["zero_shot"], dict):
        report["zero_shot"] = {}
    report["zero_shot"]["tuner_prior"] = entry
    atomic_write_json(report, args.into, indent=2)
    print(f"median tau: shipped prior {entry['flags']['median_kendall_tau']:.3f}, "
          f"v6 {entry['previous']['median_kendall_tau']:.3f} on {len(per_program)} programs -> {args.into}")


if __name__ == "__main__":
    main()
