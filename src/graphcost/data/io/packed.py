"""A whole dataset directory in one file: many small graphs packed, unpacked where they are used.

A kernel dataset (`graphcost.kernels.table.write_kernel_dataset`) holds one TILE-schema npz per
distinct kernel: about 18,600 files for the zoo's flag kernels, 45 MB on disk, too many files and
bytes to ship with the package. `pack_dataset` writes the directory as one npz whose members are the
graphs' arrays of each key concatenated along their first axis, with the graphs' offsets,

    <key>               (Σ_g n_g, ...)   graph g's array is rows offsets[g]:offsets[g + 1]
    <key>.offsets       (G + 1,) int64   (a key whose arrays are 0-d scalars: (G,) and no offsets)
    files               (G,) str         each graph's path relative to the directory
    manifest.json       () str           the directory's manifest, verbatim

A key whose arrays do not stack along their first axis (a layout graph's ``node_config_feat`` (C, N, 18)
differs in N) or that some graphs lack (``config_runtime_repeat_samples`` exists only where a program
was repeated) is stored ragged instead:

    <key>               (Σ_g Π shape_g,) the graphs' arrays flattened, one after another
    <key>.shapes        (G, 1 + ndim) int64  [1, graph g's shape], or zeros where graph g has no such key

compressed with LZMA (`graphcost.data.io.npz_stream.save_npz_lzma`, as kernel records are): the same kernels' features
recur across graphs, which zlib's 32 KB window cannot see and LZMA's can (the flag kernels:
218 MB of float32 node features to 0.9 MB). `unpack_dataset` writes the directory back, file for
file, with the same keys and values (and dtypes; a string key's width may grow to the widest graph's),
so the TpuGraphs loaders, the PyG dataset and ``graphcost train --data-dir`` read it unchanged.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from graphcost.data.io.schema import SchemaError

MANIFEST = "manifest.json"
FILES_KEY = "files"
OFFSETS = ".offsets"
SCALAR = ".scalar"  # marks a key whose per-graph arrays are 0-d (stored (G,), no offsets)
RAGGED = ".shapes"  # marks a key stored flattened, with [1, each graph's shape] (zeros where a graph lacks it)


def _members(path: Path) -> list[Path]:
    files = sorted(p for p in path.rglob("*.npz") if p.is_file())
    if not files:
        raise SchemaError(path, "*", "no npz graph files to pack")
    return files


def _same_dtype(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtypes, or strings of one kind (their width may differ: a wider one holds every value)."""
    return a.dtype == b.dtype or (a.dtype.kind == b.dtype.kind and a.dtype.kind in "US")


def _stacks(arrays: list[np.ndarray]) -> bool:
    """Whether the arrays concatenate along their first axis (or are all 0-d) with no value converted."""
    ref = arrays[0]
    return all((a.ndim == 0) == (ref.ndim == 0) and a.shape[1:] == ref.shape[1:] and _same_dtype(a, ref) for a in arrays)


def _ragged(key: str, parts: list[np.ndarray | None], files: list[Path]) -> dict[str, np.ndarray]:
    """`key` stored flattened with each graph's shape; the graphs that have it must agree on ndim and dtype
    (strings may differ in width), so every value comes back as it was."""
    present = [(f, a) for f, a in zip(files, parts) if a is not None]
    ref_file, ref = present[0]
    for f, a in present:
        if a.ndim != ref.ndim or not _same_dtype(a, ref):
            raise SchemaError(f, key, f"{a.dtype} array of shape {a.shape} does not pack with {ref_file.name}'s "
                                      f"{ref.dtype} {ref.shape}")
    shapes = np.asarray([(1, *a.shape) if a is not None else (0,) * (1 + ref.ndim) for a in parts], np.int64)
    return {key: np.concatenate([a.ravel() for _, a in present]), key + RAGGED: shapes}


def pack_dataset(directory: str | Path, out: str | Path) -> Path:
    """Pack the dataset `directory` (npz graphs below it and its ``manifest.json``) into the file `out`
    (atomic). Keys that stack are stored with offsets, the others ragged (module docstring); a SchemaError
    names the file and key of an array that cannot be packed."""
    from graphcost.data.io.npz_stream import save_npz_lzma

    directory = Path(directory)
    manifest = directory / MANIFEST
    if not manifest.is_file():
        raise SchemaError(manifest, "*", "missing: a dataset directory has a manifest.json")
    files = _members(directory)
    graphs = []
    for f in files:
        with np.load(f, allow_pickle=False) as z:
            graphs.append({k: np.asarray(z[k]) for k in z.files})
    for f, g in zip(files, graphs):
        reserved = [k for k in g if k in (FILES_KEY, MANIFEST) or k.endswith((OFFSETS, SCALAR, RAGGED))]
        if reserved:
            raise SchemaError(f, reserved[0], "a key name the packed format reserves")
    packed: dict[str, np.ndarray] = {FILES_KEY: np.asarray([str(f.relative_to(directory)) for f in files], dtype=str),
                                     MANIFEST: np.asarray(manifest.read_text(encoding="utf-8"))}
    for k in sorted({k for g in graphs for k in g}):
        parts = [g.get(k) for g in graphs]
        whole = [a for a in parts if a is not None]
        if len(whole) < len(parts) or not _stacks(whole):
            packed.update(_ragged(k, parts, files))
        elif whole[0].ndim == 0:
            packed[k + SCALAR] = np.stack(whole)
        else:
            packed[k] = np.concatenate(whole)
            packed[k + OFFSETS] = np.concatenate([[0], np.cumsum([len(a) for a in whole])]).astype(np.int64)
    return save_npz_lzma(out, packed)


def unpack_dataset(packed: str | Path, out: str | Path) -> Path:
    """Write the dataset packed in `packed` (`pack_dataset`) into the directory `out`, which must
    not exist (its parent is created). Written into a temporary sibling and renamed when complete,
    so an interrupted unpack leaves nothing at `out`. A damaged or foreign file is a SchemaError
    naming it; declared array sizes are checked against memory before anything is read."""
    import os
    import shutil
    import tempfile

    from graphcost.data.io.npz_stream import check_declared_memory, check_zip_magic, damaged_npz

    packed, out = Path(packed), Path(out)
    if out.exists():
        raise FileExistsError(f"{out}: exists; unpack into a new directory")
    check_zip_magic(packed, "*")
    with damaged_npz(packed, "*"), zipfile.ZipFile(packed) as zf:
        keys = [n[:-4] for n in zf.namelist() if n.endswith(".npy")]
        for need in (FILES_KEY, MANIFEST):
            if need not in keys:
                raise SchemaError(packed, need, "missing: not a dataset packed by graphcost (pack_dataset)")
        check_declared_memory(zf, packed, keys)
    with np.load(packed, allow_pickle=False) as z:
        files = [str(f) for f in z[FILES_KEY].tolist()]
        manifest = str(z[MANIFEST])
        data = {k: z[k] for k in z.files if k not in (FILES_KEY, MANIFEST)}
    n = len(files)
    for name in files:
        p = Path(name)
        if p.is_absolute() or ".." in p.parts or p.suffix != ".npz":
            raise SchemaError(packed, FILES_KEY, f"entry {name!r} is not a relative .npz path inside the dataset")
    graph_keys = {k.removesuffix(SCALAR).removesuffix(RAGGED) for k in data if not k.endswith(OFFSETS)}
    bounds: dict[str, np.ndarray] = {}  # a ragged key's offsets into its flat array
    for k in graph_keys:
        if k + SCALAR not in data and k not in data:
            raise SchemaError(packed, k, "missing: its offsets or shapes are there, its values are not")
        if k + RAGGED in data:
            shapes = data[k + RAGGED]
            if (shapes.ndim != 2 or len(shapes) != n or shapes.shape[1] < 1 or data[k].ndim != 1
                    or (shapes < 0).any() or not np.isin(shapes[:, 0], (0, 1)).all()):
                raise SchemaError(packed, k + RAGGED, f"must be {n} rows [1, shape] or zeros, for a flat array")
            sizes = shapes[:, 0] * np.prod(shapes[:, 1:], axis=1)
            bounds[k] = np.concatenate([[0], np.cumsum(sizes)])
            if bounds[k][-1] != len(data[k]):
                raise SchemaError(packed, k + RAGGED, f"declares {bounds[k][-1]} values, the array holds {len(data[k])}")
            continue
        if k + SCALAR in data:
            if len(data[k + SCALAR]) != n:
                raise SchemaError(packed, k + SCALAR, f"holds {len(data[k + SCALAR])} values for {n} graphs")
            continue
        off = data.get(k + OFFSETS)
        if off is None or off.shape != (n + 1,) or off[0] != 0 or off[-1] != len(data[k]) or (np.diff(off) < 0).any():
            raise SchemaError(packed, k + OFFSETS, f"must be {n + 1} non-decreasing offsets from 0 to {len(data[k])}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (tmp / MANIFEST).write_text(manifest, encoding="utf-8")
        for g, name in enumerate(files):
            arrays = {}
            for k in sorted(graph_keys):
                if k in bounds:
                    if data[k + RAGGED][g, 0]:
                        arrays[k] = data[k][bounds[k][g]:bounds[k][g + 1]].reshape(data[k + RAGGED][g, 1:])
                elif k + SCALAR in data:
                    arrays[k] = data[k + SCALAR][g]
                else:
                    arrays[k] = data[k][data[k + OFFSETS][g]:data[k + OFFSETS][g + 1]]
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(tmp / name, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def shipped_packed_dir(name: str) -> Path:
    """The directory of the packed shipped dataset `name` (`graphcost.datasets.PACKED`), unpacked into the
    cache (`graphcost.datasets.unpacked_dir`) on first use; FileNotFoundError in one line when the cache is
    not writable or the package lacks the file."""
    import logging

    from graphcost.datasets import packed_file, unpacked_dir

    out = unpacked_dir(name)
    if (out / MANIFEST).is_file():
        return out
    logging.getLogger(__name__).info(f"unpacking the shipped dataset {name} into {out} (once)")
    try:
        unpack_dataset(packed_file(name), out)
    except OSError as exc:
        if (out / MANIFEST).is_file():  # another process unpacked it first
            return out
        raise FileNotFoundError(f"cannot unpack the shipped dataset {name} into {out} ({exc.strerror or exc}); "
                                "set GRAPHCOST_CACHE to a writable directory") from None
    return out


def shipped_data_dir(name: str) -> Path:
    """The directory of the shipped dataset `name` (one of `graphcost.datasets.SHIPPED`): the package's own
    directory, or for a packed one its copy unpacked in the cache (`shipped_packed_dir`)."""
    from graphcost.datasets import PACKED, shipped_dataset_dir

    return shipped_packed_dir(name) if name in PACKED else shipped_dataset_dir(name)
