"""Where the training data is: which npz files make the train / valid / test splits of a run.

Accepted data locations (`resolve_splits`):

1. the official TpuGraphs tree ``<dir>/npz/{tile/xla, layout/{xla,nlp}/{default,random}}/{train,valid,test}``
   with ``--collection`` choosing one collection (`graphcost.data.io.discover`);
2. any directory with ``train/``, ``valid/`` (and optionally ``test/``) subdirectories of npz files;
3. a single directory of npz files, split BY GRAPH into train / valid (seeded, 80/20);
4. no directory at all: the real CPU dataset shipped in the package, found by
   `graphcost.datasets.shipped_for_collection`: ``graphcost/datasets/cpu_layout/{train,valid,test}``
   (layout), or ``graphcost/datasets/cpu_flags/...`` (XLA CPU flags, tile schema) for
   ``--collection tile:xla``;
5. the NAME of a shipped dataset (``--data-dir cpu_zoo_layout``) when no directory of that name
   exists here: that dataset from the package (`graphcost.datasets.SHIPPED`).

Loading the files into prepared graphs is `graphcost.data.transforms.pool`; the seeded split of a
flat directory is `graphcost.data.splits.holdout_split`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphcost.data.splits import holdout_split
from graphcost.datasets import SHIPPED, shipped_for_collection
from graphcost.errors import GraphcostError

SPLITS = ("train", "valid", "test")


class DatasetError(GraphcostError, FileNotFoundError):
    """The requested training data cannot be found; the message says what to pass instead."""


@dataclass
class DataSplits:
    root: Path
    collection: str | None
    files: dict[str, list[Path]] = field(default_factory=dict)
    how: str = ""  # which of the accepted layouts was recognised

    def describe(self) -> str:
        counts = ", ".join(f"{s} {len(self.files.get(s, []))}" for s in SPLITS)
        return f"{self.root} ({self.how}{', ' + self.collection if self.collection else ''}): {counts} graphs"


def _npz(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.npz")) if directory.is_dir() else []


def file_kind(path: Path) -> str | None:
    """"layout" or "tile" from an npz file's keys (node_config_feat / config_feat), None if unknown.

    Reads only the zip directory, not the arrays.
    """
    try:
        with np.load(path, allow_pickle=False) as npz:
            keys = set(npz.files)
    except Exception:  # unreadable: leave it to the loader, which names the problem
        return None
    if "node_config_feat" in keys:
        return "layout"
    if "config_feat" in keys:
        return "tile"
    return None


def _filter_kind(root: Path, split_files: dict[str, list[Path]], collection: str | None) -> dict[str, list[Path]]:
    """Keep only files of the collection's kind; without a collection, refuse a mix of kinds."""
    kinds = {s: [file_kind(f) for f in files] for s, files in split_files.items()}
    if collection is not None:
        want = collection.split(":", 1)[0]
        return {s: [f for f, k in zip(files, kinds[s]) if k in (want, None)] for s, files in split_files.items()}
    found = {k for ks in kinds.values() for k in ks if k is not None}
    if len(found) > 1:
        raise DatasetError(
            f"{root}: holds both layout and tile graphs; pass --collection tile:xla or a layout collection "
            "(layout:xla:default, layout:xla:random, layout:nlp:default, layout:nlp:random)"
        )
    return split_files


def _resolve_dir(root: Path, collection: str | None, seed: int, valid_frac: float) -> DataSplits:
    from graphcost.data.io import discover

    if (root / "npz").is_dir():  # official TpuGraphs tree
        available = discover.available_collections(root)
        if collection is None:
            if len(available) != 1:
                raise DatasetError(
                    f"{root}: holds the collections {sorted(available) or 'none'}; choose one with --collection"
                )
            collection = next(iter(available))
        if collection not in available:
            raise DatasetError(
                f"{root}: collection {collection} not found (available: {sorted(available) or 'none'}); "
                f"expected {discover.collection_dir(root, collection)}/{{train,valid,test}}/*.npz"
            )
        return DataSplits(root, collection, {s: available[collection].get(s, []) for s in SPLITS}, "official layout")
    if collection is not None:
        sub = root.joinpath(*collection.split(":"))  # e.g. <root>/layout/xla/default
        if sub.is_dir():
            splits = _resolve_dir(sub, None, seed, valid_frac)
            splits.collection = collection
            return splits
    split_files = {s: _npz(root / s) for s in SPLITS}
    if split_files["train"]:
        split_files = _filter_kind(root, split_files, collection)
        if not split_files["train"]:
            raise DatasetError(f"{root}/train: no {str(collection).split(':', 1)[0]} graphs for --collection {collection}")
        return DataSplits(root, collection, split_files, "train/valid/test subdirectories")
    flat = _npz(root)
    if flat:
        flat = _filter_kind(root, {"train": flat}, collection)["train"]
        if not flat:
            raise DatasetError(f"{root}: no {str(collection).split(':', 1)[0]} graphs for --collection {collection}")
        train, valid = holdout_split(flat, valid_frac, seed)
        return DataSplits(root, collection, {"train": train, "valid": valid, "test": []}, "one directory, split by graph")
    subdirs = [d for d in sorted(root.iterdir()) if d.is_dir() and any(d.rglob("*.npz"))]
    if len(subdirs) == 1:  # e.g. a package folder holding one dataset
        return _resolve_dir(subdirs[0], collection, seed, valid_frac)
    raise DatasetError(
        f"{root}: no npz graphs found (expected npz/<collection>/..., train/ valid/ test/ subdirectories, "
        f"or *.npz files){'; subdirectories with data: ' + ', '.join(d.name for d in subdirs) if subdirs else ''}"
    )


def shipped_name(data_dir: str | Path | None) -> str | None:
    """The shipped dataset a --data-dir names (`graphcost.datasets.SHIPPED`), or None: a bare name
    counts only when no directory of that name exists here (the local directory wins)."""
    if data_dir is None or str(data_dir) not in SHIPPED or Path(data_dir).expanduser().is_dir():
        return None
    return str(data_dir)


def recorded_data_dir(data_dir: str | Path | None) -> str | None:
    """run.json's ``data_dir``: None for the default shipped data, a shipped dataset's NAME as given
    (found again in whatever install reads the run), else the absolute path."""
    if data_dir is None:
        return None
    return shipped_name(data_dir) or str(Path(data_dir).resolve())


def resolve_splits(
    data_dir: str | Path | None,
    collection: str | None = None,
    *,
    seed: int = 0,
    valid_frac: float = 0.2,
    max_graphs: int | None = None,
    recorded_in: str | Path | None = None,
) -> DataSplits:
    """Find the npz files of each split; `max_graphs` keeps at most that many graphs per split.

    `recorded_in`: the run.json that `data_dir` was read from (not passed by the user), so a
    missing directory is reported as moved data rather than as a bad --data-dir.
    """
    if data_dir is None:
        root = shipped_for_collection(collection)
        if root is None:
            raise DatasetError(
                "no --data-dir given and the shipped CPU dataset (graphcost/datasets) is not installed; "
                "pass --data-dir DIR (an official TpuGraphs tree with --collection, or a directory of npz files)"
            )
    else:
        root = Path(data_dir).expanduser()
        name = shipped_name(data_dir)
        if name is not None:
            try:
                from graphcost.data.io.packed import shipped_data_dir

                root = shipped_data_dir(name)
            except FileNotFoundError as exc:
                raise DatasetError(str(exc)) from None
        if not root.is_dir():
            if recorded_in is not None:
                raise DatasetError(
                    f"{root}: the data directory recorded in {recorded_in} no longer exists (moved or deleted); "
                    "pass --data-dir DIR to say where the data is now"
                )
            raise DatasetError(f"{root}: --data-dir is not a directory")
    splits = _resolve_dir(root, collection, seed, valid_frac)
    if max_graphs is not None and max_graphs > 0:
        splits.files = {s: f[:max_graphs] for s, f in splits.files.items()}
    if not splits.files.get("train"):
        raise DatasetError(f"{root}: no training graphs found")
    check_disjoint(splits)
    return splits


def check_disjoint(splits: DataSplits) -> None:
    """DatasetError when two splits hold the same graph (same npz content), e.g. after data was
    regenerated into an existing directory with a different split."""
    from graphcost.data.io.split_overlap import shared_graphs

    pairs = shared_graphs(splits.files)
    if pairs:
        first, second = pairs[0]
        more = f" (and {len(pairs) - 1} more pair(s))" if len(pairs) > 1 else ""
        raise DatasetError(
            f"{splits.root}: splits share a graph, {first} and {second} have the same content{more}; "
            "a graph in two splits leaks training data into validation/test: remove the duplicates or "
            "regenerate the dataset (`graphcost data synth --overwrite`)"
        )


def has_runtimes(files: list, probe: int = 3) -> bool:
    """True when the first `probe` files are labelled: a ``config_runtime`` with a non-zero value
    (an unlabelled file, like the official TpuGraphs test set, has none or only zero placeholders).
    A labelled file whose runtimes are all equal still counts: the evaluation reports it as skipped.
    A file that cannot be read is a ValueError naming it."""
    import zipfile

    if not files:
        return False
    for f in files[:probe]:
        try:
            with np.load(f, allow_pickle=False) as z:
                rt = np.asarray(z["config_runtime"], np.float64) if "config_runtime" in z.files else None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{f}: cannot read this npz file ({type(exc).__name__}: {exc})") from None
        if rt is None or rt.size == 0 or not np.any(rt != 0):
            return False
    return True
