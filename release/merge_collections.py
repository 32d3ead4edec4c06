"""Lay several collections out as one data directory for `graphcost train --data-dir` (copies).

    python release/merge_collections.py OUT COLLECTION [COLLECTION ...]

The command line of `graphcost.collect.merge.merge`: a program's graphs keep the split its family has in
the FIRST collection that holds it, a later collection's graphs get ``__<its directory name>``, the manifest
is the first collection's with the union of the flag columns the collections varied. A shipped dataset's
name is accepted for a COLLECTION. OUT is replaced.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from graphcost.collect.merge import merge


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("collections", type=Path, nargs="+")
    args = p.parse_args()
    out = merge(args.collections, args.out)
    counts = {s: sum(1 for _ in (out / s).glob("*.npz")) for s in ("train", "valid", "test")}
    print(f"{out}: {counts}")


if __name__ == "__main__":
    main()
