"""Deterministic train/valid/test split of a list of graphs, by graph."""

from __future__ import annotations

import numpy as np

SPLITS = ("train", "valid", "test")


def split_by_graph(items: list, fractions=(0.8, 0.1, 0.1), seed: int = 0) -> dict[str, list]:
    """Shuffle graph indices with `seed` and cut them into train/valid/test by `fractions`."""
    if len(fractions) != 3 or abs(sum(fractions) - 1.0) > 1e-6 or min(fractions) < 0:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions}")
    order = np.random.default_rng(seed).permutation(len(items))
    n_train = int(round(fractions[0] * len(items)))
    n_valid = int(round(fractions[1] * len(items)))
    cuts = {"train": order[:n_train], "valid": order[n_train : n_train + n_valid], "test": order[n_train + n_valid :]}
    return {name: [items[i] for i in sorted(idx)] for name, idx in cuts.items()}


def kfold_split(items: list, folds: int = 10, fold: int = 0, seed: int = 0) -> dict[str, list]:
    """Fold `fold` of a seeded k-fold cross-validation by graph: the graph indices are shuffled with
    `seed` (the same permutation as `split_by_graph`) and cut into `folds` near-equal parts;
    test = part `fold`, valid = part `fold` − 1 (mod k), train = the other k − 2 parts. Over all folds
    every graph is a test graph exactly once, so per-fold test predictions can be pooled into one
    score over the whole set. With k = 10 the sizes are those of the 80/10/10 split, and for a
    number of graphs divisible by 10, fold 9 is exactly `split_by_graph(items, seed=seed)`."""
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


def split_graphs(items: list, seed: int = 0, fold: tuple[int, int] | None = None) -> dict[str, list]:
    """The dataset loaders' split: `split_by_graph` (80/10/10), or with `fold` = (f, k) fold f of
    `kfold_split` into k parts."""
    if fold is None:
        return split_by_graph(items, seed=seed)
    f, k = fold
    return kfold_split(items, k, f, seed=seed)
