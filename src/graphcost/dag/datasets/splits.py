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
