"""The program list of a wide collection: N programs of every zoo family, half training steps.

    python benchmarks/collections/zoo_programs.py --per-family 14 [--seed 0] [--timings T.json --max-ms 5] > LIST

--timings: a JSON {program: ms per call of its default configuration} (one core, XLA single-threaded);
programs slower than --max-ms are left out (a 30-ms program costs a 1-core collection minutes per graph).

Per family and mode (fwd / train), a seeded sample of the cheaper half of its variants (size proxy:
`graphcost.collect.jobs.program_cost`), so every family and both modes are covered at the
sizes a 1-core measurement can afford. The list is interleaved across families (round-robin), so a
collection stopped early, or dealt to parallel shards, still covers every family.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import numpy as np  # noqa: E402

from graphcost.collect.jobs import program_cost  # noqa: E402
from graphcost.frontend.programs.zoo import FAMILIES, list_programs  # noqa: E402


def select(per_family: int, seed: int, slow: frozenset = frozenset()) -> list[str]:
    rng = np.random.default_rng(seed)
    queues = []
    for family in FAMILIES:
        picked = []
        for mode in ("fwd", "train"):
            group = sorted((s for s in list_programs(family) if s.family == family and s.hparams.get("mode") == mode
                            and s.name not in slow), key=program_cost)
            group = group[: max(1, (len(group) + 1) // 2)]
            want = per_family // 2 + (per_family % 2 if mode == "fwd" else 0)
            picked += [group[i].name for i in rng.permutation(len(group))[:want]]
        order = rng.permutation(len(picked))
        queues.append([picked[i] for i in order])
    out = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--per-family", type=int, default=14)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timings", type=Path, default=None)
    p.add_argument("--max-ms", type=float, default=5.0)
    args = p.parse_args()
    slow = frozenset()
    if args.timings:
        import json

        slow = frozenset(n for n, ms in json.loads(args.timings.read_text()).items() if ms is None or ms > args.max_ms)
    print("\n".join(select(args.per_family, args.seed, slow)))


if __name__ == "__main__":
    main()
