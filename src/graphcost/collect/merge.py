"""Several collections laid out as one data directory for `graphcost train --data-dir` (copies).

`merge(collections, out)` (`release/merge_collections.py` is its command line): a program's graphs
keep the split its family has in the FIRST collection that holds it (family splits of the same zoo
agree), so validation and test families stay unseen. The first collection's graphs keep their names;
a later one's get ``__<its directory name>``. Labels of different collections are never compared: each
stays its own graph. The manifest is the first collection's, with the union of the flag columns the
collections varied (what a flag model trained on it knows,
`graphcost.frontend.programs.flags.trained_flag_columns`). A shipped dataset's name is accepted for a
collection. OUT is replaced.

Not the merge of one collection's pinned shards (`graphcost.collect.parallel.merge_shards`): here whole
collections, each measured on its own, sit side by side. A collection that cannot be read exits with one
line naming it (these are the release and benchmark scripts' steps).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def lay_out(root: Path, manifest: dict, entries: dict[str, tuple[str, Path, dict]]) -> Path:
    """A data directory at `root` (replaced) holding `entries` (name -> (split, source npz, manifest
    entry)) under their splits, with `manifest`'s other keys (the collection: what it varied)."""
    from graphcost.guards.atomic import atomic_write_json

    if root.exists():
        shutil.rmtree(root)
    kept = {}
    for name, (split, src, entry) in entries.items():
        (root / split).mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, root / split / f"{name}.npz")
        kept[name] = {**entry, "file": f"{split}/{name}.npz", "split": split}
    for split in ("train", "valid", "test"):
        (root / split).mkdir(parents=True, exist_ok=True)
    atomic_write_json({**manifest, "graphs": kept}, root / "manifest.json")
    return root


def resolve(collection: Path) -> Path:
    """A collection directory, or the shipped dataset of that name (a one-line exit when it is neither)."""
    from graphcost.data.io.packed import shipped_data_dir

    if (collection / "manifest.json").is_file():
        return collection
    try:
        return shipped_data_dir(collection.name)
    except (ValueError, FileNotFoundError) as exc:
        sys.exit(f"{collection}: no manifest.json there, and not a shipped dataset ({exc})")


def read_manifest(root: Path) -> dict:
    """A collection's manifest.json, or exit with one line saying what is wrong with it."""
    path = root / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        sys.exit(f"{path}: not a readable collection manifest ({type(exc).__name__}: {exc})")
    if not isinstance(data, dict) or not isinstance(data.get("graphs"), dict):
        sys.exit(f"{path}: field 'graphs' is missing or not an object; is {root} a graphcost collection?")
    return data


def merged_entries(collections: list[Path]) -> tuple[dict, dict[str, tuple[str, Path, dict]]]:
    """(the merged manifest's keys, name -> (split, source npz, manifest entry)) of `collections` laid out together
    (module docstring: the first collection's split of a program, a later collection's names suffixed, the union
    of the flag columns); what `merge` lays out."""
    roots = [resolve(c) for c in collections]
    manifests = [read_manifest(r) for r in roots]
    spaces = {m.get("collection", {}).get("space") for m in manifests}
    if len(spaces) != 1:
        sys.exit(f"{', '.join(map(str, roots))}: collections of different spaces ({sorted(map(str, spaces))}) "
                 "cannot train one model")
    split_of: dict[str, str] = {}
    entries: dict[str, tuple[str, Path, dict]] = {}
    for i, (root, man) in enumerate(zip(roots, manifests)):
        for name, entry in sorted(man["graphs"].items()):
            split = split_of.setdefault(name, entry["split"])
            entries[name if i == 0 else f"{name}__{root.name}"] = (split, root / entry["file"], entry)
    collection = dict(manifests[0].get("collection", {}))
    if "flag_columns" in collection:
        columns = [c for m in manifests for c in m["collection"].get("flag_columns", [])]
        collection["flag_columns"] = list(dict.fromkeys(columns))
    return {**manifests[0], "collection": collection}, entries


def merge(collections: list[Path], out: Path) -> Path:
    """`out` laid out from `collections` (module docstring)."""
    return lay_out(out, *merged_entries(collections))
