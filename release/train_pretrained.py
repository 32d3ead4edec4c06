"""Train the cost models that ship with graphcost (`graphcost.pretrained`) and install them in the tree.

    python release/train_pretrained.py [--kinds layout tile] [--version N] [--layout-data DIR]
        [--flags-data DIR] [--dest DIR] [--threads 1] [--seed S] [--seeds N] [--model-opt KEY=VALUE ...]

Each is ``graphcost train`` with its defaults on shipped data (``cpu_layout`` for the layout model, the
flag zoos ``cpu_zoo_flags`` + ``cpu_zoo_flags_tuner`` for the flag model, laid out together by
`graphcost.collect.merge`, unless ``--layout-data`` / ``--flags-data`` name others); the run's ``best.pt``
(with ``--seeds N``: its ``ensemble.json`` and every member's ``seed_*/best.pt``), ``blend.json``,
``trees.txt`` and ``run.json`` are copied to ``src/graphcost/pretrained/<kind>/`` (or
``--dest``/<kind>/, to try a candidate without replacing the shipped one) and ``MODELS.json`` there
records the version, the command, the data and how many training graphs it held, the machine and the
date. Nothing else of the run ships (no optimizer state).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from graphcost.guards.atomic import atomic_write_json
from graphcost.collect.merge import merge
from graphcost.data.io.packed import shipped_data_dir

ROOT = Path(__file__).resolve().parents[1]
DEST = ROOT / "src" / "graphcost" / "pretrained"
SHIPPED_FILES = ("best.pt", "ensemble.json", "blend.json", "trees.txt", "run.json")  # those the run holds


def count_train_graphs(data_dir: Path | None) -> int:
    """How many graphs the run trained on: the npz files of the data's ``train/`` (a shipped
    dataset's name resolves to its directory, unpacked if it ships packed), so MODELS.json tells which release it saw."""
    path = data_dir if data_dir is not None else Path("cpu_layout")
    if not (path / "train").is_dir():
        path = shipped_data_dir(path.name)
    return sum(1 for _ in (path / "train").glob("*.npz"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kinds", nargs="+", default=["layout", "tile"], choices=["layout", "tile"])
    p.add_argument("--version", type=int, required=True, help="the models' version (raise it on every re-training)")
    p.add_argument("--layout-data", type=Path, default=None, help="layout training data (default: the shipped one)")
    p.add_argument("--flags-data", type=Path, nargs="+", default=[Path("cpu_zoo_flags"), Path("cpu_zoo_flags_tuner")],
                   help="flag training data: one or several collections, laid out together by "
                   "merge_collections.py (default: the shipped flag zoos cpu_zoo_flags and cpu_zoo_flags_tuner)")
    p.add_argument("--dest", type=Path, default=DEST,
                   help="where the models are installed (default: the package's, src/graphcost/pretrained)")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "pretrained")
    p.add_argument("--threads", default="1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=1, help="graphcost train --seeds: a seed ensemble of n graph models")
    p.add_argument("--model-opt", action="append", default=[],
                   help="graphcost train --model-opt KEY=VALUE for every kind trained (repeatable)")
    args = p.parse_args()

    manifest_path = args.dest / "MODELS.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    for kind in args.kinds:
        run = args.work / kind
        shown = run.relative_to(ROOT) if run.is_relative_to(ROOT) else run
        cmd = ["graphcost", "train", "--out", str(shown), "--overwrite", "--seed", str(args.seed), "--threads", args.threads]
        if args.seeds > 1:
            cmd += ["--seeds", str(args.seeds)]
        data_dir, data_name, merged = args.layout_data, None, False
        if kind == "tile":
            merged = len(args.flags_data) > 1
            data_dir = merge(args.flags_data, args.work / "flags_data") if merged else args.flags_data[0]
            data_name = " + ".join(d.name for d in args.flags_data)
        for opt in args.model_opt:
            cmd += ["--model-opt", opt]
        if data_dir is not None:  # relative to ROOT when inside it (the command runs there)
            cmd += ["--data-dir", str(data_dir.relative_to(ROOT) if data_dir.is_relative_to(ROOT) else data_dir)]
        print("$", " ".join(cmd), flush=True)
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "graphcost", *cmd[1:]], check=True, cwd=ROOT)  # --out relative to ROOT
        seconds = time.time() - t0
        target = args.dest / kind
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)  # --dest's parents included
        shipped = [name for name in SHIPPED_FILES if (run / name).is_file()]
        shipped += [str(m.relative_to(run)) for m in sorted(run.glob("seed_*/best.pt"))]  # a seed ensemble's members
        for name in shipped:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(run / name, target / name)
        info = json.loads((run / "run.json").read_text())
        if merged:  # the merged copy stays here: `graphcost evaluate` of the shipped run reads the first
            # collection's families (the merged data's valid/test families are its)
            info["data_dir"] = str(args.flags_data[0])
            atomic_write_json(info, target / "run.json")
        data = data_name or (data_dir.name if data_dir is not None else "cpu_layout")
        manifest[kind] = {"version": args.version, "data": data, "train_graphs": count_train_graphs(data_dir),
                          "command": " ".join(cmd), "seeds": args.seeds,
                          "date": time.strftime("%Y-%m-%d"), "train_seconds": round(seconds),
                          "machine": f"{platform.machine()} {os.cpu_count()} cores", "run": info.get("name", run.name),
                          "files": sorted(shipped)}
        size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
        print(f"{kind}: installed {target} ({size / 2**20:.1f} MiB)")
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
