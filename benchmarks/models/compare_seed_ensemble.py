"""Choose the best of n seeds on validation families, or average them? Leave-family-out folds over the
DEVELOPMENT families of the flag zoos only (issue 33's "an ensemble" candidate; the test families are never read).

    python benchmarks/models/compare_seed_ensemble.py [--collections cpu_zoo_flags cpu_zoo_flags_tuner] [--folds 5]
        [--seeds 3] [--threads 2] [--work runs/seed_folds] [--json benchmarks/results/seed_ensemble_folds.json]

The shipped flag model is `graphcost train` on the shipped split (17 training, 4 validation and 4 test
families). With 4 validation families, which of several seeds ranks unseen families best is decided by the
families drawn as much as by the model (docs/findings.md, "v6"), so choosing one by its validation τ may
choose noise. This asks the question on more families: the development families (every family the first
collection's split puts in train or valid) are dealt into ``--folds`` groups of about equal graph counts
(`bench_real.family_folds`); fold k holds group k out (its "held-out" families), validates on group k+1
(early stopping, the blend) and trains on the rest, every graph of every collection on its family's side
(`graphcost.collect.merge.lay_out`; labels of different collections stay different graphs). Each fold is
`graphcost train --data-dir FOLD --seeds n` (a seed ensemble, `graphcost.train.seeds`), and then, by
`graphcost evaluate` on the validation and held-out families (mean Kendall τ over all their graphs, TTA as
the command's default):

* every member alone (its own ``best.pt``: the graph model, as one seed of the default recipe would be with
  a blend of weight 1 on it, what the flag data's blend chooses);
* **chosen on validation**: the member with the best validation τ — the rule the shipped model was chosen by;
* **the ensemble**: the members' standardised scores averaged (`RUN_graph_only`: the run without its blend, so
  that it compares with the members alone), and the run itself (that average blended with the trees, the
  weight chosen on validation, as `graphcost train` ships it).

Folds whose run exists in ``--work`` are reused (delete a fold's directory to train it again), so an
interrupted comparison resumes fold by fold.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks" / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite


def development_graphs(collections: list[Path]) -> tuple[dict, dict[str, tuple[str, Path, dict]]]:
    """The collections laid out together as `graphcost.collect.merge.merged_entries` lays them out (its manifest, name
    -> (split, npz, manifest entry)), kept to the development graphs: train or valid in the merged split."""
    from graphcost.collect.merge import merged_entries

    manifest, entries = merged_entries(collections)
    for name, (_, src, entry) in entries.items():
        if not isinstance(entry.get("family"), str):
            sys.exit(f"{src.parent.parent / 'manifest.json'}: graph {name.split('__')[0]!r}: field 'family' is "
                     "missing or not a string")
    return manifest, {name: e for name, e in entries.items() if e[0] in ("train", "valid")}


def fold_layout(manifest: dict, graphs: dict, held_out: list[str], valid: list[str], out: Path) -> Path:
    """Fold data at `out`: `held_out` families as its test split, `valid` as valid, the rest train."""
    from graphcost.collect.merge import lay_out

    def side(family: str) -> str:
        return "test" if family in held_out else "valid" if family in valid else "train"

    return lay_out(out, manifest, {n: (side(e["family"]), src, e) for n, (_, src, e) in graphs.items()})


def evaluate(target: Path, data: Path, split: str, threads: str) -> float:
    """Mean Kendall τ of `target` (a run or a checkpoint) over `data`'s `split` (`graphcost evaluate`)."""
    cmd = [sys.executable, "-m", "graphcost", "evaluate", str(target), "--data-dir", str(data), "--split", split,
           "--format", "json", "--threads", threads]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{' '.join(cmd)} failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    return float(json.loads(r.stdout)["aggregate"]["kendall_tau"])


def graph_only_view(run: Path, members: list[str]) -> Path:
    """``RUN_graph_only``: the seed ensemble `run` without its blend (its members' averaged scores alone, what
    each member alone is compared with); the members' weights are copied (a run's members must lie inside it)."""
    view = run.with_name(f"{run.name}_graph_only")
    for name in ("run.json", "ensemble.json", *members):
        (view / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(run / name, view / name)
    return view


def run_fold(k: int, groups: list[list[str]], manifest: dict, graphs: dict, args) -> dict:
    """Train fold k's seed ensemble (unless finished) and read every member and the ensemble."""
    held_out, valid = groups[k], groups[(k + 1) % len(groups)]
    data = fold_layout(manifest, graphs, held_out, valid, args.work / f"fold_{k}_data")
    run = args.work / f"fold_{k}"
    started, train_s = time.time(), None  # None: the fold's run was reused
    if not (run / "ensemble.json").is_file():
        cmd = [sys.executable, "-m", "graphcost", "train", "--data-dir", str(data), "--out", str(run), "--overwrite",
               "--seeds", str(args.seeds), "--seed", "0", "--threads", args.threads, "--no-progress"]
        print(f"fold {k}: held out {', '.join(held_out)}; valid {', '.join(valid)}: {' '.join(cmd[1:])}", flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        train_s = round(time.time() - started, 1)
    members = json.loads((run / "ensemble.json").read_text())["members"]
    row: dict = {"held_out": held_out, "valid": valid, "train_s": train_s,
                 "graphs": {s: sum(1 for _ in (data / s).glob("*.npz")) for s in ("train", "valid", "test")},
                 "members": []}
    for member in members:
        ckpt = run / member
        row["members"].append({"member": member, "valid": evaluate(ckpt, data, "valid", args.threads),
                               "held_out": evaluate(ckpt, data, "test", args.threads)})
    row["ensemble"] = {"valid": evaluate(run, data, "valid", args.threads),
                       "held_out": evaluate(run, data, "test", args.threads)}
    graph_only = graph_only_view(run, members)
    row["ensemble_graph_only"] = {"valid": evaluate(graph_only, data, "valid", args.threads),
                                  "held_out": evaluate(graph_only, data, "test", args.threads)}
    chosen = max(row["members"], key=lambda m: m["valid"])
    row["chosen_on_valid"] = {"member": chosen["member"], "held_out": chosen["held_out"]}
    row["member_mean_held_out"] = float(np.mean([m["held_out"] for m in row["members"]]))
    taus = " ".join(f"{m['held_out']:.3f}" for m in row["members"])
    print(f"fold {k}: held-out τ members {taus}; chosen on valid {chosen['held_out']:.3f}; ensemble "
          f"{row['ensemble_graph_only']['held_out']:.3f} (blended with the trees {row['ensemble']['held_out']:.3f})",
          flush=True)
    return row


def summary(rows: list[dict]) -> dict:
    """Means over folds (each fold's figure is the mean τ over its held-out graphs)."""
    def stats(values: list[float]) -> dict:
        return {"mean": round(float(np.mean(values)), 4), "std_over_folds": round(float(np.std(values)), 4)}

    ens = [r["ensemble_graph_only"]["held_out"] for r in rows]
    chosen = [r["chosen_on_valid"]["held_out"] for r in rows]
    return {"ensemble_graph_only": stats(ens), "ensemble_blended": stats([r["ensemble"]["held_out"] for r in rows]),
            "chosen_on_valid": stats(chosen),
            "member_mean": stats([r["member_mean_held_out"] for r in rows]),
            "best_member_in_hindsight": stats([max(m["held_out"] for m in r["members"]) for r in rows]),
            "ensemble_beats_chosen_folds": int(sum(e > c for e, c in zip(ens, chosen))),
            "ensemble_beats_member_mean_folds": int(sum(e > r["member_mean_held_out"] for e, r in zip(ens, rows))),
            "folds": len(rows)}


def main() -> None:
    import bench_real as br

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--collections", type=Path, nargs="+", default=[Path("cpu_zoo_flags"), Path("cpu_zoo_flags_tuner")])
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--threads", default="2")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "seed_folds")
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "seed_ensemble_folds.json")
    args = p.parse_args()
    if args.folds < 3 or args.seeds < 2:
        sys.exit("--folds must be >= 3 (a held-out, a validation and training groups) and --seeds >= 2")
    manifest, graphs = development_graphs(args.collections)
    groups = br.family_folds([SimpleNamespace(family=e["family"]) for _, _, e in graphs.values()], args.folds)
    started = datetime.now(timezone.utc)
    rows = [run_fold(k, groups, manifest, graphs, args) for k in range(len(groups))]
    from graphcost.guards.atomic import atomic_write_json

    out = {"command": " ".join(["python benchmarks/models/compare_seed_ensemble.py", *sys.argv[1:]]),
           "collections": [str(c) for c in args.collections], "seeds": args.seeds, "folds": rows,
           "summary": summary(rows), "started_utc": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
           "loadavg_end": [round(x, 2) for x in os.getloadavg()]}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out, args.json)
    print(json.dumps(out["summary"], indent=1))


if __name__ == "__main__":
    main()
