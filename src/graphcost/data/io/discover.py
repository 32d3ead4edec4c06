"""Find TpuGraphs npz files on disk.

Official layout (what the download tars extract to, TpuGraphs README)::

    <root>/npz/tile/xla/{train,valid,test}/*.npz
    <root>/npz/layout/{xla,nlp}/{default,random}/{train,valid,test}/*.npz

The root defaults to ``~/data/tpugraphs`` (the README's), overridden by ``$GRAPHCOST_DATA_DIR``.
Collections are named ``optimization:source[:search]`` as in the paper: ``tile:xla``,
``layout:xla:default``, ``layout:xla:random``, ``layout:nlp:default``, ``layout:nlp:random``.

Any other directory of schema-valid npz files works too (`find_npz_files`), with or without
``train/valid/test`` subdirectories.
"""

from __future__ import annotations

import os
from pathlib import Path

from graphcost.errors import GraphcostError
from graphcost.metrics import COLLECTIONS as METRIC_COLLECTIONS

__all__ = [
    "COLLECTIONS",
    "SPLITS",
    "DataNotFoundError",
    "default_data_root",
    "collection_dir",
    "find_collection_files",
    "find_npz_files",
    "available_collections",
]

SPLITS = ("train", "valid", "test")
# collection "a:b[:c]" (graphcost.metrics.COLLECTIONS, the one list) -> its directory npz/a/b[/c] in a TpuGraphs tree
COLLECTIONS: dict[str, tuple[str, ...]] = {name: ("npz", *name.split(":")) for name in METRIC_COLLECTIONS}
ENV_VAR = "GRAPHCOST_DATA_DIR"


class DataNotFoundError(GraphcostError, FileNotFoundError):
    """Expected data is not on disk; the message says what was expected and how to get it."""


def default_data_root() -> Path:
    """``$GRAPHCOST_DATA_DIR`` if set, else ``~/data/tpugraphs`` (the TpuGraphs README's location)."""
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else Path("~/data/tpugraphs").expanduser()


def check_collection(collection: str) -> str:
    if collection not in COLLECTIONS:
        raise ValueError(f"unknown collection {collection!r}; expected one of {', '.join(COLLECTIONS)}")
    return collection


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return split


def collection_dir(root: str | Path | None, collection: str) -> Path:
    """``<root>/npz/...`` directory of a collection (not checked for existence)."""
    root = default_data_root() if root is None else Path(root).expanduser()
    return root.joinpath(*COLLECTIONS[check_collection(collection)])


def _how_to_get(root: Path, collection: str) -> str:
    return (
        f"get it with `graphcost data download --collection {collection} --data-dir {root}` "
        f"(needs internet; or copy the official npz_*.tar files into {root} and run the same command to "
        f"extract them), or make synthetic stand-in data with "
        f"`graphcost data synth --collection {collection} --out {root}`"
    )


def find_collection_files(root: str | Path | None, collection: str, split: str) -> list[Path]:
    """Sorted npz files of one split of an official collection under `root` (None = default root).

    Raises `DataNotFoundError` naming the expected directory and how to obtain it.
    """
    check_split(split)
    base = collection_dir(root, collection)
    root_path = base.parents[len(COLLECTIONS[collection]) - 1]
    directory = base / split
    if not directory.is_dir():
        raise DataNotFoundError(
            f"collection {collection} split {split}: expected directory {directory} does not exist; "
            + _how_to_get(root_path, collection)
        )
    files = sorted(directory.glob("*.npz"))
    if not files:
        raise DataNotFoundError(
            f"collection {collection} split {split}: directory {directory} has no .npz files; "
            + _how_to_get(root_path, collection)
        )
    return files


def find_npz_files(path: str | Path, split: str | None = None) -> list[Path]:
    """Npz files under any directory (or a single file), with or without split subdirectories.

    * ``split`` given: ``<path>/<split>/*.npz``; an error if there is no such subdirectory.
    * ``split`` None: ``<path>/*.npz`` plus ``<path>/{train,valid,test}/*.npz``.
    """
    path = Path(path).expanduser()
    if path.is_file():
        if path.suffix != ".npz":
            raise ValueError(f"{path}: not an .npz file")
        return [path]
    if not path.is_dir():
        raise DataNotFoundError(f"{path}: no such file or directory (expected an .npz file or a directory of them)")
    if split is not None:
        check_split(split)
        sub = path / split
        if not sub.is_dir():
            raise DataNotFoundError(
                f"{path}: no '{split}' subdirectory; expected {sub}/*.npz "
                f"(pass split=None to use the files directly in {path})"
            )
        files = sorted(sub.glob("*.npz"))
    else:
        files = sorted(path.glob("*.npz"))
        for s in SPLITS:
            files += sorted((path / s).glob("*.npz"))
    if not files:
        where = path / split if split else path
        raise DataNotFoundError(f"{where}: no .npz files found")
    return files


def available_collections(root: str | Path | None = None) -> dict[str, dict[str, list[Path]]]:
    """Which official collections/splits exist under `root`: {collection: {split: files}}."""
    out: dict[str, dict[str, list[Path]]] = {}
    for name in COLLECTIONS:
        base = collection_dir(root, name)
        splits = {s: sorted((base / s).glob("*.npz")) for s in SPLITS if (base / s).is_dir()}
        splits = {s: f for s, f in splits.items() if f}
        if splits:
            out[name] = splits
    return out
