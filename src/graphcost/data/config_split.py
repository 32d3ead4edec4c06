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

import zipfile
from pathlib import Path

import numpy as np

from graphcost.atomic import atomic_write, check_dir_option
from graphcost.data.io.npz_stream import check_declared_memory
from graphcost.data.io.schema import SchemaError
from graphcost.errors import GraphcostError
from graphcost.output_guard import check_outside_inputs

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


def split_by_configuration(path: str | Path, out_dir: str | Path, train_frac: float, valid_frac: float,
                           seed: int = 0, overwrite: bool = False, *, option: str = "out_dir",
                           input_name: str = "path") -> dict[str, Path]:
    """Write OUT/{train,valid,test}/<file name> from `path`; returns the written paths by split.

    `out_dir` is checked before the graph is read: a file or a path below one, a device, a virtual or
    read-only file system, or the graph file itself is an OutputPathError naming `option` (the CLI passes
    ``--out``; `input_name` names `path`, ``GRAPH`` for the CLI)."""
    path, out_dir = Path(path), Path(out_dir)
    check_dir_option(out_dir, option)
    check_outside_inputs(out_dir, option, files=[(input_name, path)])
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
    targets = {s: out_dir / s / path.name for s in SPLITS}
    existing = [str(t) for t in targets.values() if t.exists()]
    if existing and not overwrite:
        raise ConfigSplitError(f"{existing[0]} exists; pass overwrite=True (--overwrite) to replace it")
    written = {}
    for split, idx in config_split_indices(k, train_frac, valid_frac, seed).items():
        if not len(idx):
            continue
        part = {key: (a[idx] if is_per_config(key) else a) for key, a in arrays.items()}
        targets[split].parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(targets[split]) as f:
            np.savez_compressed(f, **part)
        written[split] = targets[split]
    return written
