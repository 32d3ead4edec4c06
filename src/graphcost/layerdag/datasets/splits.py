"""The LayerDAG dataset loaders' split policy; the split helpers themselves live in `graphcost.data.splits`."""

from __future__ import annotations

from graphcost.data.splits import kfold_train_valid_test, train_valid_test_split


def split_graphs(items: list, seed: int = 0, fold: tuple[int, int] | None = None) -> dict[str, list]:
    """The dataset loaders' split: `train_valid_test_split` (80/10/10), or with `fold` = (f, k) fold f
    of `kfold_train_valid_test` into k parts."""
    if fold is None:
        return train_valid_test_split(items, seed=seed)
    f, k = fold
    return kfold_train_valid_test(items, k, f, seed=seed)
