"""Datasets shipped with graphcost (REAL measurements, see each CARD.md), and THE locator for them
(`shipped_dataset_dir`, `shipped_for_collection`): every part of graphcost finds them here.

``cpu_layout``: the default training data: 60 JAX/Flax zoo programs x 64 layout configurations
measured on a 2-core CPU with the cross-process protocol of `graphcost collect` (label = median
of 3 processes, plus an independent repeat), TpuGraphs layout schema, split by graph into
train/valid/test.

``cpu_flags``: 24 programs x 64 XLA CPU compiler-flag configurations (`graphcost.frontend.programs.flags`,
TpuGraphs tile schema), the default data of ``graphcost train --collection tile:xla``.

``cpu_layout_1k``: ONE program (an LSTM forward pass) x 1,200 distinct layout configurations, same
protocol: the within-program setting of a tuner (split it by configuration with
`graphcost.data.config_split`; `graphcost data split-configs`).

``cpu_zoo_layout``: the wide zoo, 315 programs of 25 families (CNN and MobileNet blocks, ViT,
BERT/GPT, encoder-decoders, GNNs, MoE, state-space scans, Fourier operators, recommenders, U-Nets,
VAEs, flows, top-k, ...; a third of them training steps) x 32 layout configurations, same protocol,
with what the compiler did to each configuration (``config_compiled_stats``), split BY FAMILY: the
valid and test programs come from families the training side never saw (``--data-dir
cpu_zoo_layout``; the data of the documentation's leave-family-out figures).

``cpu_zoo_flags``: the same zoo x 32 XLA CPU compiler-flag configurations (tile schema, the flag space of
`graphcost.frontend.programs.flags`), same protocol with 5 processes, with the compiled statistics, split
BY FAMILY (``--data-dir cpu_zoo_flags``; the data of the shipped flag model and of `bench_real.py`'s
``lofo_flags``).

``cpu_zoo_flags_tuner``: zoo programs x 32 flag configurations spread the way `graphcost tune` spreads its
candidates (``graphcost collect --space flags --mode tuner``: a random share of the options changed, or
1-3 of them; fast-math at its default), same protocol and family split as ``cpu_zoo_flags``; the shipped
flag model trains on both.

``cpu_zoo_kernels_flags``: every distinct leaf kernel of the zoo's programs under their flag
configurations, one TILE-schema graph per kernel (`graphcost.kernels.table`: ``config_feat`` the 24
flag columns, ``config_runtime`` ns per execution), measured on the Intel Xeon VM (its CARD.md).

The four zoo datasets ship PACKED (`PACKED`): each is one LZMA file beside its CARD.md (the zoo's graphs
repeat one another's features, which LZMA sees and npz's zlib does not: 5.9 MB of layout npz files pack
into about 0.9 MB), unpacked on first use (`graphcost.data.io.packed.shipped_data_dir`; a ``--data-dir
NAME`` does it) into the user's cache (``$GRAPHCOST_CACHE``, else ``~/.cache/graphcost``), which
`shipped_dataset_dir` then returns.
"""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent
SHIPPED = ("cpu_layout", "cpu_flags", "cpu_layout_1k", "cpu_zoo_layout", "cpu_zoo_flags", "cpu_zoo_flags_tuner",
           "cpu_zoo_kernels_flags")
PACKED = {"cpu_zoo_layout": "graphs.npz", "cpu_zoo_flags": "graphs.npz", "cpu_zoo_flags_tuner": "graphs.npz",
          "cpu_zoo_kernels_flags": "kernels.npz"}  # each shipped as one packed file (graphcost.data.io.packed)


def cache_root() -> Path:
    """Where packed datasets are unpacked: ``$GRAPHCOST_CACHE``, else ``~/.cache/graphcost``."""
    import os

    return Path(os.environ.get("GRAPHCOST_CACHE") or "~/.cache/graphcost").expanduser()


def packed_file(name: str) -> Path:
    """The packed file of the shipped dataset `name` (one of `PACKED`); FileNotFoundError when the
    package lacks it."""
    packed = _ROOT / name / PACKED[name]
    if not packed.is_file():
        raise FileNotFoundError(f"the shipped dataset is missing: {packed} not found (reinstall graphcost)")
    return packed


def unpacked_dir(name: str) -> Path:
    """Where the packed shipped dataset `name` is (or will be) unpacked: the cache, keyed by the packed
    file's SHA-256 (a new release unpacks anew)."""
    import hashlib

    packed = packed_file(name)
    return cache_root() / "datasets" / f"{name}-{hashlib.sha256(packed.read_bytes()).hexdigest()[:16]}"


def shipped_dataset_dir(name: str = "cpu_layout") -> Path:
    """Directory of shipped dataset `name` (``train/ valid/ test/`` npz files + ``manifest.json``).

    Raises FileNotFoundError with a clear message if the package was installed without it.
    """
    if name not in SHIPPED:
        raise ValueError(f"unknown shipped dataset {name!r}; choose one of {', '.join(SHIPPED)}")
    path = _ROOT / name
    if name in PACKED:  # unpacked by the data layer (graphcost.data.io.packed.shipped_data_dir), once
        out = unpacked_dir(name)
        if not (out / "manifest.json").is_file():
            raise FileNotFoundError(f"the shipped dataset {name} ships packed and is not unpacked yet: "
                                    f"graphcost.data.io.packed.shipped_data_dir({name!r}) unpacks it into {out} "
                                    f"(`graphcost train --data-dir {name}` does so itself)")
        return out
    if not (path / "manifest.json").is_file():
        raise FileNotFoundError(f"the shipped dataset is missing: {path}/manifest.json not found "
                                "(reinstall graphcost, or collect one with `graphcost collect`)")
    if not any(path.rglob("*.npz")):
        raise FileNotFoundError(f"the shipped dataset is missing: {path} holds no npz files "
                                "(reinstall graphcost, or collect one with `graphcost collect`)")
    return path


def shipped_for_collection(collection: str | None = None) -> Path | None:
    """The shipped dataset `graphcost train` uses without ``--data-dir``, or None when it is not
    installed: ``cpu_flags`` (XLA CPU flag configurations, tile schema) for ``--collection tile:xla``,
    else ``cpu_layout``."""
    try:
        return shipped_dataset_dir("cpu_flags" if collection == "tile:xla" else "cpu_layout")
    except FileNotFoundError:
        return None


def default_dataset_dir() -> Path:
    """Directory of the default shipped dataset, ``cpu_layout`` (see `shipped_dataset_dir`)."""
    return shipped_dataset_dir("cpu_layout")


__all__ = ["PACKED", "SHIPPED", "cache_root", "default_dataset_dir", "packed_file", "shipped_dataset_dir",
           "shipped_for_collection", "unpacked_dir"]
