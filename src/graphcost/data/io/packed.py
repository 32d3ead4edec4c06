"""A whole dataset directory in one file: many small graphs packed, unpacked where they are used.

A kernel dataset (`graphcost.data.kernels.write_kernel_dataset`) holds one TILE-schema npz per
distinct kernel: about 18,600 files for the zoo's flag kernels, 45 MB on disk, too many files and
bytes to ship with the package. `pack_dataset` writes the directory as one npz whose members are the
graphs' arrays of each key concatenated along their first axis, with the graphs' offsets,

    <key>               (Σ_g n_g, ...)   graph g's array is rows offsets[g]:offsets[g + 1]
    <key>.offsets       (G + 1,) int64   (a key whose arrays are 0-d scalars: (G,) and no offsets)
    files               (G,) str         each graph's path relative to the directory
    manifest.json       () str           the directory's manifest, verbatim

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


def _members(path: Path) -> list[Path]:
    files = sorted(p for p in path.rglob("*.npz") if p.is_file())
    if not files:
        raise SchemaError(path, "*", "no npz graph files to pack")
    return files


def pack_dataset(directory: str | Path, out: str | Path) -> Path:
    """Pack the dataset `directory` (npz graphs below it and its ``manifest.json``) into the file `out`
    (atomic). Every graph must hold the same keys, each of the same trailing shape; a SchemaError
    names the file and key that differ."""
    from graphcost.data.io.npz_stream import save_npz_lzma

    directory = Path(directory)
    manifest = directory / MANIFEST
    if not manifest.is_file():
        raise SchemaError(manifest, "*", "missing: a dataset directory has a manifest.json")
    files = _members(directory)
    columns: dict[str, list[np.ndarray]] = {}
    first: Path | None = None
    for f in files:
        with np.load(f, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k]) for k in z.files}
        if first is None:
            first, columns = f, {k: [] for k in arrays}
        if set(arrays) != set(columns):
            other = sorted(set(arrays) ^ set(columns))[0]
            raise SchemaError(f, other, f"keys differ from {first.name}'s; a packed dataset needs the same keys in "
                                        "every graph")
        for k, a in arrays.items():
            if columns[k]:
                ref = columns[k][0]
                if (a.ndim == 0) != (ref.ndim == 0) or a.shape[1:] != ref.shape[1:]:
                    raise SchemaError(f, k, f"shape {a.shape} does not stack with {first.name}'s {ref.shape}")
            columns[k].append(a)
    packed: dict[str, np.ndarray] = {FILES_KEY: np.asarray([str(f.relative_to(directory)) for f in files], dtype=str),
                                     MANIFEST: np.asarray(manifest.read_text(encoding="utf-8"))}
    for k, parts in columns.items():
        if parts[0].ndim == 0:
            packed[k + SCALAR] = np.stack(parts)
        else:
            packed[k] = np.concatenate(parts)
            packed[k + OFFSETS] = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
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
    graph_keys = {k[:-len(SCALAR)] if k.endswith(SCALAR) else k for k in data if not k.endswith(OFFSETS)}
    for k in graph_keys:
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
            arrays = {k: data[k + SCALAR][g] if k + SCALAR in data else
                      data[k][data[k + OFFSETS][g]:data[k + OFFSETS][g + 1]] for k in sorted(graph_keys)}
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
