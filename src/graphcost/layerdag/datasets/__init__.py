"""DAG datasets for LayerDAG: LP (synthetic, with a validity checker), TPU Tile (real), NAS-Bench-201 (real)."""

from __future__ import annotations

from graphcost.guards.bounds import GRAPHS_MAX
from graphcost.layerdag.dag_record import DAG

DATASET_NAMES = ("lp", "tpu-tile", "nasbench201")
MIN_GRAPHS = 8  # smallest count whose seeded 80/10/10 split (graphcost.data.splits.train_valid_test_split) leaves no split empty


def load_dataset(name: str, seed: int = 0, **kwargs) -> dict[str, list[DAG]]:
    """{'train', 'valid', 'test'} lists of DAGs for a dataset name in DATASET_NAMES: the seeded
    80/10/10 split by graph, or with `fold=(f, k)` fold f of a k-fold cross-validation
    (`graphcost.data.splits.kfold_train_valid_test`). Other keywords: `num_graphs` (LP, NAS-Bench-201), `path` (TPU Tile),
    `data_dir` (TPU Tile, NAS-Bench-201: the directory of the real datasets, `locate.dag_data_dir`)."""
    num_graphs = kwargs.get("num_graphs")
    if name in ("lp", "nasbench201") and num_graphs is not None and not MIN_GRAPHS <= num_graphs:
        raise ValueError(
            f"{name}: num_graphs must be at least {MIN_GRAPHS} (the 80/10/10 split needs a graph in "
            f"train, valid and test), got {num_graphs}"
        )
    if name in ("lp", "nasbench201") and num_graphs is not None and num_graphs > GRAPHS_MAX:
        raise ValueError(f"{name}: num_graphs must be at most {GRAPHS_MAX} (graphs generated and held in memory), "
                         f"got {num_graphs}")
    if name == "lp":
        from graphcost.layerdag.datasets.lp import generate_lp_dataset
        from graphcost.layerdag.datasets.splits import split_graphs

        return split_graphs(generate_lp_dataset(kwargs.get("num_graphs") or 2000, seed=seed), seed=seed,
                            fold=kwargs.get("fold"))
    if name == "tpu-tile":
        from graphcost.layerdag.datasets.tpu_tile import load_tpu_tile

        return load_tpu_tile(kwargs.get("path"), seed=seed, fold=kwargs.get("fold"), data_dir=kwargs.get("data_dir"))
    if name == "nasbench201":
        from graphcost.layerdag.datasets.nasbench201 import load_nasbench201

        return load_nasbench201(seed=seed, **kwargs)
    raise ValueError(f"unknown DAG dataset '{name}'; choose one of {', '.join(DATASET_NAMES)}")
