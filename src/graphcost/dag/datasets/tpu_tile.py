"""TPU Tile DAGs (real): ../shared/data/tpu_tile_graphs/val.npz — 630 XLA kernel graphs from
TpuGraphs' tile collection, node attribute = remapped opcode (0-46), label = normalised runtime.

Only the validation split of the LayerDAG processing is available, so it is split here by graph
into train/valid/test (80/10/10, seeded, or one fold of a k-fold cross-validation) for development.
"""

from __future__ import annotations

from pathlib import Path

from graphcost.dag.datasets.splits import split_graphs
from graphcost.dag.graph import DAG
from graphcost.dag.io import load_dags

NUM_CATEGORIES = 47  # remapped opcode ids 0..46


def default_path() -> Path:
    """../shared/data/tpu_tile_graphs/val.npz beside the checkout, or $GRAPHCOST_SHARED_DATA."""
    import os

    root = os.environ.get("GRAPHCOST_SHARED_DATA")
    base = Path(root) if root else Path(__file__).resolve().parents[5] / "shared" / "data"
    return base / "tpu_tile_graphs" / "val.npz"


def load_tpu_tile(path: str | Path | None = None, seed: int = 0, fold: tuple[int, int] | None = None) -> dict[str, list[DAG]]:
    """The real TPU Tile DAGs, split by graph into {'train', 'valid', 'test'} (80/10/10, or
    `fold` = (f, k): fold f of a k-fold cross-validation, `splits.kfold_split`)."""
    path = Path(path) if path else default_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"TPU Tile DAGs not found at {path}; pass the path to tpu_tile_graphs/val.npz "
            "or set GRAPHCOST_SHARED_DATA to the directory holding tpu_tile_graphs/"
        )
    return split_graphs(load_dags(path), seed=seed, fold=fold)
