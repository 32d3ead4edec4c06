"""Where LayerDAG's real datasets live: one locator for TPU Tile and NAS-Bench-201.

These are EXTERNAL data, never shipped in the package (the shipped cost-model datasets have their
own locator, `graphcost.datasets.shipped_dataset_dir`).

The directory holding ``tpu_tile_graphs/val.npz`` and ``nasbench201/{archs.txt,latency_ms.npz}``
is, first found:

1. the `data_dir` given (``graphcost dag train/evaluate --data-dir``);
2. ``$GRAPHCOST_DAG_DATA``;
3. ``$GRAPHCOST_SHARED_DATA`` (the variable graphcost's test suite reads);
4. in a development checkout only (``src/graphcost`` beside a ``pyproject.toml``), the
   ``../shared/data`` directory beside the checkout.

An installed graphcost has no such directory: without 1-3 the error says where to get the files.
The synthetic LP dataset needs none of this.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "GRAPHCOST_DAG_DATA"
TEST_ENV = "GRAPHCOST_SHARED_DATA"
GUIDE = "docs/layerdag.md, 'Getting the data'"
SOURCES = {
    "tpu-tile": "tpu_tile_graphs/val.npz: the flat npz of LayerDAG's processed TPU Tile validation split "
                "(github.com/Graph-COM/LayerDAG, data_files/tpu_tile_processed)",
    "nasbench201": "nasbench201/archs.txt (HW-NAS-Bench architecture strings) and nasbench201/latency_ms.npz "
                   "(HELP latencies, one float32 array per device)",
}


def checkout_data() -> Path | None:
    """``../shared/data`` beside a development checkout of graphcost, None for an installed package."""
    package = Path(__file__).resolve().parents[2]  # src/graphcost
    repo = package.parents[1]
    if package.parent.name == "src" and (repo / "pyproject.toml").is_file():
        return repo.parent / "shared" / "data"
    return None


def dag_data_dir(data_dir: str | Path | None = None) -> Path | None:
    """The directory of LayerDAG's real datasets (module docstring), None when nothing names one."""
    for candidate in (data_dir, os.environ.get(ENV), os.environ.get(TEST_ENV)):
        if candidate:
            return Path(candidate).expanduser()
    return checkout_data()


def missing(dataset: str, looked: Path | None, data_dir: str | Path | None = None) -> FileNotFoundError:
    """The one-line error for a dataset whose files are not where they were looked for."""
    where = (f"not found at {looked}" if looked is not None
             else f"not found: no data directory given (--data-dir, ${ENV})")
    how = "" if data_dir else f"; pass --data-dir DIR or set {ENV}=DIR"
    return FileNotFoundError(f"{dataset} DAGs {where}{how}. DIR must hold {SOURCES[dataset]}; where to get them: "
                             f"{GUIDE} (--dataset lp needs no files)")
