"""Every split of graphcost's data, always BY GRAPH: no graph has configurations (or layers) on two
sides, since measurements within one graph are highly correlated and splitting them would leak.

  holdout_split            npz files -> (train, valid), seeded; `graphcost train` on one flat directory
  kfold_indices            graph names -> [(train_idx, valid_idx)] per fold; `graphcost train --folds`
  train_valid_test_split   items -> {"train", "valid", "test"} by fractions (80/10/10); LayerDAG datasets
  kfold_train_valid_test   items -> fold f of a k-fold split with test and valid parts; LayerDAG k-fold
  stratified_split         (name, family) pairs -> {name: split}, stratified by family; `graphcost collect`
  family_split             (name, family) pairs -> {name: split}, whole families per side (unseen-family test)

Each helper draws from its own numpy generator seeded by its `seed` argument (and, for some, a fixed
tag), so a split depends on nothing but its inputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

SPLITS = ("train", "valid", "test")


def holdout_split(files: Sequence[Path], valid_frac: float, seed: int) -> tuple[list[Path], list[Path]]:
    """Seeded train/valid split of files (one file = one graph, so no graph is on both sides)."""
    files = sorted(files)
    if len(files) < 2:
        return list(files), []
    perm = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x5A17]).permutation(len(files))
    n_valid = min(len(files) - 1, max(1, int(round(valid_frac * len(files)))))
    valid = sorted(files[i] for i in perm[:n_valid])
    train = sorted(files[i] for i in perm[n_valid:])
    return train, valid


def kfold_indices(names: Sequence[str], folds: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train_idx, valid_idx) per fold; items sharing a graph name always land in the same fold.

    Graph names are shuffled with `seed` and dealt round-robin into `folds` folds.
    """
    names = [str(n) for n in names]
    groups = sorted(set(names))
    if folds < 2:
        raise ValueError(f"--folds must be at least 2 for cross-validation (got {folds})")
    if folds > len(groups):
        raise ValueError(f"--folds {folds} exceeds the number of distinct graphs ({len(groups)})")
    perm = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0xF01D]).permutation(len(groups))
    fold_of_group = {groups[g]: pos % folds for pos, g in enumerate(perm)}
    fold_of_item = np.array([fold_of_group[n] for n in names])
    index = np.arange(len(names))
    return [(index[fold_of_item != f], index[fold_of_item == f]) for f in range(folds)]


def train_valid_test_split(items: list, fractions=(0.8, 0.1, 0.1), seed: int = 0) -> dict[str, list]:
    """Shuffle graph indices with `seed` and cut them into train/valid/test by `fractions`."""
    _check_fractions(fractions)
    order = np.random.default_rng(seed).permutation(len(items))
    n_train = int(round(fractions[0] * len(items)))
    n_valid = int(round(fractions[1] * len(items)))
    cuts = {"train": order[:n_train], "valid": order[n_train : n_train + n_valid], "test": order[n_train + n_valid :]}
    return {name: [items[i] for i in sorted(idx)] for name, idx in cuts.items()}


def kfold_train_valid_test(items: list, folds: int = 10, fold: int = 0, seed: int = 0) -> dict[str, list]:
    """Fold `fold` of a seeded k-fold cross-validation by graph: the graph indices are shuffled with
    `seed` (the same permutation as `train_valid_test_split`) and cut into `folds` near-equal parts;
    test = part `fold`, valid = part `fold` − 1 (mod k), train = the other k − 2 parts. Over all folds
    every graph is a test graph exactly once, so per-fold test predictions can be pooled into one
    score over the whole set. With k = 10 the sizes are those of the 80/10/10 split, and for a
    number of graphs divisible by 10, fold 9 is exactly `train_valid_test_split(items, seed=seed)`."""
    if not isinstance(folds, int) or folds < 3:
        raise ValueError(f"folds must be an integer >= 3 (test, valid and train each need a part), got {folds}")
    if not 0 <= fold < folds:
        raise ValueError(f"fold must be in 0..{folds - 1}, got {fold}")
    if len(items) < folds:
        raise ValueError(f"{folds}-fold split needs at least {folds} graphs, got {len(items)}")
    parts = np.array_split(np.random.default_rng(seed).permutation(len(items)), folds)
    valid = (fold - 1) % folds
    cuts = {"train": np.concatenate([p for i, p in enumerate(parts) if i not in (fold, valid)]),
            "valid": parts[valid], "test": parts[fold]}  # fmt: skip
    return {name: [items[i] for i in sorted(idx)] for name, idx in cuts.items()}


def stratified_split(pairs: Iterable[tuple[str, str]], fractions=(0.7, 0.15, 0.15), seed: int = 0) -> dict[str, str]:
    """Program name -> split for (name, family) pairs, by graph, stratified by family, deterministic in `seed`.

    Within a family of n programs (seeded order), the last round(n * test) go to test, the
    round(n * valid) before them to valid (each at least 1 when n >= 3), the rest to train.
    """
    rng = np.random.default_rng(seed + 7919)
    by_family: dict[str, list[str]] = {}
    for name, family in pairs:
        by_family.setdefault(family, []).append(name)
    out = {}
    for fam in sorted(by_family):
        names = sorted(by_family[fam])
        out.update(_cut([names[i] for i in rng.permutation(len(names))], fractions))
    return out


def _check_fractions(fractions) -> None:
    if len(fractions) != 3 or abs(sum(fractions) - 1.0) > 1e-6 or min(fractions) < 0:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions}")


def _cut(ordered: list[str], fractions) -> dict[str, str]:
    """Item -> side for items in their (seeded) order: the last round(n * test) to test, the
    round(n * valid) before them to valid (each at least 1 when n >= 3), the rest to train."""
    n = len(ordered)
    n_test = max(1, round(n * fractions[2])) if n >= 3 else 0
    n_valid = max(1, round(n * fractions[1])) if n >= 3 else 0
    return {item: "test" if i >= n - n_test else "valid" if i >= n - n_test - n_valid else "train"
            for i, item in enumerate(ordered)}


def family_split(pairs: Iterable[tuple[str, str]], fractions=(0.7, 0.15, 0.15), seed: int = 0) -> dict[str, str]:
    """Program name -> split for (name, family) pairs, by FAMILY: every program of a family is on one side.

    The valid and test sides then hold programs of families the training side never saw (what a
    user's own program is). Families are shuffled with `seed`; the last round(F * test) families go
    to test, the round(F * valid) before them to valid (each at least 1 when F >= 3), the rest to
    train. Deterministic in its inputs.
    """
    _check_fractions(fractions)
    pairs = list(pairs)
    families = sorted({family for _, family in pairs})
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0xFA31])
    side = _cut([families[i] for i in rng.permutation(len(families))], fractions)
    return {name: side[family] for name, family in pairs}
