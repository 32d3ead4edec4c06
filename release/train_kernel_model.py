"""Train the shipped kernel model (graphcost/pretrained/kernels) on a kernel collection.

    python release/train_kernel_model.py --data collections/cpu_zoo_kernels_flags_xeon \\
        --out src/graphcost/pretrained/kernels

The kernel trees (`graphcost.kernels.trees.KernelTrees`) fit every program's leaf kernels,
early-stopped on the kernels of a held-back sixth of the families (seeded), then the sum rule on
every program's configurations, and the flag trees (`FlagTrees`) on every program's flag
configurations, blended at the kernel sum's weight `--flag-weight` (0.5: the weight bench_kernels.py's
``kernels+flags`` row chose on the validation families in every fold; 1 ships no flag trees). The
recipe is bench_kernels.py's, whose leave-family-out figures measure it. Written: kernel_trees.txt and
flag_trees.txt (LightGBM text, no pickle) and kernel_model.json (featurizer version, sum rule, blend
weight, data, date, command, counts).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks" / "models"))  # bench_kernels: the per-program helpers

from bench_kernels import executions, fit_rule, per_program  # noqa: E402

from graphcost.kernels.table import KernelTable  # noqa: E402
from graphcost.frontend.programs.flags import default_flag_vector  # noqa: E402
from graphcost.kernels.model import FEATURIZER_VERSION  # noqa: E402
from graphcost.kernels.trees import (FlagTrees, KernelTrees, kernel_graph_features, kernel_rows,  # noqa: E402
                                          save_kernel_model)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=600)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--flag-weight", type=float, default=0.5, help="the kernel sum's share of the blend (1: no flag trees)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    table = KernelTable.read(args.data, default_flag_vector())
    feats = np.stack([kernel_graph_features(f, o, table.flops[u], table.transcendentals[u], table.bytes[u])
                      for u, (f, o, _) in enumerate(table.graphs)])
    rows = kernel_rows(feats, table.kernel, table.flags)
    seconds = table.per_execution_ns * 1e-9
    families = sorted(set(table.family.tolist()))
    rng = np.random.default_rng(args.seed)
    valid = set(rng.choice(families, max(1, len(families) // 6), replace=False).tolist())
    usable = table.leaf & (table.count > 0)
    fit = usable & ~np.isin(table.family, sorted(valid))
    val = usable & np.isin(table.family, sorted(valid))
    trees = KernelTrees.fit(rows[fit], seconds[fit], seed=args.seed, rounds=args.rounds,
                            valid=(rows[val], seconds[val]), threads=args.threads)
    trees = KernelTrees.fit(rows[usable], seconds[usable], seed=args.seed, rounds=trees.rounds, threads=args.threads)
    n = executions(table, table.executions_read)
    rule = fit_rule(per_program(table, sorted(table.programs), trees.predict(rows), n), table)
    meta = {"featurizer_version": FEATURIZER_VERSION, "data": args.data.name, "programs": len(table.programs),
            "families": len(families), "leaf_occurrences": int(usable.sum()), "rounds": trees.rounds,
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "command": "python release/train_kernel_model.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    flag_trees = None
    if args.flag_weight < 1.0:
        names = sorted(table.programs)
        flag_trees = FlagTrees.fit([table.programs[p]["config_feat"] for p in names],
                                   [table.programs[p]["label"] for p in names], seed=args.seed, threads=args.threads)
    save_kernel_model(args.out, trees, rule, meta, flag_trees, args.flag_weight)
    print(f"kernel model: {trees.rounds} rounds on {int(usable.sum())} kernel occurrences of {len(table.programs)} "
          f"programs; sum rule a={rule.a:.3g} b={rule.b:.3g} s d={rule.d:.3g} s; flag trees at weight "
          f"{1 - args.flag_weight:.2f}; {time.perf_counter() - t0:.0f} s "
          f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
