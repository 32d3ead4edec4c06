"""Does a flag model rank the tuner's candidates better when it trains on configurations sampled the
way the tuner samples them? Models trained on the flag zoo, on a second collection of the same
programs, on both, and on the zoo cut to the second's programs (issues 33 and 34).

    python benchmarks/lab/compare_training_data.py --add collections/cpu_zoo_flags_tuner \\
        [--base cpu_zoo_flags] [--seeds 3] [--work runs/training_data] [--json benchmarks/results/training_data.json]

The shipped flag zoo (``--base``, `cpu_zoo_flags`) samples half its configurations with EVERY option
at a uniformly random value, the fast-math family included. `graphcost tune` proposes candidates
spread differently (`graphcost.tuning.space.sample_pool`: a share rho ~ U(0, 1) of the options
changed, or 1-3; fast-math at its default), and so were the tune suite's tables. ``--add`` is a
collection in that distribution (``graphcost collect --space flags --mode tuner``;
``SPACE=flags MODE=tuner benchmarks/collections/run_zoo_collection.sh``).

Every graph keeps the split the base collection gives its program (whole families per side), so the
validation and test families of every variant are the same families, never trained on. Variants:

* ``base``: the base collection;
* ``base, same programs``: the base collection cut to the programs ``--add`` holds (as many graphs as ``add``);
* ``add``: the added collection alone;
* ``base + add``: both (a program's two graphs are two graphs; labels of different sessions are never compared).

Each is `graphcost train --data-dir` with no options, ``--seeds`` seeds. Rows: Kendall τ on the
validation families (what chooses) and the test families, against either collection's labels, and
zero-shot on the tune suite's flag tables (`benchmarks/results/tune_wide/tables`) over all
configurations and within the near-default (1-3 flags changed) and farther halves
(`diagnose_zero_shot_subsets`); per seed, and mean ± std over seeds.

Runs that exist in ``--work`` are reused (delete them to train again).
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks" / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite

ADDED_SUFFIX = "__add"  # file-name suffix of the added collection's graphs in the `base + add` data


def variants(base: Path, add: Path, work: Path) -> tuple[dict[str, Path], dict[str, Path], dict]:
    """(training data per variant, evaluation data per label source, graphs per variant and split)."""
    import bench_real as br
    from graphcost.collect.merge import lay_out

    bm, am = br.read_manifest(base), br.read_manifest(add)
    if am.get("collection", {}).get("space") != "flags":
        sys.exit(f"{add}/manifest.json: collection.space is not 'flags'")
    bg, ag = bm["graphs"], am["graphs"]
    common = sorted(set(bg) & set(ag))
    if not common:
        sys.exit(f"{add}: no program in common with {base}")

    def of(man_graphs, root, names, suffix=""):
        return {n + suffix: (bg[n]["split"], root / man_graphs[n]["file"], man_graphs[n]) for n in names}

    data = {"base": lay_out(work / "data_base", bm, of(bg, base, sorted(bg))),
            "base, same programs": lay_out(work / "data_base_same", bm, of(bg, base, common)),
            "add": lay_out(work / "data_add", am, of(ag, add, common)),
            "base + add": lay_out(work / "data_both", bm, {**of(bg, base, sorted(bg)),
                                                            **of(ag, add, common, ADDED_SUFFIX)})}
    evaluation = {"base labels": data["base"], "add labels": data["add"]}
    counts = {v: {s: sum(1 for _ in (d / s).glob("*.npz")) for s in ("train", "valid", "test")}
              for v, d in data.items()}
    return data, evaluation, counts


def main() -> None:
    import compare_regimes as cr
    import diagnose_zero_shot_subsets as zs
    from graphcost.collect.merge import resolve

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--add", type=Path, required=True, help="flag collection of the zoo's programs in another "
                   "configuration distribution (collect --mode tuner)")
    p.add_argument("--base", type=Path, default=Path("cpu_zoo_flags"), help="default: the shipped flag zoo")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "training_data")
    p.add_argument("--tables", type=Path, default=ROOT / "benchmarks" / "results" / "tune_wide" / "tables")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seeds", type=int, default=3, help="training seeds per variant (0, 1, ...)")
    p.add_argument("--only", nargs="*", default=None, help="train only these variants (default: all four)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    base = resolve(args.base)
    load_start = [round(x, 2) for x in os.getloadavg()]
    data, evaluation, counts = variants(base, args.add, args.work)
    for v, c in counts.items():
        print(f"{v:<22} graphs: " + ", ".join(f"{s} {n}" for s, n in c.items()), flush=True)
    models: dict[str, dict] = {}
    for variant, d in data.items():
        if args.only and variant not in args.only:
            continue
        per_seed = []
        for seed in range(args.seeds):
            run = args.work / f"run_{d.name.removeprefix('data_')}_s{seed}"
            took = round(cr.train(d, run, seed, args.threads), 1)
            taus = {f"{split} families, {lab}": cr.split_tau(run, ev, split)
                    for split in ("valid", "test") for lab, ev in evaluation.items()}
            suite = zs.summary(zs.tune_suite(run, args.tables))
            taus.update({f"zero-shot {k}": suite[k] for k in ("median all", "mean all", "mean near-default",
                                                               "mean farther")})
            per_seed.append({"seed": seed, "kendall_tau": taus, "train_seconds": took})
            print(f"  {variant}, seed {seed}: " + ", ".join(f"{k} {v:.3f}" for k, v in taus.items()), flush=True)
        rows = {k: [s["kendall_tau"][k] for s in per_seed] for k in per_seed[0]["kendall_tau"]}
        models[variant] = {"mean": {k: float(np.mean(v)) for k, v in rows.items()},
                           "std": {k: float(np.std(v)) for k, v in rows.items()}, "seeds": per_seed}
        print(f"  {variant}, mean ± std over {args.seeds} seeds: "
              + ", ".join(f"{k} {np.mean(v):.3f} ± {np.std(v):.3f}" for k, v in rows.items()), flush=True)
    if args.json:
        from graphcost.guards.atomic import atomic_write_json

        shown = args.add.resolve()
        atomic_write_json({"command": "python benchmarks/lab/compare_training_data.py " + " ".join(sys.argv[1:]),
                           "add": str(shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown),
                           "base": base.name, "graphs": counts, "date": date.today().isoformat(),
                           "load": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
                           "models": models}, args.json)


if __name__ == "__main__":
    main()
