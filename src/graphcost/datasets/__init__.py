"""Datasets shipped with graphcost.

``cpu_layout``: a small REAL layout-collection dataset measured on a 2-core CPU with the JAX
frontend (`graphcost collect`): zoo programs x per-node layout configurations, TpuGraphs layout
schema, split by graph into train/valid/test. See ``cpu_layout/CARD.md``.

``cpu_flags``: a small REAL compiler-flag dataset (XLA CPU options of `graphcost.frontend.flags`,
TpuGraphs tile schema), the default data of ``graphcost train --collection tile:xla``. See
``cpu_flags/CARD.md``.
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
