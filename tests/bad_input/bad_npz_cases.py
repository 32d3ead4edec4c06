"""Adversarial TpuGraphs npz files for `rank` / `predict` (issue 19), generated from a valid one.

Each case mutates the npz-keyed arrays of a valid graph; `CASES` lists, per case, the graph
kinds it applies to, the mutation, and the key + problem fragment the one-line ``error:``
must name. Every mutation is applied to an UNLABELLED file (test-split files carry placeholder
runtimes, or none), the path where validation used to be switched off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

Arrays = dict[str, np.ndarray]


def hide_labels(a: Arrays) -> Arrays:
    """A test-split file: placeholder zero runtimes (and normalizers) instead of measurements."""
    out = dict(a, config_runtime=np.zeros_like(a["config_runtime"]))
    if "config_runtime_normalizers" in a:
        out["config_runtime_normalizers"] = np.zeros_like(a["config_runtime_normalizers"])
    return out


def drop_runtime(a: Arrays) -> Arrays:
    """No labels at all: config_runtime (and normalizers) absent."""
    return {k: v for k, v in a.items() if k not in ("config_runtime", "config_runtime_normalizers")}


def _edge_out_of_range(a: Arrays) -> Arrays:
    e = a["edge_index"].copy()
    e[0, 0] = len(a["node_feat"]) + 7
    return dict(a, edge_index=e)


def _config_id_out_of_range(a: Arrays) -> Arrays:
    ids = a["node_config_ids"].copy()
    ids[-1] = len(a["node_feat"])
    return dict(a, node_config_ids=ids)


def _zero_configs(a: Arrays) -> Arrays:
    out = dict(a, config_runtime=a["config_runtime"][:0])
    for key in ("config_feat", "config_runtime_normalizers", "node_config_feat"):
        if key in a:
            out[key] = a[key][:0]
    return out


def _short_normalizers(a: Arrays) -> Arrays:
    return dict(a, config_runtime_normalizers=a["config_runtime_normalizers"][:-1])


def _nan_node_feat(a: Arrays) -> Arrays:
    f = a["node_feat"].copy()
    f[1, 3] = np.nan
    return dict(a, node_feat=f)


def _cycle(a: Arrays) -> Arrays:
    # [u, v] = u consumes v: 0 <- 1 <- 0 closes a loop whatever the rest of the graph is.
    e = np.concatenate([a["edge_index"], np.array([[0, 1], [1, 0]], dtype=a["edge_index"].dtype)])
    return dict(a, edge_index=e)


def _short_opcodes(a: Arrays) -> Arrays:
    return dict(a, node_opcode=a["node_opcode"][:-1])


def _opcode_9999(a: Arrays) -> Arrays:
    op = a["node_opcode"].astype(np.int32)
    op[0] = 9999
    return dict(a, node_opcode=op)


def _duplicate_config_ids(a: Arrays) -> Arrays:
    ids = np.concatenate([a["node_config_ids"], a["node_config_ids"][:1]])  # (nc + 1,) first id twice
    feat = np.concatenate([a["node_config_feat"], a["node_config_feat"][:, :1]], axis=1)  # (c, nc + 1, 18)
    return dict(a, node_config_ids=ids, node_config_feat=feat)


# name -> (kinds, mutation applied to an unlabelled file, key in the error, problem fragment)
CASES: dict[str, tuple[tuple[str, ...], Callable[[Arrays], Arrays], str, str]] = {
    "edge_out_of_range": (("layout", "tile"), _edge_out_of_range, "edge_index", "out of range"),
    "config_id_out_of_range": (("layout",), _config_id_out_of_range, "node_config_ids", "out of range"),
    "zero_configs": (("layout", "tile"), _zero_configs, "config_runtime", "no configurations"),
    "short_normalizers": (("tile",), _short_normalizers, "config_runtime_normalizers", "rows"),
    "nan_node_feat": (("layout", "tile"), _nan_node_feat, "node_feat", "non-finite"),
    "cycle": (("layout", "tile"), _cycle, "edge_index", "cycle"),
    "short_opcodes": (("layout", "tile"), _short_opcodes, "node_opcode", "!= number of nodes"),
    "opcode_9999": (("layout", "tile"), _opcode_9999, "node_opcode", "9999"),
    "duplicate_config_ids": (("layout",), _duplicate_config_ids, "node_config_ids", "more than once"),
}


def zero_edges(a: Arrays) -> Arrays:
    """A VALID graph with no edges at all: (0, 2) edge_index."""
    return dict(a, edge_index=a["edge_index"][:0])


def single_node_tile(a: Arrays) -> Arrays:
    """A VALID one-node tile kernel (no edges), as `data stats` accepts."""
    return dict(a, node_feat=a["node_feat"][:1], node_opcode=a["node_opcode"][:1], edge_index=a["edge_index"][:0])


def read_arrays(path: str | Path) -> Arrays:
    """Every array of an npz file (no pickles)."""
    with np.load(path, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def write_arrays(arrays: Arrays, path: str | Path) -> Path:
    """np.savez `arrays` to `path` (a test's tmp_path)."""
    np.savez(path, **arrays)
    return Path(path)
