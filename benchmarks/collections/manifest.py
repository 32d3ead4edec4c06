"""The raw collections' manifest (collections/MANIFEST.json): per collection folder its file count, total bytes and a
sha256 over its files, beside what was written by hand (the command that made it, the machine, the dates, what was
built from it).

    python benchmarks/collections/manifest.py            # (re)compute files / bytes / sha256 into MANIFEST.json
    python benchmarks/collections/manifest.py --check    # exit 1 naming every collection that no longer matches

The sha256 is over the folder's files in the order of their sorted relative paths (POSIX): for each, its path, a
NUL byte, the sha256 of its contents (hex) and a newline. Stdlib only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "collections"
MANIFEST = "MANIFEST.json"
COMPUTED = ("files", "bytes", "sha256")  # the fields this script owns; every other one is written by hand


def folder_digest(folder: Path) -> dict[str, int | str]:
    """{"files": count, "bytes": total size, "sha256": the digest over the sorted paths and contents} of `folder`."""
    files = sorted((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.relative_to(folder).as_posix())
    h = hashlib.sha256()
    size = 0
    for path in files:
        data = path.read_bytes()
        size += len(data)
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\n")
    return {"files": len(files), "bytes": size, "sha256": h.hexdigest()}


def collection_folders(root: Path) -> list[str]:
    """The collection folders under `root` (every sub-folder)."""
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def mismatches(root: Path) -> list[str]:
    """One line per collection whose recorded files / bytes / sha256 differ from its folder's, or that is only on
    one side (a folder not in the manifest, an entry without its folder)."""
    recorded = json.loads((root / MANIFEST).read_text(encoding="utf-8"))["collections"]
    out = [f"{name}: a folder of {root} the manifest does not list" for name in collection_folders(root)
           if name not in recorded]
    for name, entry in recorded.items():
        if not (root / name).is_dir():
            out.append(f"{name}: listed in {MANIFEST}, no folder {root / name}")
            continue
        now = folder_digest(root / name)
        out += [f"{name}: {key} is {now[key]}, the manifest says {entry.get(key)}" for key in COMPUTED
                if entry.get(key) != now[key]]
    return out


def update(root: Path) -> None:
    """Write the computed fields of every folder into the manifest (a new folder gets an entry to fill in)."""
    path = root / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for name in collection_folders(root):
        manifest["collections"].setdefault(name, {}).update(folder_digest(root / name))
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the collections folder (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a mismatch")
    args = parser.parse_args(argv)
    if not (args.root / MANIFEST).is_file():
        print(f"error: no {MANIFEST} in {args.root}", file=sys.stderr)
        return 2
    if args.check:
        bad = mismatches(args.root)
        for line in bad:
            print(line, file=sys.stderr)
        if not bad:
            print(f"{args.root / MANIFEST}: every collection matches")
        return 1 if bad else 0
    update(args.root)
    print(f"wrote {args.root / MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
