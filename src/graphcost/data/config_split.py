"""Split ONE graph by configuration: train / valid / test files holding disjoint sets of its
measured configurations (the within-program setting of a tuner, or of a user who measured many
configurations of one program).

Every key that is per configuration is sliced: ``node_config_feat`` and every key whose name
starts with ``config_`` (the official ``config_runtime``, ``config_runtime_normalizers``,
``config_feat``, and `graphcost collect`'s ``config_runtime_samples``, ``config_search_mode``,
...); the graph's other keys are copied as they are. The split is a seeded permutation; train
gets round(train_frac · K) configurations (at least 2), valid round(valid_frac · K) (at least 2 when
asked for), test the rest.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from graphcost.guards.atomic import atomic_write, check_dir_option
from graphcost.data.io.npz_stream import check_declared_memory
from graphcost.data.io.schema import SchemaError
from graphcost.errors import GraphcostError
from graphcost.guards.outputs import OutputPathError, check_outside_inputs

SPLITS = ("train", "valid", "test")


class ConfigSplitError(GraphcostError, ValueError):
    """A graph that cannot be split as asked (the message names the file and the problem)."""


def is_per_config(key: str) -> bool:
    return key == "node_config_feat" or key.startswith("config_")


def config_split_indices(num_configs: int, train_frac: float, valid_frac: float, seed: int) -> dict[str, np.ndarray]:
    """{split: sorted (K_s,) int64 configuration indices}, disjoint, covering all `num_configs`."""
    if not (0 < train_frac < 1 and 0 <= valid_frac < 1 and train_frac + valid_frac < 1):
        raise ConfigSplitError(f"train ({train_frac}) and valid ({valid_frac}) fractions must be in (0, 1) and "
                               "leave configurations for test")
    n_train = max(2, int(round(train_frac * num_configs)))
    n_valid = max(2, int(round(valid_frac * num_configs))) if valid_frac > 0 else 0
    if n_train + n_valid + 2 > num_configs:
        raise ConfigSplitError(f"{num_configs} configurations are too few for {n_train} train + {n_valid} valid + "
                               "at least 2 test configurations")
    perm = np.random.default_rng(seed).permutation(num_configs)
    cuts = {"train": perm[:n_train], "valid": perm[n_train:n_train + n_valid], "test": perm[n_train + n_valid:]}
    return {k: np.sort(v).astype(np.int64) for k, v in cuts.items()}


class WrittenSplits(dict):
    """{split: written path}, as `split_by_configuration` returns it; `dropped`: how many configurations
    with a damaged runtime were left out (`drop_bad_runtimes`)."""

    dropped: int = 0


def check_split_out(out_dir: Path, path: Path, option: str, input_name: str) -> None:
    """OutputPathError when `out_dir` would put the split into the graph's own data: the graph file
    itself, its split's dataset directory ``D`` of ``D/train/g.npz`` or anything inside it
    (`graphcost.guards.outputs.check_outside_inputs`), or the directory holding a loose graph (OUT/train
    beside the graph would join its directory's data). A linked graph is judged where the link is and
    where its file is."""
    data: list[tuple[str, object]] = [(input_name, path)]
    places = list(dict.fromkeys([path.parent, Path(os.path.realpath(path)).parent]))
    data += [(f"{input_name}'s dataset directory", p.parent) for p in places if p.name in SPLITS]
    check_outside_inputs(out_dir, option, data=data)
    out = Path(os.path.realpath(out_dir))
    for parent in places:
        if out == Path(os.path.realpath(parent)):
            raise OutputPathError(f"{option} {out_dir}: is the directory holding the input {input_name} {path}; its "
                                  "train/valid/test would join that directory's data (give a path outside it)", out_dir)


def bad_runtime_rows(runtime: np.ndarray) -> np.ndarray:
    """Indices of the configurations whose runtime is NaN, infinite or negative."""
    runtime = np.asarray(runtime)
    if not np.issubdtype(runtime.dtype, np.number) or np.issubdtype(runtime.dtype, np.complexfloating):
        return np.arange(len(runtime))
    values = runtime.astype(np.float64).reshape(len(runtime), -1)
    return np.flatnonzero(~np.isfinite(values).all(axis=1) | (values < 0).any(axis=1))


def _describe(value: object) -> str:
    value = np.asarray(value).reshape(-1)
    return ", ".join(str(v) for v in value[:4].tolist()) or "empty"


def split_by_configuration(path: str | Path, out_dir: str | Path, train_frac: float, valid_frac: float,
                           seed: int = 0, overwrite: bool = False, *, option: str = "out_dir",
                           input_name: str = "path", drop_bad_runtimes: bool = False) -> WrittenSplits:
    """Write OUT/{train,valid,test}/<file name> from `path`; returns the written paths by split
    (a `WrittenSplits`, whose ``dropped`` counts the configurations left out).

    `out_dir` is checked before the graph is read: a file or a path below one, a device, a virtual or
    read-only file system, the graph file itself, its dataset directory (``D`` of ``D/train/g.npz``) or a
    path inside it, or the directory holding the graph is an OutputPathError naming `option` (the CLI passes
    ``--out``; `input_name` names `path`, ``GRAPH`` for the CLI). A ``config_runtime`` with a NaN, infinite
    or negative value is a ConfigSplitError naming the file and the first bad configuration, unless
    `drop_bad_runtimes`: then those configurations are left out of every split."""
    path, out_dir = Path(path), Path(out_dir)
    check_dir_option(out_dir, option)
    check_split_out(out_dir, path, option, input_name)
    try:
        with np.load(path, allow_pickle=False) as z:
            check_declared_memory(z.zip, path, z.files)
            arrays = {k: z[k] for k in z.files}
    except SchemaError as exc:
        raise ConfigSplitError(str(exc)) from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # an empty file: EOFError; a damaged zip
        raise ConfigSplitError(f"{path}: not a readable npz file ({type(exc).__name__}: {exc})") from None
    if "config_runtime" not in arrays:
        raise ConfigSplitError(f"{path}: key 'config_runtime' is missing (no measured configurations to split)")
    k = len(arrays["config_runtime"])
    bad = [key for key, a in arrays.items() if is_per_config(key) and (a.ndim == 0 or len(a) != k)]
    if bad:
        raise ConfigSplitError(f"{path}: key {bad[0]!r} should have one row per configuration ({k}), "
                               f"got shape {arrays[bad[0]].shape}")
    bad_rows = bad_runtime_rows(arrays["config_runtime"])
    if len(bad_rows) and not drop_bad_runtimes:
        first = int(bad_rows[0])
        raise ConfigSplitError(
            f"{path}: key 'config_runtime' holds a damaged runtime at configuration {first} "
            f"({_describe(arrays['config_runtime'][first])}; {len(bad_rows)} of {k} configurations are NaN, infinite "
            "or negative); pass drop_bad_runtimes=True (--drop-bad-runtimes) to leave them out")
    if len(bad_rows):
        keep = np.setdiff1d(np.arange(k), bad_rows)
        arrays = {key: (a[keep] if is_per_config(key) else a) for key, a in arrays.items()}
        k = len(keep)
    targets = {s: out_dir / s / path.name for s in SPLITS}
    existing = [str(t) for t in targets.values() if t.exists()]
    if existing and not overwrite:
        raise ConfigSplitError(f"{existing[0]} exists; pass overwrite=True (--overwrite) to replace it")
    written = WrittenSplits()
    written.dropped = int(len(bad_rows))
    for split, idx in config_split_indices(k, train_frac, valid_frac, seed).items():
        if not len(idx):
            continue
        part = {key: (a[idx] if is_per_config(key) else a) for key, a in arrays.items()}
        targets[split].parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(targets[split]) as f:
            np.savez_compressed(f, **part)
        written[split] = targets[split]
    return written
