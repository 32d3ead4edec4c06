"""Train the shipped kernel model (graphcost/pretrained/kernels) on a kernel collection.

    python release/train_kernel_model.py --data collections/cpu_zoo_kernels_flags_xeon \\
        --out src/graphcost/pretrained/kernels

The recipe is `graphcost.kernels.fit.fit_kernel_model`: the kernel trees
(`graphcost.kernels.trees.KernelTrees`) fit every program's leaf kernels, early-stopped on the kernels
of a held-back sixth of the families (seeded), then the sum rule on every program's configurations, and
the flag trees (`FlagTrees`) on every program's flag configurations, blended at the kernel sum's weight
`--flag-weight` (0.5: the weight bench_kernels.py's ``kernels+flags`` row chose on the validation
families in every fold; 1 ships no flag trees). bench_kernels.py's leave-family-out figures measure it.
Written: kernel_trees.txt and flag_trees.txt (LightGBM text, no pickle) and kernel_model.json
(featurizer version, sum rule, blend weight, data, date, command, counts).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from graphcost.kernels.fit import fit_kernel_model
from graphcost.kernels.model import FEATURIZER_VERSION
from graphcost.kernels.trees import save_kernel_model


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
    fitted = fit_kernel_model(args.data, seed=args.seed, rounds=args.rounds, threads=args.threads,
                              flag_weight=args.flag_weight)
    trees, rule = fitted.trees, fitted.rule
    meta = {"featurizer_version": FEATURIZER_VERSION, "data": args.data.name, "programs": fitted.programs,
            "families": fitted.families, "leaf_occurrences": fitted.leaf_occurrences, "rounds": trees.rounds,
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "command": "python release/train_kernel_model.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    save_kernel_model(args.out, trees, rule, meta, fitted.flag_trees, args.flag_weight)
    print(f"kernel model: {trees.rounds} rounds on {fitted.leaf_occurrences} kernel occurrences of {fitted.programs} "
          f"programs; sum rule a={rule.a:.3g} b={rule.b:.3g} s d={rule.d:.3g} s; flag trees at weight "
          f"{1 - args.flag_weight:.2f}; {time.perf_counter() - t0:.0f} s "
          f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
