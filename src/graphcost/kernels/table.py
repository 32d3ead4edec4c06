"""Kernel data: the kernel records of a collection as one table, and the kernel dataset in the TpuGraphs TILE schema.

A collection made with ``graphcost collect --kernels`` holds, per program, its graph file
(``OUT/<split>/<program>.npz``: ``config_feat`` (K, 24) flag vectors, or a layout graph, whose kernels
all ran under the default flags the caller gives; ``config_runtime`` (K,) the program's label) and its kernel record (``OUT/kernels/<split>/<program>.npz``,
`graphcost.kernels.records`). `KernelTable.read` joins them: one row per
(program, configuration, kernel), with the configuration's flags, the kernel's analytical cost and
an index into the distinct kernel graphs (one per fingerprint over the whole collection).

`write_kernel_dataset` turns a table into the kernel dataset: one TILE-schema npz per distinct LEAF
kernel (the TpuGraphs tile collection holds one fused kernel per graph, Phothilimthana et al. §3.2):

    node_feat (N, 140), node_opcode (N,), edge_index (E, 2)   the kernel's graph
    config_feat (C, 24)                                        the flag vectors it was measured under
    config_runtime (C,)                                        ns per EXECUTION, the median over the
                                                               programs that ran it under those flags
    config_runtime_normalizers (C,)                            the kernel's time under the default flags
                                                               (every row the same; the median of its rows
                                                               when it never ran under them), so that
                                                               runtime / normalizer orders its rows

plus ``kernel_fingerprint``, ``kernel_kind``, ``kernel_flops`` / ``kernel_transcendentals`` /
``kernel_bytes``, ``config_programs`` (C,) (how many programs' measurements each row merges) and
``kernel_families`` (the families it was seen in): extra keys, which the TpuGraphs loaders ignore.
Files go to ``OUT/{train,valid,test}/<digest>.npz`` (16 hex digits of the sha256 of the fingerprint, never
the fingerprint itself) by the split of the first program that ran the kernel, with the collection's
manifest families, so the existing tile loaders, the PyG dataset and ``graphcost train --data-dir OUT``
read it unchanged. Identical kernels measured under identical
flags in several programs are merged (median).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphcost.data.io.npz_stream import check_declared_memory
from graphcost.data.io.schema import SchemaError
from graphcost.errors import GraphcostError

FLAG_VECTOR_DIM = 24  # a configuration's flag vector (`graphcost.frontend.programs.flags.FLAG_COLUMNS`)

KERNELS_DIR = "kernels"
MANIFEST_MAX_BYTES = 256 * 2**20  # a collection of 100,000 programs has a manifest of about 100 MB
GRAPH_KEYS = ("config_runtime", "config_feat", "config_runtime_samples", "config_compiled_stats")  # what is read
SPLITS = ("train", "valid", "test")  # the splits a collection's manifest may name (`graphcost collect`)
RECORD_KEYS = ("kernel_fingerprint", "kernel_kind", "kernel_flops", "kernel_transcendentals", "kernel_bytes",
               "kernel_node_offsets", "kernel_edge_offsets", "node_feat", "node_opcode", "edge_index", "occ_config",
               "occ_kernel", "occ_count", "occ_runtime_ns", "occ_leaf", "profile_wall_ns")  # fmt: skip


class KernelDataError(GraphcostError, ValueError):
    """A kernel collection that cannot be read or written as a kernel dataset: the message names the file
    (the manifest, a graph, a kernel record) and the key."""


def plain_name(value: object, where: str) -> str:
    """`value` when it can be one path component (a non-empty string without a path separator, NUL, ``.``
    or ``..``); KernelDataError naming `where` (the manifest and its field) otherwise. A name read from a
    collection never becomes a path that leads out of it."""
    if not isinstance(value, str) or not value or value in (".", "..") or any(c in value for c in "/\\\0"):
        raise KernelDataError(f"{where} is {str(value)[:200]!r}, not a plain name (a path, '..', or not a string); "
                              "refusing to use it as a file name")
    return value


def manifest_split(manifest_path: Path, name: str, entry: dict) -> str:
    """The split of manifest entry `name` (default ``train``): one of train / valid / test, else a
    KernelDataError naming the manifest and the field (an absolute path or ``../x`` as a split would read or
    write outside)."""
    split = entry.get("split", "train")
    if split not in SPLITS:
        raise KernelDataError(f"{manifest_path}: key 'graphs.{name}.split' is {str(split)[:200]!r}; expected one of "
                              f"{', '.join(SPLITS)} (a split is never a path)")
    return split


def kernel_record_path(root: Path, name: str, entry: dict) -> Path:
    """``ROOT/kernels/<split>/<name>.npz``, the kernel record of manifest entry `name`, its split and name
    checked (`manifest_split`, `plain_name`)."""
    manifest_path = root / "manifest.json"
    plain_name(name, f"{manifest_path}: key 'graphs.{str(name)[:200]}'")
    return root / KERNELS_DIR / manifest_split(manifest_path, name, entry) / f"{name}.npz"


def kernel_file_name(fingerprint: object) -> str:
    """The file name stem of a kernel in the kernel dataset: 16 hex digits of the sha256 of its fingerprint
    (a fingerprint is read from the collection, so it never becomes a path itself)."""
    return hashlib.sha256(str(fingerprint).encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class KernelTable:
    """Rows = (program, configuration, kernel) occurrences of a kernel collection (module docstring)."""

    program: np.ndarray  # (R,) str
    family: np.ndarray  # (R,) str
    config: np.ndarray  # (R,) int64, the row of the program's config_feat
    kernel: np.ndarray  # (R,) int64, index into the distinct kernels below
    count: np.ndarray  # (R,) float64, executions per call
    runtime_ns: np.ndarray  # (R,) float64, self time per call, all executions
    leaf: np.ndarray  # (R,) bool
    flags: np.ndarray  # (R, F) float32, the configuration's flag vector
    executions_read: np.ndarray  # (R,) float64, executions per call read off the module (NaN: unknown)
    # distinct kernels (U)
    fingerprint: np.ndarray  # (U,) str
    kind: np.ndarray  # (U,) str
    flops: np.ndarray  # (U,) float64
    transcendentals: np.ndarray  # (U,) float64
    bytes: np.ndarray  # (U,) float64
    graphs: list = field(repr=False, default_factory=list)  # U x (node_feat, node_opcode, edge_index)
    # programs
    programs: dict = field(repr=False, default_factory=dict)  # name -> {family, split, config_feat, label, samples,
    #                                                                    compiled (K, 7) or None, wall}

    @property
    def per_execution_ns(self) -> np.ndarray:
        return self.runtime_ns / np.maximum(self.count, 1)

    def rows_of(self, names) -> np.ndarray:
        """Boolean (R,) mask of the rows of the programs in `names`."""
        return np.isin(self.program, np.asarray(sorted(names), dtype=str))

    @classmethod
    def read(cls, root: str | Path, default_flags: np.ndarray | None = None) -> "KernelTable":
        """The table of the kernel collection in `root` (its manifest's finished graphs that have a
        kernel record); KernelDataError (a ValueError) naming the file and the key when a record or graph is
        damaged. `default_flags`: (24,) the flag vector a LAYOUT collection's kernels ran under
        (`graphcost.frontend.programs.flags.default_flag_vector()`); a layout graph needs it. An argument of
        the wrong type is an ArgumentError naming it."""
        from graphcost.guards.bounds import check_path

        root = check_path("root", root)
        default_flags = _check_flags(default_flags)
        manifest_path = root / "manifest.json"
        try:
            manifest = json.loads(_read_manifest(manifest_path))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise KernelDataError(f"{manifest_path}: not the manifest of a collection written by `graphcost collect "
                                  f"--kernels` ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})") from None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("graphs", {}), dict):
            raise KernelDataError(f"{manifest_path}: key 'graphs' must be an object of per-graph entries")
        cols: dict[str, list] = {k: [] for k in ("program", "family", "config", "kernel", "count", "runtime_ns",
                                                   "leaf", "flags", "executions_read")}
        distinct: dict[str, int] = {}
        kinfo: dict[str, list] = {k: [] for k in ("fingerprint", "kind", "flops", "transcendentals", "bytes")}
        graphs: list = []
        programs: dict = {}
        for name, entry in sorted(manifest.get("graphs", {}).items()):
            if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
                raise KernelDataError(f"{manifest_path}: key 'graphs.{name}' must be an object with a string 'file'")
            record_path = kernel_record_path(root, name, entry)
            split = record_path.parent.name
            if not record_path.exists():
                continue
            graph_path = (root / entry["file"]).resolve()
            if not graph_path.is_relative_to(root.resolve()):
                raise KernelDataError(f"{manifest_path}: key 'graphs.{name}.file' is {entry['file'][:200]!r}, "
                                      f"which leads outside the collection directory {root}; refusing to read it")
            _check_regular(graph_path, "a graph of the collection")
            try:
                with np.load(graph_path, allow_pickle=False) as g:
                    check_declared_memory(g.zip, graph_path, [k for k in GRAPH_KEYS if k in g.files])
                    label = np.asarray(g["config_runtime"], np.float64)
                    if "config_feat" in g.files:
                        config_feat = np.asarray(g["config_feat"], np.float32)
                    elif default_flags is not None:  # a layout graph: its kernels ran under the default flags
                        config_feat = np.repeat(np.asarray(default_flags, np.float32)[None, :], len(label), axis=0)
                    else:
                        raise KeyError("config_feat is not in it (a layout graph: pass the default flag vector)")
                    samples = np.asarray(g["config_runtime_samples"], np.float64) \
                        if "config_runtime_samples" in g.files else None
                    compiled = np.asarray(g["config_compiled_stats"], np.float64) \
                        if "config_compiled_stats" in g.files else None
            except SchemaError as exc:  # arrays that declare more memory than there is
                raise KernelDataError(str(exc)) from None
            except (OSError, ValueError, KeyError, TypeError, AttributeError, EOFError, zipfile.BadZipFile) as exc:
                raise KernelDataError(f"{graph_path}: not a readable graph of the collection ({exc})") from None
            _check_regular(record_path, "a kernel record")
            try:
                with np.load(record_path, allow_pickle=False) as z:
                    check_declared_memory(z.zip, record_path, z.files)
                    r = {k: np.asarray(z[k]) for k in z.files}
            except SchemaError as exc:
                raise KernelDataError(str(exc)) from None
            except (OSError, ValueError, TypeError, AttributeError, EOFError, zipfile.BadZipFile) as exc:
                raise KernelDataError(f"{record_path}: not a readable kernel record ({type(exc).__name__}: "
                                      f"{str(exc)[:200]})") from None
            _check_record(record_path, r, len(config_feat))
            local = np.zeros(len(r["kernel_fingerprint"]), np.int64)
            for u, fp in enumerate(r["kernel_fingerprint"].tolist()):
                fp = str(fp)
                if fp not in distinct:
                    distinct[fp] = len(distinct)
                    for key in ("kind", "flops", "transcendentals", "bytes"):
                        kinfo[key].append(r[f"kernel_{key}"][u])
                    kinfo["fingerprint"].append(fp)
                    no, eo = r["kernel_node_offsets"], r["kernel_edge_offsets"]
                    graphs.append((r["node_feat"][no[u]:no[u + 1]], r["node_opcode"][no[u]:no[u + 1]],
                                   r["edge_index"][eo[u]:eo[u + 1]]))
                local[u] = distinct[fp]
            m = len(r["occ_config"])
            cols["program"].append(np.full(m, name))
            cols["family"].append(np.full(m, entry.get("family", "")))
            cols["config"].append(r["occ_config"].astype(np.int64))
            cols["kernel"].append(local[r["occ_kernel"]])
            cols["count"].append(r["occ_count"].astype(np.float64))
            cols["runtime_ns"].append(r["occ_runtime_ns"].astype(np.float64))
            cols["leaf"].append(r["occ_leaf"].astype(bool))
            cols["flags"].append(config_feat[r["occ_config"]])
            cols["executions_read"].append(r["occ_executions"].astype(np.float64) if "occ_executions" in r
                                           else np.full(m, np.nan))
            programs[name] = {"family": entry.get("family", ""), "split": split, "config_feat": config_feat,
                              "label": label, "samples": samples, "compiled": compiled,
                              "wall": np.median(r["profile_wall_ns"], axis=1)}
        if not programs:
            raise KernelDataError(f"{root}: no program with a kernel record (collect with "
                                  "`graphcost collect --kernels`)")
        cat = {k: np.concatenate(v) for k, v in cols.items()}
        return cls(program=cat["program"].astype(str), family=cat["family"].astype(str), config=cat["config"],
                   kernel=cat["kernel"], count=cat["count"], runtime_ns=cat["runtime_ns"], leaf=cat["leaf"],
                   flags=cat["flags"], executions_read=cat["executions_read"], fingerprint=np.asarray(kinfo["fingerprint"], dtype=str),
                   kind=np.asarray(kinfo["kind"], dtype=str), flops=np.asarray(kinfo["flops"], np.float64),
                   transcendentals=np.asarray(kinfo["transcendentals"], np.float64),
                   bytes=np.asarray(kinfo["bytes"], np.float64), graphs=graphs, programs=programs)


def _check_regular(path: Path, what: str) -> None:
    """KernelDataError when `path` is a FIFO, a device or a socket: reading one could wait for ever."""
    from graphcost.guards.outputs import special_kind

    kind = special_kind(path)
    if kind is not None:
        raise KernelDataError(f"{path}: is {kind}, not a regular file; refusing to read it as {what}")


def _read_manifest(path: Path) -> str:
    """The text of a collection's manifest, read only when it is a regular file of at most MANIFEST_MAX_BYTES."""
    _check_regular(path, "a manifest")
    with open(path, "rb") as f:
        data = f.read(MANIFEST_MAX_BYTES + 1)
    if len(data) > MANIFEST_MAX_BYTES:
        raise KernelDataError(f"{path}: larger than {MANIFEST_MAX_BYTES // 2**20} MiB; not the manifest of a "
                              "collection (refusing to read it whole)")
    return data.decode("utf-8")


def _check_record(path: Path, r: dict, num_configs: int) -> None:
    """KernelDataError naming kernel record `path` and the field when a key is missing, the per-kernel or
    per-occurrence arrays disagree in length, or an index (offsets, ``occ_kernel``, ``occ_config``) is out
    of range: a damaged record is one line, not an IndexError later."""
    missing = [k for k in RECORD_KEYS if k not in r]
    if missing:
        raise KernelDataError(f"{path}: key {missing[0]!r} is missing (not a kernel record of "
                              "`graphcost collect --kernels`)")
    for key in RECORD_KEYS + (("occ_executions",) if "occ_executions" in r else ()):
        if r[key].ndim == 0:
            raise KernelDataError(f"{path}: key {key!r} is a scalar; expected an array")
    u = len(r["kernel_fingerprint"])
    for key in ("kernel_kind", "kernel_flops", "kernel_transcendentals", "kernel_bytes"):
        if len(r[key]) != u:
            raise KernelDataError(f"{path}: key {key!r} has {len(r[key])} rows, expected one per kernel ({u})")
    for key, items in (("kernel_node_offsets", "node_feat"), ("kernel_edge_offsets", "edge_index")):
        offsets = r[key]
        if (offsets.ndim != 1 or len(offsets) != u + 1 or not np.issubdtype(offsets.dtype, np.integer)
                or (len(offsets) and (offsets[0] < 0 or offsets[-1] > len(r[items]))) or (np.diff(offsets) < 0).any()):
            raise KernelDataError(f"{path}: key {key!r} is not {u + 1} increasing offsets into {items!r} "
                                  f"({len(r[items])} rows)")
    if len(r["node_opcode"]) != len(r["node_feat"]):
        raise KernelDataError(f"{path}: key 'node_opcode' has {len(r['node_opcode'])} rows, 'node_feat' "
                              f"{len(r['node_feat'])}")
    m = len(r["occ_config"])
    for key in ("occ_kernel", "occ_count", "occ_runtime_ns", "occ_leaf") + (("occ_executions",) if "occ_executions" in r
                                                                             else ()):
        if len(r[key]) != m:
            raise KernelDataError(f"{path}: key {key!r} has {len(r[key])} rows, expected one per occurrence ({m})")
    for key, bound in (("occ_kernel", u), ("occ_config", num_configs)):
        index = r[key]
        if not np.issubdtype(index.dtype, np.integer) or (m and (index.min() < 0 or index.max() >= bound)):
            raise KernelDataError(f"{path}: key {key!r} holds an index outside 0..{bound - 1}")
    if r["profile_wall_ns"].ndim != 2 or not np.issubdtype(r["profile_wall_ns"].dtype, np.number):
        raise KernelDataError(f"{path}: key 'profile_wall_ns' should be a 2-d numeric array, got shape "
                              f"{r['profile_wall_ns'].shape}")


def write_kernel_dataset(table: KernelTable | str | Path, out: str | Path, overwrite: bool = False,
                         default_flags: np.ndarray | None = None, *, option: str = "out",
                         input_name: str = "table") -> dict:
    """The kernel dataset of `table` in `out` (module docstring); returns its manifest.

    `table`: a `KernelTable`, or the root of a kernel collection, read (`KernelTable.read`) only after `out` is
    checked. `out` is checked first: a file or a path below one, a device, a virtual or read-only file system,
    the collection root, a path inside it or a directory holding it (which `overwrite` would empty) is an
    OutputPathError naming `option` (the CLI passes ``--out``; `input_name` names the root, ``ROOT`` for the
    CLI). An existing non-empty `out` is refused (OutputExistsError) unless `overwrite`; `out` is written under
    its lock (`graphcost.guards.atomic.lock_dir`). Files are named by `kernel_file_name` (a digest of the fingerprint),
    never by a string read from the collection. `default_flags`: (24,) the default flag vector
    (`graphcost.frontend.programs.flags.default_flag_vector`), whose row's time is each kernel's normaliser
    (None: the median of its rows)."""
    from graphcost.guards.atomic import OutputExistsError, check_dir_option, clear_dir, lock_dir
    from graphcost.guards.bounds import ArgumentError, check_path
    from graphcost.guards.outputs import check_outside_inputs

    if not isinstance(table, KernelTable):
        table = check_path(input_name, table)
    if not isinstance(overwrite, bool):
        raise ArgumentError(f"overwrite must be True or False, got {overwrite!r}")
    default_flags = _check_flags(default_flags)
    out = check_dir_option(check_path(option, out), option)
    if not isinstance(table, KernelTable):  # not the collection, inside it, nor a directory holding it
        check_outside_inputs(out, option, data=[(input_name, table)], around=[(input_name, table)])
    if _holds_files(out) and not overwrite:
        raise OutputExistsError(f"{out}: exists and is not empty; pass overwrite to replace it")
    if not isinstance(table, KernelTable):
        table = KernelTable.read(table, default_flags)
    with lock_dir(out, option):  # a second writer into `out` waits for none: it is refused in one line
        if _holds_files(out):
            if not overwrite:  # filled since the check above
                raise OutputExistsError(f"{out}: exists and is not empty; pass overwrite to replace it")
            clear_dir(out)  # the lock file stays
        return _write_dataset(table, out, default_flags)


def _check_flags(default_flags) -> np.ndarray | None:
    """`default_flags` as a (24,) float32 vector of finite values, or None; ArgumentError naming it otherwise."""
    from graphcost.guards.bounds import ArgumentError

    if default_flags is None:
        return None
    try:
        flags = np.asarray(default_flags, np.float32)
    except (TypeError, ValueError):
        flags = None
    if flags is None or flags.shape != (FLAG_VECTOR_DIM,) or not np.isfinite(flags).all():
        raise ArgumentError(f"default_flags must be a ({FLAG_VECTOR_DIM},) vector of finite numbers (the default "
                            f"flag vector) or None, got {type(default_flags).__name__}"
                            + (f" of shape {flags.shape}" if flags is not None else ""))
    return flags


def _holds_files(out: Path) -> bool:
    """Whether directory `out` holds anything but the lock file of `graphcost.guards.atomic.lock_dir`."""
    from graphcost.guards.atomic import LOCK_NAME

    return out.is_dir() and any(p.name != LOCK_NAME for p in out.iterdir())


def _write_dataset(table: KernelTable, out: Path, default_flags: np.ndarray | None) -> dict:
    """The files of `write_kernel_dataset` into checked, locked, empty `out`; its manifest."""
    from graphcost.guards.atomic import atomic_write_json
    from graphcost.data.graph import TileGraph
    from graphcost.data.io.tpugraphs_io import save_graph

    for program, info in table.programs.items():  # a KernelTable built in Python too: a split is never a path
        if info.get("split") not in SPLITS:
            raise KernelDataError(f"program {str(program)[:200]!r}: split {str(info.get('split'))[:200]!r} is not "
                                  f"one of {', '.join(SPLITS)}")
    leaf = np.flatnonzero(table.leaf & (table.count > 0))
    per_exec = table.per_execution_ns
    graphs_manifest = {}
    by_kernel = leaf[np.argsort(table.kernel[leaf], kind="stable")]  # leaf rows grouped by kernel, in row order
    kernels, starts = np.unique(table.kernel[by_kernel], return_index=True)
    for u, rows in zip(kernels.tolist(), np.split(by_kernel, starts[1:])):
        feat, opcode, edges = table.graphs[u]
        if not len(feat):
            continue
        flag_rows, inverse = np.unique(table.flags[rows], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        runtime = np.asarray([np.median(per_exec[rows[inverse == c]]) for c in range(len(flag_rows))], np.float64)
        merged = np.asarray([len(set(table.program[rows[inverse == c]])) for c in range(len(flag_rows))], np.int64)
        is_default = (np.zeros(len(flag_rows), bool) if default_flags is None
                      else (flag_rows == np.asarray(default_flags, flag_rows.dtype)[None, :]).all(axis=1))
        normalizer = float(runtime[is_default][0] if is_default.any() else np.median(runtime))
        first = table.program[rows[0]]
        split = table.programs[first]["split"]
        name = kernel_file_name(table.fingerprint[u])
        if name in graphs_manifest:  # two fingerprints with one 16-digit digest: the kernel's index added
            name = f"{name}-{u}"
        graph = TileGraph(path=None, node_feat=np.asarray(feat, np.float32), node_opcode=np.asarray(opcode),
                          edge_index=np.asarray(edges, np.int64), config_feat=flag_rows.astype(np.float32),
                          config_runtime=runtime, config_runtime_normalizers=np.full(len(runtime), normalizer))
        families = sorted(set(table.family[rows]))
        extra = {"kernel_fingerprint": np.asarray(table.fingerprint[u]), "kernel_kind": np.asarray(table.kind[u]),
                 "kernel_flops": np.asarray(table.flops[u]), "kernel_transcendentals": np.asarray(table.transcendentals[u]),
                 "kernel_bytes": np.asarray(table.bytes[u]), "config_programs": merged,
                 "kernel_families": np.asarray(families, dtype=str)}
        (out / split).mkdir(parents=True, exist_ok=True)
        save_graph(graph, out / split / f"{name}.npz", compressed=True, validate=True, extra=extra)
        graphs_manifest[name] = {"file": f"{split}/{name}.npz", "split": split, "family": table.family[rows[0]],
                                 "families": families, "kind": str(table.kind[u]), "num_configs": int(len(flag_rows)),
                                 "num_nodes": int(len(feat))}
    manifest = {"schema": "tpugraphs-tile", "label": "REAL: per-kernel runtimes measured on this machine (ns per "
                "execution)", "programs": len(table.programs), "graphs": graphs_manifest}
    atomic_write_json(manifest, out / "manifest.json", indent=1)
    return manifest
