"""Which npz files make the train / valid / test splits of a training run, and loading them.

Accepted data locations (`resolve_splits`):

1. the official TpuGraphs tree ``<dir>/npz/{tile/xla, layout/{xla,nlp}/{default,random}}/{train,valid,test}``
   with ``--collection`` choosing one collection (`graphcost.data.io.discover`);
2. any directory with ``train/``, ``valid/`` (and optionally ``test/``) subdirectories of npz files;
3. a single directory of npz files, split BY GRAPH into train / valid (seeded, 80/20);
4. no directory at all: the real CPU dataset shipped in the package, found with
   importlib.resources: ``graphcost/datasets/cpu_layout/{train,valid,test}`` (layout), or
   ``graphcost/datasets/cpu_flags/...`` (XLA CPU flags, tile schema) for ``--collection tile:xla``.
"""

from __future__ import annotations

import importlib.resources
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

SPLITS = ("train", "valid", "test")


class DatasetError(FileNotFoundError):
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


def shipped_dataset_root(collection: str | None = None) -> Path | None:
    """The real CPU dataset shipped inside the package, or None: ``cpu_flags`` (XLA CPU flag
    configurations, tile schema) for ``--collection tile:xla``, else ``cpu_layout``."""
    try:
        root = Path(str(importlib.resources.files("graphcost.datasets")))
    except (ModuleNotFoundError, TypeError):
        return None
    candidate = root / ("cpu_flags" if collection == "tile:xla" else "cpu_layout")
    if candidate.is_dir() and any(candidate.rglob("*.npz")):
        return candidate
    return None


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


def split_by_graph(files: Sequence[Path], valid_frac: float, seed: int) -> tuple[list[Path], list[Path]]:
    """Seeded train/valid split of files (one file = one graph, so no graph is on both sides)."""
    files = sorted(files)
    if len(files) < 2:
        return list(files), []
    perm = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x5A17]).permutation(len(files))
    n_valid = min(len(files) - 1, max(1, int(round(valid_frac * len(files)))))
    valid = sorted(files[i] for i in perm[:n_valid])
    train = sorted(files[i] for i in perm[n_valid:])
    return train, valid


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
            raise DatasetError(f"{root}/train: no {collection.split(':', 1)[0]} graphs for --collection {collection}")
        return DataSplits(root, collection, split_files, "train/valid/test subdirectories")
    flat = _npz(root)
    if flat:
        flat = _filter_kind(root, {"train": flat}, collection)["train"]
        if not flat:
            raise DatasetError(f"{root}: no {collection.split(':', 1)[0]} graphs for --collection {collection}")
        train, valid = split_by_graph(flat, valid_frac, seed)
        return DataSplits(root, collection, {"train": train, "valid": valid, "test": []}, "one directory, split by graph")
    subdirs = [d for d in sorted(root.iterdir()) if d.is_dir() and any(d.rglob("*.npz"))]
    if len(subdirs) == 1:  # e.g. a package folder holding one dataset
        return _resolve_dir(subdirs[0], collection, seed, valid_frac)
    raise DatasetError(
        f"{root}: no npz graphs found (expected npz/<collection>/..., train/ valid/ test/ subdirectories, "
        f"or *.npz files){'; subdirectories with data: ' + ', '.join(d.name for d in subdirs) if subdirs else ''}"
    )


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
        root = shipped_dataset_root(collection)
        if root is None:
            raise DatasetError(
                "no --data-dir given and the shipped CPU dataset (graphcost/datasets) is not installed; "
                "pass --data-dir DIR (an official TpuGraphs tree with --collection, or a directory of npz files)"
            )
    else:
        root = Path(data_dir).expanduser()
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


class LazyPrepared(Sequence):
    """Prepared graphs read back from the preprocessing cache on access (at most `keep` in memory).

    Used when a split's prepared graphs would not fit in memory (layout:nlp: up to 120 MB of
    codes per graph). Indexing returns a `PreparedGraph`; `names` / `kinds` are known without
    loading anything; `subset(indices)` is a lazy view (cross-validation folds).
    """

    def __init__(self, files: Sequence[Path], cache_dir: str | Path, dedup: bool, names, kinds, keep: int = 4,
                 counts=None):
        self.files, self.cache_dir, self.dedup = list(files), Path(cache_dir), dedup
        self.names, self.kinds, self.keep = list(names), list(kinds), keep
        self.counts = None if counts is None else [int(c) for c in counts]  # configurations per graph
        self._lru: OrderedDict[int, object] = OrderedDict()

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.subset(range(*index.indices(len(self))))
        from graphcost.data.transforms.preprocess import prepare_graph

        index = int(index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"graph index {index} out of range for {len(self)} graphs")
        index %= len(self)
        if index in self._lru:
            self._lru.move_to_end(index)
            return self._lru[index]
        graph = prepare_graph(self.files[index], dedup=self.dedup, cache_dir=self.cache_dir)  # a cache hit
        self._lru[index] = graph
        while len(self._lru) > self.keep:
            self._lru.popitem(last=False)
        return graph

    def subset(self, indices) -> "LazyPrepared":
        idx = [int(i) for i in indices]
        counts = None if self.counts is None else [self.counts[i] for i in idx]
        return LazyPrepared([self.files[i] for i in idx], self.cache_dir, self.dedup,
                            [self.names[i] for i in idx], [self.kinds[i] for i in idx], self.keep, counts)  # fmt: skip

    def __add__(self, other):
        if isinstance(other, LazyPrepared) and other.cache_dir == self.cache_dir and other.dedup == self.dedup:
            counts = None if self.counts is None or other.counts is None else self.counts + other.counts
            return LazyPrepared(self.files + other.files, self.cache_dir, self.dedup, self.names + other.names,
                                self.kinds + other.kinds, self.keep, counts)  # fmt: skip
        return list(self) + list(other)


def graph_names(graphs: Sequence) -> list[str]:
    """Names of a list of PreparedGraph or a LazyPrepared (without loading the latter)."""
    return list(graphs.names) if isinstance(graphs, LazyPrepared) else [str(g.name) for g in graphs]


def graph_kinds(graphs: Sequence) -> list[str]:
    return list(graphs.kinds) if isinstance(graphs, LazyPrepared) else [g.kind for g in graphs]


def graph_config_counts(graphs: Sequence) -> list[int]:
    """Configurations of each graph (a LazyPrepared knows them without loading the graphs)."""
    if isinstance(graphs, LazyPrepared) and graphs.counts is not None:
        return list(graphs.counts)
    return [int(g.num_configs) for g in graphs]


def subset(graphs: Sequence, indices) -> Sequence:
    """graphs[indices] as a list, or as a lazy view for a LazyPrepared."""
    if isinstance(graphs, LazyPrepared):
        return graphs.subset(indices)
    return [graphs[int(i)] for i in indices]


def load_prepared(
    files: Sequence[Path],
    cache_dir: str | Path | None = None,
    progress: bool = True,
    desc: str = "prepare",
    dedup: bool = True,
    max_memory_gb: float | None = None,
):
    """`prepare_graph` on every file (pruned; de-duplicated unless `dedup` is False; cached when
    `cache_dir` is given). Training uses de-duplicated graphs (TGraph §2.2.2); validation on the
    official split keeps every configuration so metrics match the file's full list.

    Returns a list of PreparedGraph, or — when `cache_dir` is given and the prepared graphs
    exceed `max_memory_gb` — a `LazyPrepared` that reads them back from the cache on demand.
    """
    from tqdm.auto import tqdm

    from graphcost.data.transforms.preprocess import prepare_graph

    limit = None if max_memory_gb is None or cache_dir is None else max_memory_gb * 2**30
    graphs, names, kinds, counts, total, lazy = [], [], [], [], 0, False
    for f in tqdm(list(files), desc=desc, unit="graph", disable=not progress or not files, leave=False):
        graph = prepare_graph(f, dedup=dedup, cache_dir=cache_dir)
        names.append(graph.name)
        kinds.append(graph.kind)
        counts.append(graph.num_configs)
        if not lazy:
            graphs.append(graph)
            total += graph.nbytes()
            if limit is not None and total > limit:  # too big: from now on rely on the cache
                lazy, graphs = True, []
    if lazy:
        return LazyPrepared(files, cache_dir, dedup, names, kinds, counts=counts)
    return graphs
