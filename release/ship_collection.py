"""Ship a finished (or partly finished) collection inside the package, split by family.

    python release/ship_collection.py SRC NAME --title TITLE --command CMD [--overwrite]

SRC is a directory written by `graphcost collect` (+ ``--repeat``); NAME is the dataset's name under
``src/graphcost/datasets/`` (it must be one of `graphcost.datasets.SHIPPED`). The graphs are copied
with a FAMILY split (`graphcost.collect.parallel.merge_shards`, whole families per side,
seed 0: valid and test hold families the training side never saw), the repeat measurements kept,
and the data card written from the result; a dataset of `graphcost.datasets.PACKED` ships as its one packed
file beside the card (`graphcost.data.io.packed.pack_dataset`). The old copy is replaced only with
``--overwrite``, and only once the new one is complete.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def staging_for(name: str, known, overwrite: bool) -> tuple[Path, Path]:
    """(the shipped dataset's directory, an empty staging directory beside it) for dataset `name`, which must
    be one of `known`; exits with one line when it is not, or when the directory exists without `overwrite`."""
    if name not in known:
        sys.exit(f"{name}: not one of {', '.join(known)}")
    dest = ROOT / "src" / "graphcost" / "datasets" / name
    if dest.exists() and not overwrite:
        sys.exit(f"{dest}: exists; pass --overwrite to replace it")
    staging = dest.with_name(dest.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    return dest, staging


def install(staging: Path, dest: Path) -> None:
    """Put the complete `staging` directory in the place of `dest` (the old copy removed only once the new one
    is there)."""
    if dest.exists():
        old = dest.with_name(dest.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        dest.rename(old)
        staging.rename(dest)
        shutil.rmtree(old)
    else:
        staging.rename(dest)


def main() -> None:
    from graphcost.data.io.packed import pack_dataset
    from graphcost.datasets import PACKED, SHIPPED
    from graphcost.collect.card import write_card
    from graphcost.collect.parallel import merge_shards

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("src", type=Path)
    p.add_argument("name")
    p.add_argument("--title", required=True)
    p.add_argument("--command", required=True, help="the command that collected SRC, quoted in the card")
    p.add_argument("--notes", type=Path, default=None, help="markdown appended to the card")
    p.add_argument("--overwrite", action="store_true")
    args = p.parse_args()
    dest, staging = staging_for(args.name, SHIPPED, args.overwrite)
    try:
        manifest = merge_shards([args.src], [], staging, split="family")
    except ValueError as exc:
        sys.exit(str(exc))
    write_card(staging, args.title, args.command, args.notes, name=args.name)
    if args.name in PACKED:  # shipped as one file beside its card (graphcost.data.io.packed)
        packed = staging.with_name(staging.name + ".packed")
        shutil.rmtree(packed, ignore_errors=True)
        packed.mkdir()
        pack_dataset(staging, packed / PACKED[args.name])
        shutil.copy2(staging / "CARD.md", packed / "CARD.md")
        shutil.rmtree(staging)
        staging = packed
    install(staging, dest)
    sides = {s: sum(e["split"] == s for e in manifest["graphs"].values()) for s in ("train", "valid", "test")}
    print(f"{dest}: {len(manifest['graphs'])} graphs ({sides}), card {dest / 'CARD.md'}")


if __name__ == "__main__":
    main()
