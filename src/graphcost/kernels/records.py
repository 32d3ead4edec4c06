"""The kernel records of one collected program: every kernel of every configuration, timed and identified.

`graphcost collect --kernels` adds, for each program, ``OUT/kernels/<split>/<program>.npz`` beside
the program's graph file (written first: a finished graph always has its kernel record). It joins
two halves:

* the measuring processes' profiled passes (`graphcost.measure.kernel_profile`,
  ``kernel_*`` keys of each process's result): per (configuration, kernel) the self time per call
  in each process P;
* the driver's reading of each configuration's optimized module (`graphcost.frontend.hlo.kernels`):
  what each kernel is (its fingerprint, kind, analytical cost and graph).

A kernel's label combines the processes as the program's label does (``level-median``): with
``l_p = median_k T[k, p]`` the level of process p over the PROGRAM runtimes T of its K
configurations,

    t_kernel = median_p(t[kernel, p] / l_p) · median_p(l_p),

so a process that ran slower throughout does not decide a kernel's time either (``median``
collections: the plain median over processes).

Keys (M rows = (configuration, kernel) occurrences, U distinct kernels by fingerprint, P processes):

    occ_config (M,) int64          configuration index (row of the program's config_feat)
    occ_kernel (M,) int64          index into the distinct kernels
    occ_name (M,) str              the instruction's name in that configuration's optimized module
    occ_count (M,) int64           executions per call (a loop body's kernels: its trip count)
    occ_leaf (M,) bool             False for control flow (its time is what the loop adds)
    occ_executions (M,) float64    executions per call read off the module (loop trip counts; NaN: unknown),
                                   what a prediction without a profile must use
    occ_runtime_ns (M,) float64    the label: self time per call, all executions together
    occ_samples_ns (M, P) float64  per process
    profile_wall_ns (K, P) float64 wall time of one profiled call, per process
    program_runtime_ns (K, P)      the program's timed (unprofiled) runtimes of the same processes
    kernel_fingerprint (U,) str, kernel_kind (U,) str, kernel_opcode (U,) str, kernel_text (U,) str
    kernel_flops / kernel_transcendentals / kernel_bytes (U,) float64
    kernel_node_offsets (U + 1,) int64, kernel_edge_offsets (U + 1,) int64: kernel u's graph is rows
        offsets[u]:offsets[u + 1] of node_feat (ΣN, 140) float32 / node_opcode (ΣN,) uint8 and of
        edge_index (ΣE, 2) int64 (node indices local to the kernel); control flow has no graph (0 rows)
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from graphcost.kernels.table import KERNELS_DIR
from graphcost.frontend.hlo.kernels import Kernel
from graphcost.measure.kernel_profile import PROFILE_KEYS

__all__ = ["KERNELS_DIR", "combine_profiles", "coverage", "kernel_record", "read_process_profiles", "save_kernel_record"]


def read_process_profiles(files: list[Path]) -> list[dict[str, np.ndarray]]:
    """The profiled-pass arrays of each measuring process's result file; ValueError naming the
    file when one has none (the process was not asked for kernels)."""
    out = []
    for f in files:
        with np.load(io.BytesIO(Path(f).read_bytes()), allow_pickle=False) as z:
            missing = [k for k in PROFILE_KEYS if k not in z.files]
            if missing:
                raise ValueError(f"{f}: key {missing[0]!r} missing: this measuring process made no profiled pass")
            out.append({k: np.asarray(z[k]) for k in PROFILE_KEYS})
    return out


def combine_profiles(profiles: list[dict[str, np.ndarray]], samples: np.ndarray, statistic: str = "level-median"
                     ) -> dict[str, np.ndarray]:
    """Join the P processes' kernel rows on (configuration, name) and label them (module docstring).

    samples: (K, P) program runtimes of the same processes (their levels). A kernel absent from a
    process (a branch not taken there) counts 0 there."""
    keys: dict[tuple[int, str], int] = {}
    count: dict[tuple[int, str], int] = {}
    leaf: dict[tuple[int, str], bool] = {}
    for prof in profiles:
        for c, n, k, lf in zip(prof["kernel_config"].tolist(), prof["kernel_name"].tolist(),
                               prof["kernel_count"].tolist(), prof["kernel_leaf"].tolist()):
            key = (int(c), str(n))
            if key not in keys:
                keys[key] = len(keys)
                count[key], leaf[key] = int(k), bool(lf)
            else:
                leaf[key] = leaf[key] and bool(lf)
    order = sorted(keys)
    index = {key: i for i, key in enumerate(order)}
    per = np.zeros((len(order), len(profiles)), np.float64)
    for p, prof in enumerate(profiles):
        for c, n, t in zip(prof["kernel_config"].tolist(), prof["kernel_name"].tolist(),
                           prof["kernel_self_ns"].tolist()):
            per[index[(int(c), str(n))], p] = float(t)
    if statistic == "median" or not len(order):
        label = np.median(per, axis=1) if len(order) else np.zeros(0)
    else:
        levels = np.median(np.asarray(samples, np.float64), axis=0)  # (P,) each process's program level
        label = np.median(per / levels, axis=1) * float(np.median(levels))
    return {"occ_config": np.asarray([c for c, _ in order], np.int64),
            "occ_name": np.asarray([n for _, n in order], dtype=str),
            "occ_count": np.asarray([count[k] for k in order], np.int64),
            "occ_leaf": np.asarray([leaf[k] for k in order], bool),
            "occ_runtime_ns": label, "occ_samples_ns": per,
            "profile_wall_ns": np.stack([p["profile_wall_ns"] for p in profiles], axis=1),
            "program_runtime_ns": np.asarray(samples, np.float64)}


def kernel_record(combined: dict[str, np.ndarray], kernels: list[dict[str, Kernel]]) -> dict[str, np.ndarray]:
    """The record's arrays: `combined` (`combine_profiles`) joined with each configuration's
    kernels (``kernels[k]``: `graphcost.frontend.programs.jax_program.optimized_kernels` of configuration k). A profiled name that the
    configuration's module lacks is a ValueError (the profile and the module disagree)."""
    from graphcost.frontend.hlo.featurizer import featurize_module

    distinct: dict[str, int] = {}
    table: list[Kernel] = []
    occ_kernel = np.zeros(len(combined["occ_name"]), np.int64)
    occ_exec = np.full(len(combined["occ_name"]), np.nan)
    for i, (c, name) in enumerate(zip(combined["occ_config"].tolist(), combined["occ_name"].tolist())):
        k = kernels[c].get(name)
        if k is None:
            raise ValueError(f"configuration {c}: the profile names kernel {name!r}, which its optimized module lacks")
        if k.fingerprint not in distinct:
            distinct[k.fingerprint] = len(table)
            table.append(k)
        occ_kernel[i] = distinct[k.fingerprint]
        occ_exec[i] = np.nan if k.executions is None else k.executions
    feats, opcodes, edges, node_off, edge_off = [], [], [], [0], [0]
    for k in table:
        if k.graph is None:
            node_off.append(node_off[-1])
            edge_off.append(edge_off[-1])
            continue
        fm = featurize_module(k.graph)
        feats.append(fm.node_feat.astype(np.float32))
        opcodes.append(fm.node_opcode)
        edges.append(fm.edge_index.astype(np.int64))
        node_off.append(node_off[-1] + len(fm.node_feat))
        edge_off.append(edge_off[-1] + len(fm.edge_index))
    return {**combined, "occ_kernel": occ_kernel, "occ_executions": occ_exec,
            "kernel_fingerprint": np.asarray([k.fingerprint for k in table], dtype=str),
            "kernel_kind": np.asarray([k.kind for k in table], dtype=str),
            "kernel_opcode": np.asarray([k.opcode for k in table], dtype=str),
            "kernel_text": np.asarray([k.text for k in table], dtype=str),
            "kernel_flops": np.asarray([k.flops for k in table], np.float64),
            "kernel_transcendentals": np.asarray([k.transcendentals for k in table], np.float64),
            "kernel_bytes": np.asarray([k.bytes for k in table], np.float64),
            "kernel_node_offsets": np.asarray(node_off, np.int64), "kernel_edge_offsets": np.asarray(edge_off, np.int64),
            "node_feat": np.concatenate(feats) if feats else np.zeros((0, 140), np.float32),
            "node_opcode": np.concatenate(opcodes) if opcodes else np.zeros(0, np.uint8),
            "edge_index": np.concatenate(edges) if edges else np.zeros((0, 2), np.int64)}


def save_kernel_record(arrays: dict[str, np.ndarray], path: Path) -> None:
    """Write a kernel record atomically as an LZMA npz (`graphcost.data.io.npz_stream.save_npz_lzma`): a
    layout program's configurations compile to near-copies of the same kernels, which zlib's window
    cannot see across (2.58 MB -> 0.57 MB on the largest record of the layout collection)."""
    from graphcost.data.io.npz_stream import save_npz_lzma

    path.parent.mkdir(parents=True, exist_ok=True)
    save_npz_lzma(path, arrays)


def coverage(record: dict[str, np.ndarray]) -> np.ndarray:
    """(K,) share of each configuration's profiled wall time (median over processes) in leaf kernels."""
    wall = np.median(record["profile_wall_ns"], axis=1)
    leaf = np.zeros(len(wall))
    np.add.at(leaf, record["occ_config"][record["occ_leaf"]], record["occ_runtime_ns"][record["occ_leaf"]])
    return np.divide(leaf, wall, out=np.zeros_like(leaf), where=wall > 0)
