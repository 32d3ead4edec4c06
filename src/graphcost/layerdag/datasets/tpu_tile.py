"""TPU Tile DAGs (real): DATA/tpu_tile_graphs/val.npz (`locate.dag_data_dir`) — 630 XLA kernel graphs from
TpuGraphs' tile collection, node attribute = remapped opcode (0-46), label = normalised runtime.

Only the validation split of the LayerDAG processing is available, so it is split here by graph
into train/valid/test (80/10/10, seeded, or one fold of a k-fold cross-validation) for development.
"""

from __future__ import annotations

from pathlib import Path

from graphcost.layerdag.datasets.locate import dag_data_dir, missing
from graphcost.layerdag.datasets.splits import split_graphs
from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.io import load_dags

NUM_CATEGORIES = 47  # remapped opcode ids 0..46


def default_path(data_dir: str | Path | None = None) -> Path | None:
    """DATA/tpu_tile_graphs/val.npz for the data directory `locate.dag_data_dir` finds (None: none found)."""
    base = dag_data_dir(data_dir)
    return None if base is None else base / "tpu_tile_graphs" / "val.npz"


def load_tpu_tile(path: str | Path | None = None, seed: int = 0, fold: tuple[int, int] | None = None,
                  data_dir: str | Path | None = None) -> dict[str, list[DAG]]:
    """The real TPU Tile DAGs, split by graph into {'train', 'valid', 'test'} (80/10/10, or
    `fold` = (f, k): fold f of a k-fold cross-validation, `graphcost.data.splits.kfold_train_valid_test`).

    Args:
        path: the val.npz file itself; default: the one in `data_dir`.
        seed: the split's seed.
        fold: (f, k) for fold f of a k-fold cross-validation.
        data_dir: the directory holding tpu_tile_graphs/ (default: `locate.dag_data_dir`).

    Raises:
        FileNotFoundError: the file is missing; the message says where to get it.
    """
    path = Path(path) if path else default_path(data_dir)
    if path is None or not path.is_file():
        raise missing("tpu-tile", path, data_dir)
    return split_graphs(load_dags(path), seed=seed, fold=fold)
