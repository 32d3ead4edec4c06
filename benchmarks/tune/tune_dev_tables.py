"""Replay tables of the tuner's DEVELOPMENT programs, made from the shipped flag collections (issue 34).

The tuner's own choices (its learner, the first round's mix of probes and the model's top picks) are
made on development programs kept apart from the 14-program evaluation suite (`tune_suite.py`). The
five programs measured for that first (`benchmarks/results/tune_dev`) are thin evidence. The shipped
flag collections already hold measured flag configurations of many more programs: this writes one
replay table (`bench_tune.py`'s format) per program of their VALIDATION families — families the
shipped flag model was not trained on (it saw their training families only), none in the suite
(the leakage test compares fingerprints). The test families stay out: two of them (ssm, unet) are
families of suite programs.

A program measured in both collections (`cpu_zoo_flags`: half near the default, half random;
`cpu_zoo_flags_tuner`: spread as the tuner spreads its candidates) gets one table of both pools. Each
configuration's ratio is its runtime over the default's, measured in the same interleaved batch
(``config_runtime_normalizers``); a configuration in both pools gets the mean of its two ratios.
Configurations the tuner's default space cannot propose (the fast-math family off its default) are
left out. Then::

    python benchmarks/tune/tune_dev_tables.py --out benchmarks/results/tune_dev_zoo
    python benchmarks/tune/bench_tune.py replay --out benchmarks/results/tune_dev_zoo --spaces flags \\
        --programs $(python benchmarks/tune/tune_dev_tables.py --out benchmarks/results/tune_dev_zoo --list) ...

The tables are derived from shipped data and are not committed (re-made in seconds).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from graphcost.guards.atomic import atomic_write_json  # noqa: E402
from graphcost.data.io.packed import shipped_data_dir  # noqa: E402

COLLECTIONS = ("cpu_zoo_flags", "cpu_zoo_flags_tuner")


def pooled_ratios(collections: list[Path], split: str) -> tuple[dict[str, dict[tuple, list[float]]], dict]:
    """{program: {flag values (24,): [runtime / default runtime, one per pool that measured it]}} of
    every graph of `split` in `collections`, and each program's provenance (family, collections)."""
    pools: dict[str, dict[tuple, list[float]]] = defaultdict(lambda: defaultdict(list))
    about: dict[str, dict] = {}
    for root in collections:
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        for entry in manifest["graphs"].values():
            if entry["split"] != split:
                continue
            name = Path(entry["file"]).stem
            with np.load(root / entry["file"], allow_pickle=False) as npz:
                feat, runtime = npz["config_feat"], npz["config_runtime"]  # (K, 24), (K,)
                default = npz["config_runtime_normalizers"]  # (K,)
            for row, t, d in zip(feat, runtime, default):
                pools[name][tuple(int(v) for v in row)].append(float(t) / float(d))
            info = about.setdefault(name, {"family": entry["family"], "collections": []})
            info["collections"].append(root.name)
    return pools, about


def table(name: str, pool: dict[tuple, list[float]], about: dict, space) -> dict:
    """One replay table: every configuration of `pool` that `space` can propose, as codes."""
    where = [{int(v): i for i, v in enumerate(d.choices)} for d in space.dims]
    trials, left_out = [], 0
    for values, ratios in pool.items():
        try:
            codes = [where[i][v] for i, v in enumerate(values[: len(where)])]
        except KeyError:  # a value the default space does not search (fast-math)
            left_out += 1
            continue
        ratio = float(np.mean(ratios))
        trials.append({"codes": codes, "status": "ok", "ratio": ratio, "runtime_ns": ratio, "default_ns": 1.0,
                       "error": ""})
    default = [0] * len(where)
    if not any(t["codes"] == default for t in trials):
        raise ValueError(f"{name}: no measurement of the default configuration")
    return {"program": name, "space": "flags", "dims": [d.name for d in space.dims], "space_size": space.size(),
            "whole_space": False, "trials": trials,
            "best_known_speedup": max(1.0 / t["ratio"] for t in trials),
            "source": {"collections": about["collections"], "family": about["family"],
                       "left_out_fast_math": left_out,
                       "note": "runtime_ns / default_ns hold the ratio only (shipped labels, not re-measured)"}}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="the tables go to OUT/tables/")
    p.add_argument("--list", action="store_true", help="print the programs' names and write nothing")
    args = p.parse_args(argv)
    from graphcost.tuning.space import FlagSpace

    pools, about = pooled_ratios([shipped_data_dir(c) for c in COLLECTIONS], "valid")
    if args.list:
        print(" ".join(sorted(pools)))
        return
    space = FlagSpace()
    try:
        (args.out / "tables").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        sys.exit(f"--out {args.out}: cannot make its tables/ directory ({exc.strerror})")
    sizes = []
    for name in sorted(pools):
        data = table(name, pools[name], about[name], space)
        atomic_write_json(data, args.out / "tables" / f"{name}-flags.json", indent=1)
        sizes.append(len(data["trials"]))
    families = sorted({a["family"] for a in about.values()})
    print(f"{len(pools)} tables of {len(families)} families ({', '.join(families)}), "
          f"{min(sizes)}-{max(sizes)} configurations each (the default space's) -> {args.out / 'tables'}")


if __name__ == "__main__":
    main()
