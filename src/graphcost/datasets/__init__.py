"""Datasets shipped with graphcost (REAL measurements, see each CARD.md).

``cpu_layout``: the default training data: 60 JAX/Flax zoo programs x 64 layout configurations
measured on a 2-core CPU with the cross-process protocol of `graphcost collect` (label = median
of 3 processes, plus an independent repeat), TpuGraphs layout schema, split by graph into
train/valid/test.

``cpu_flags``: 24 programs x 64 XLA CPU compiler-flag configurations (`graphcost.frontend.flags`,
TpuGraphs tile schema), the default data of ``graphcost train --collection tile:xla``.

``cpu_layout_1k``: ONE program (an LSTM forward pass) x 1,200 distinct layout configurations, same
protocol: the within-program setting of a tuner (split it by configuration with
`graphcost.data.config_split`; `benchmarks/bench_real.py --protocols within`).
"""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent


def default_dataset_dir() -> Path:
    """Directory of the shipped dataset (``train/ valid/ test/`` npz files + ``manifest.json``).

    Raises FileNotFoundError with a clear message if the package was installed without it.
    """
    path = _ROOT / "cpu_layout"
    if not (path / "manifest.json").is_file():
        raise FileNotFoundError(f"the shipped dataset is missing: {path}/manifest.json not found "
                                "(reinstall graphcost, or collect one with `graphcost collect`)")
    return path


__all__ = ["default_dataset_dir"]
