"""Local data collection: zoo programs x real configurations -> measured TpuGraphs-schema npz files.

Two configuration spaces (each graph's configurations are built by `collect/jobs.py`):

* ``layout`` (`graphcost.frontend.programs.layouts`): per-node layouts of dot / convolution / reshape
  nodes, search mode ``random`` or ``default``. Output: one LAYOUT-schema npz per program
  (node_config_ids, node_config_feat (K, C, 18), config_runtime in ns).
* ``flags`` (`graphcost.frontend.programs.flags`): whole-program XLA CPU compiler options. Output: one
  TILE-schema npz per program (config_feat (K, 24) = flag vector, config_runtime in ns,
  config_runtime_normalizers = runtime of the default flags). See `flags.FLAG_COLUMNS`.

The graph of every file is the UNOPTIMIZED HLO module of the program (what the compiler and
its configuration act on), featurized by `graphcost.frontend.hlo.featurizer`.

Every label comes from the cross-process protocol (`graphcost.measure.cross_process`): the driver
compiles a graph's configurations into JAX's persistent compilation cache, then P fresh measuring
processes pinned to one core time them all; the label combines the processes (`cross_process.combine`
with the collection's statistic, `label_statistic`; `relabel_collection` recomputes it), and the
(K, P) samples are stored beside it (``config_runtime_samples``, int64 ns; layout files also get
``config_search_mode``, 'default' or 'random' per configuration). Extra keys are ignored by the
TpuGraphs loaders. ``repeat_collection`` measures every finished graph again, in P new processes
at a later time: an independent second collection of the same configurations, stored as
``config_runtime_repeat_samples`` (K, P), from which the card's repeatability table and the
benchmarks' noise ceiling are computed.

What the compiler did to each configuration is stored too, read by compiling each configuration
once more through the persistent cache after it is measured: ``config_compiled_stats`` (K, 7),
the data movement of its optimized module (`graphcost.frontend.hlo.compiled_stats`: bytes and
counts of copies and transposes, kernels, instructions), and ``config_executable_ids`` (K,), the
first configuration whose cache entry holds the same code
(`graphcost.frontend.programs.executable_fingerprint`). Configurations of one executable get one
label from their samples together (`cross_process.pool_executables`), and the manifest's noise
and repeat statistics count each executable once. ``annotate_collection`` adds both to the graphs
of a collection made before they existed (and pools their labels).

A program that cannot be built, compiled or measured (an error in the program, a JAX version that
lacks something it uses) is skipped with a warning and recorded under the manifest's ``skipped``
(its error's first line), so a long collection never dies on one program; a resume tries it again.
An XLA module given as a file is someone else's program: each not yet collected is first loaded, compiled and
called once in a child process under deadlines (`graphcost.collect.jobs.check_modules`), and one that hangs, waits on
an infeed or crashes stops the collection with one line naming it, before anything is measured.

Output directory: ``OUT/{train,valid,test}/<program>.npz`` plus ``OUT/manifest.json`` (collection
parameters, environment metadata, one entry per finished graph with its noise statistics, the
load around each process and the wall time). Programs are split by graph, stratified by family
(`graphcost.data.splits.stratified_split`), deterministically from the seed. Every file is
written atomically. Resume: a finished graph (file present AND listed in the manifest) is
skipped; the finished processes of an unfinished graph (``OUT/.work/<program>/proc<p>.npz``, each
recorded with its SHA-256 in ``proc-done.json`` when the driver saw it finish) are kept and not
measured again. One collection at a time writes to OUT (an exclusive lock, ``OUT/.graphcost.lock``,
holding its pid); measuring processes die with their driver (`measure_processes` of
`measure/cross_process.py`). Every manifest path must lie inside OUT.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from pathlib import Path
from collections.abc import Mapping
from typing import Any

import numpy as np

from graphcost.guards.atomic import atomic_write_json
from graphcost.collect.guard import check_collection_out, check_configs_fit, open_collection
from graphcost.collect.jobs import CollectOptions, GraphJob, check_modules, prepare_job, round_robin
from graphcost.data.splits import stratified_split
from graphcost.frontend.programs.compile import compile_all, persistent_cache
from graphcost.frontend.programs.zoo import ProgramSpec, resolve_program
from graphcost.measure.cross_process import combine, measure_processes, noise_stats
from graphcost.measure.interleaved import cpu_model, environment_metadata, load_average, spearman

SPLITS = ("train", "valid", "test")
MANIFEST = "manifest.json"
WORK = ".work"
COMPILED_KEY = "config_compiled_stats"  # (K, len(compiled_stats.COMPILED_STATS)) what the compiler did
EXECUTABLE_KEY = "config_executable_ids"  # (K,) int64 the first configuration that compiled to the same code
SAMPLE_KEYS = ("config_runtime_samples", "config_runtime_repeat_samples")  # (K, P) each: the label's, the repeat's


# --- manifest ------------------------------------------------------------------------------

def load_manifest(out_dir: Path, options: CollectOptions, manifest: dict | None = None) -> dict[str, Any]:
    """The existing manifest (checked against `options`; `manifest`: its contents, already read) or a
    fresh one."""
    path = out_dir / MANIFEST
    if manifest is None and path.exists():
        manifest = _read_manifest(path)
    if manifest is not None:
        old = manifest.get("collection", {})
        if old != options.key() and _without_label(old) == _without_label(options.key()):
            theirs = label_statistic(manifest, path)
            raise ValueError(f"{path}: key 'collection.label': this collection's labels are the {theirs} over "
                             f"processes, this run asks for {options.label}; resume with --label {theirs}, or pass "
                             f"--action relabel to recompute every label from its stored per-process samples with "
                             f"{options.label}")
        counted = old.get("processes") if isinstance(old, dict) else None
        if isinstance(counted, int) and counted < options.cross.processes and \
                {**old, "processes": options.cross.processes} == options.key():
            raise ValueError(f"{path}: key 'collection.processes' is {counted}, this run asks for "
                             f"{options.cross.processes}; pass --action add-processes to measure the missing processes of "
                             f"its graphs first, or --processes {counted} to resume as it is")
        if old != options.key():
            raise ValueError(f"{path}: key 'collection' is {old}, but this run asks for {options.key()}; "
                             "use another --out directory or the same parameters to resume")
        if not isinstance(manifest.get("graphs", {}), dict):
            raise ValueError(f"{path}: key 'graphs' must be an object of per-graph entries")
        manifest.setdefault("graphs", {})
        for name, entry in manifest["graphs"].items():
            graph_file(out_dir, name, entry)
        return manifest
    return {"schema": "tpugraphs-layout" if options.space == "layout" else "tpugraphs-tile",
            "label": "REAL: runtimes measured on this machine", "collection": options.key(), "graphs": {}}


def check_same_cpu(manifest: dict, path: Path) -> None:
    """ValueError, in one line naming `path` (the manifest's file), when this machine's CPU model is
    not the one the collection's graphs were measured on: runtimes of another CPU are another
    dataset, so measuring more graphs (or a repeat) into it would mix two machines' labels."""
    env = manifest.get("environment")
    host = env.get("host") if isinstance(env, dict) else None
    recorded = host.get("cpu_model") if isinstance(host, dict) else None
    here = cpu_model()
    if manifest.get("graphs") and isinstance(recorded, str) and recorded != here:
        raise ValueError(f"{path}: key 'environment.host.cpu_model' is {recorded!r}, but this machine's CPU is "
                         f"{here!r}: one collection's labels come from one CPU model; measure into another --out")


def label_statistic(manifest: dict, path: Path | None = None) -> str:
    """The label statistic of a collection (`cross_process.LABEL_STATISTICS`); none recorded: the median.
    ValueError, naming `path` (the manifest's file) when given, when the manifest names another."""
    from graphcost.measure.cross_process import check_statistic

    key = manifest.get("collection")
    statistic = key.get("label", "median") if isinstance(key, dict) else "median"
    return check_statistic(statistic, f"{path or 'manifest'}: key 'collection.label'")


def _without_label(key: Any) -> Any:
    return {k: v for k, v in key.items() if k != "label"} if isinstance(key, dict) else key


def graph_file(out_dir: Path, name: str, entry: Any) -> Path:
    """The file of manifest entry `name`, resolved; ValueError naming the manifest and the field when
    the entry is not an object, has no string ``file``, or its file lies outside `out_dir` (``..``,
    an absolute path, a link leading out): nothing outside the collection is ever read or rewritten."""
    where = f"{out_dir / MANIFEST}: key 'graphs.{name}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}' must be an object, got {type(entry).__name__}")
    rel = entry.get("file")
    if not isinstance(rel, str) or not rel:
        raise ValueError(f"{where}.file' must be a path relative to the collection, got {rel!r}")
    root = out_dir.resolve()
    path = (root / rel).resolve()
    if not path.is_relative_to(root):
        raise ValueError(f"{where}.file' is {rel!r}, which leads outside the collection directory {out_dir}; "
                         "refusing to read or rewrite it")
    return path


# --- one graph: labels and files ---------------------------------------------------------------

def summarize(samples: np.ndarray, statistic: str = "median", executables: np.ndarray | None = None) -> dict:
    """Manifest fields of a (K, P) sample matrix: label range, spread, noise statistics (over the
    distinct executables when ``executables`` is given), and their number."""
    label = combine(samples, statistic, executables)
    extra = {} if executables is None else {"num_executables": int(len(np.unique(executables)))}
    return {"num_configs": int(len(label)), **extra, "runtime_ns_min": float(label.min()),
            "runtime_ns_max": float(label.max()), "spread": float(label.max() / label.min()),
            **noise_stats(samples, statistic, executables)}


def repeat_summary(samples: np.ndarray, label: np.ndarray, statistic: str = "median",
                   executables: np.ndarray | None = None) -> dict:
    """Manifest fields of a repeat's (K, P) samples: Spearman of its label (the same statistic)
    against the (K,) label, over the distinct executables when ``executables`` is given (each
    counted once), and its noise statistics (what the card's repeatability table reads)."""
    one = np.unique(executables, return_index=True)[1] if executables is not None else slice(None)
    return {"spearman_vs_label": round(spearman(combine(samples, statistic, executables)[one], label[one]), 4),
            **noise_stats(samples, statistic, executables)}


def label_arrays(kind: str, samples: np.ndarray, statistic: str = "median", executables: np.ndarray | None = None) -> dict:
    """npz label keys of a (K, P) sample matrix: the label (`combine` with `statistic`, one per
    executable when ``executables`` is given) and the samples (int64 ns)."""
    stored = np.round(samples).astype(np.int64)  # the label is recomputable exactly from the stored samples
    label = np.round(combine(stored, statistic, executables)).astype(np.int64)
    out = {"config_runtime": label, "config_runtime_samples": stored}
    if kind == "tile":  # TpuGraphs tile files normalise by the default configuration (configs[0])
        out["config_runtime_normalizers"] = np.full_like(label, label[0])
    return out


def save_arrays(arrays: dict, path: Path, kind: str) -> None:
    """Validate and write atomically with `graphcost.data.io.tpugraphs_io.save_graph`; the keys outside
    the TpuGraphs schema (samples, search modes) go along as its ``extra``."""
    import dataclasses

    from graphcost.data.graph import LayoutGraph, TileGraph
    from graphcost.data.io.tpugraphs_io import save_graph

    cls = LayoutGraph if kind == "layout" else TileGraph
    fields = {f.name for f in dataclasses.fields(cls)} - {"path", "kind"}
    graph = cls(path=None, **{k: v for k, v in arrays.items() if k in fields})
    save_graph(graph, path, compressed=True, validate=True,
               extra={k: np.asarray(v) for k, v in arrays.items() if k not in fields})


# --- the collection loop -------------------------------------------------------------------

def compiled_config_facts(gj: GraphJob, workers: int, kernels: list | None = None) -> dict[str, np.ndarray]:
    """What XLA did to each configuration of `gj`, compiled through the persistent cache in use
    (after the driver's compile these are cache hits): ``config_compiled_stats`` (K,
    len(COMPILED_STATS)) float64 (`graphcost.frontend.hlo.compiled_stats`) and
    ``config_executable_ids`` (K,) int64 (`executable_fingerprint.executable_ids` of the cache
    entries' fingerprints). `kernels`, when given, gets each configuration's kernels
    (`graphcost.frontend.programs.jax_program.optimized_kernels`) in configuration order."""
    from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS
    from graphcost.frontend.programs.executable_fingerprint import (cached_fingerprint, executable_ids,
                                                                    recording_cache_keys)
    from graphcost.frontend.programs.jax_program import executable_stats

    lowered = gj.lower()
    stats = np.zeros((len(lowered), len(COMPILED_STATS)), dtype=np.float64)
    fingerprints: list[str | None] = [None] * len(lowered)
    found: list[dict] = [{} for _ in lowered]

    def look(i: int, exe: Any) -> None:
        fingerprints[i] = cached_fingerprint()  # first: the key this thread's compile looked up
        stats[i] = executable_stats(exe)
        if kernels is not None:
            from graphcost.frontend.programs.jax_program import optimized_kernels

            found[i] = optimized_kernels(exe)

    with recording_cache_keys():
        compile_all(lowered, gj.compiler_options, workers, keep=False, on_compiled=look)
    if kernels is not None:
        kernels[:] = found
    return {COMPILED_KEY: stats, EXECUTABLE_KEY: executable_ids(fingerprints)}


def add_compiled_stats(gj: GraphJob, workers: int) -> str | None:
    """`compiled_config_facts` into `gj.arrays` (through the persistent cache in use); on failure a
    warning to show instead, and the graph is kept without them (`annotate_collection` adds them
    later): its measurements must not be lost for a statistic."""
    try:
        gj.arrays.update(compiled_config_facts(gj, workers))
    except Exception as exc:  # noqa: BLE001 - any compiler or decoding error: the measured graph is kept
        return (f"warning: {gj.spec.name}: no {COMPILED_KEY} ({type(exc).__name__}: {str(exc)[:200]}); "
                "`graphcost collect ... --action annotate` adds them later")
    return None


def write_kernel_record(gj: GraphJob, out_dir: Path, split: str, work: Path, samples: np.ndarray,
                        options: CollectOptions) -> None:
    """``OUT/kernels/<split>/<program>.npz`` (`graphcost/kernels/records.py`) from the measuring processes'
    profiled passes and each configuration's optimized module; the compiled statistics and
    executable ids go into `gj.arrays` on the way (one compile through the cache serves both)."""
    from graphcost.kernels.records import (KERNELS_DIR, combine_profiles, kernel_record,
                                                           read_process_profiles, save_kernel_record)

    kernels: list = []
    gj.arrays.update(compiled_config_facts(gj, options.compile_workers, kernels))
    profiles = read_process_profiles([work / f"proc{p}.npz" for p in range(options.cross.processes)])
    record = kernel_record(combine_profiles(profiles, samples, options.label), kernels)
    save_kernel_record(record, out_dir / KERNELS_DIR / split / f"{gj.spec.name}.npz")


def _driver_compile(gj: GraphJob, options: CollectOptions, bar) -> dict:
    """Compile into the persistent cache (the measuring processes then load); record the time."""
    t0 = time.perf_counter()
    compile_all(gj.lower(), gj.compiler_options, options.compile_workers, bar, gj.spec.name, keep=False)
    return {"compile_s": round(time.perf_counter() - t0, 2)}


def collect(specs: list[ProgramSpec], out_dir: str | Path, options: CollectOptions, progress: bool = True, *,
            names: Mapping[str, str] | None = None) -> dict:
    """Collect every program in `specs` into `out_dir` (resumable). Returns the manifest.

    `out_dir` and ``options.cache_dir`` are checked first (`graphcost.collect.guard`): a file, a device,
    a virtual or read-only file system, a training or tuning run or a directory of other files is refused
    naming the argument (`names` maps ``out_dir`` / ``cache_dir`` / ``configs`` to the names the messages use)."""
    out_dir = check_collection_out(out_dir, options.cache_dir, names=names)
    check_configs_fit(options.configs, names=names)
    with open_collection(out_dir, options.cache_dir, names=names):  # one collection at a time per directory
        manifest = load_manifest(out_dir, options)
        check_same_cpu(manifest, out_dir / MANIFEST)
        check_modules(pending(specs, out_dir, manifest))  # before anything is measured: one line, not a hang
        cache_dir = Path(options.cache_dir or out_dir / WORK / "jax-cache").resolve()
        options = replace(options, cache_dir=cache_dir)
        with persistent_cache(cache_dir):
            _collect(specs, out_dir, options, manifest, progress)
        _cleanup(out_dir, manifest, specs)
    return manifest


def _collect(specs: list[ProgramSpec], out_dir: Path, options: CollectOptions, manifest: dict, progress: bool) -> None:
    from tqdm.auto import tqdm

    from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS

    splits = stratified_split([(s.name, s.family) for s in specs], options.split_fractions, options.seed)
    manifest["environment"] = environment_metadata(options.protocol)
    manifest["environment"]["cross_process"] = options.cross.describe()
    manifest["compiled_stats"] = list(COMPILED_STATS)  # the columns of the files' config_compiled_stats
    todo = pending(specs, out_dir, manifest)
    bar = tqdm(total=len(specs), initial=len(specs) - len(todo), unit="graph", disable=not progress,
               desc=f"collect {options.space}")
    try:
        for spec in todo:
            t0 = time.perf_counter()
            bar.set_postfix_str(f"{spec.name}: prepare")
            timing = {"compile_s": 0.0}
            work = out_dir / WORK / spec.name
            try:
                gj = prepare_job(spec, options)
                samples, records = measure_processes(
                    gj.job, work, "proc", options.cross,
                    before_first=lambda: timing.update(_driver_compile(gj, options, bar)),
                    status=lambda msg: bar.set_postfix_str(f"{spec.name}: {msg}"))
            except Exception as exc:  # one program that cannot be built, compiled or measured: skipped, said, recorded
                _skip(out_dir, manifest, spec.name, work, exc, bar)
                continue
            bar.set_postfix_str(f"{spec.name}: reading the compiled modules")
            if options.kernels:  # the kernel record first: a finished graph always has one
                try:
                    write_kernel_record(gj, out_dir, splits[spec.name], work, samples, options)
                except Exception as exc:  # noqa: BLE001 - skipped like a program that cannot be measured
                    _skip(out_dir, manifest, spec.name, work, exc, bar, ", no kernel record")
                    continue
            else:
                problem = add_compiled_stats(gj, options.compile_workers)
                if problem:
                    bar.write(problem)
            finish_graph(out_dir, manifest, spec, splits[spec.name], gj.kind, gj.arrays, gj.info, samples,
                         {"processes": records, **timing, "total_s": round(time.perf_counter() - t0, 2)})
            _remove_work(work)
            bar.update(1)
    finally:
        bar.close()
    manifest["environment"]["loadavg_end"] = load_average()
    atomic_write_json(manifest, out_dir / MANIFEST, indent=1)


def _skip(out_dir: Path, manifest: dict, name: str, work: Path, exc: BaseException, bar, what: str = "") -> None:
    """A program that cannot be built, compiled, measured or recorded: its error's first line under the
    manifest's ``skipped`` (a resume tries it again), a warning, its work directory removed."""
    reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    manifest.setdefault("skipped", {})[name] = {"reason": reason[:500], "date_utc": _now()}
    atomic_write_json(manifest, out_dir / MANIFEST, indent=1)
    bar.write(f"warning: {name} skipped{what} ({reason[:300]})")
    _remove_work(work)
    bar.update(1)


def finish_graph(out_dir: Path, manifest: dict, spec: ProgramSpec, split: str, kind: str, arrays: dict, info: dict,
                 samples: np.ndarray, extra: dict) -> None:
    """Write one measured graph (npz, then its manifest entry; both atomic): the graph is finished."""
    rel = f"{split}/{spec.name}.npz"
    statistic = label_statistic(manifest)
    executables = arrays.get(EXECUTABLE_KEY)
    save_arrays({**arrays, **label_arrays(kind, samples, statistic, executables)}, out_dir / rel, kind)
    manifest["graphs"][spec.name] = {
        "file": rel, "split": split, "family": spec.family, "hparams": spec.hparams,
        "num_nodes": int(len(arrays["node_feat"])), "num_edges": int(len(arrays["edge_index"])),
        **info, **summarize(samples, statistic, executables), **extra, "date_utc": _now()}
    atomic_write_json(manifest, out_dir / MANIFEST, indent=1)


def pending(specs: list[ProgramSpec], out_dir: Path, manifest: dict) -> list[ProgramSpec]:
    """The programs of `specs` without a finished graph (file present and listed in the manifest)."""
    graphs = manifest["graphs"]
    return [s for s in specs if not (s.name in graphs and graph_file(out_dir, s.name, graphs[s.name]).exists())]


def repeat_collection(out_dir: str | Path, options: CollectOptions, progress: bool = True,
                      share: float = 1.0, *, names: Mapping[str, str] | None = None) -> dict:
    """Measure the finished graphs of the collection in `out_dir` again, in P new processes.

    ``share`` < 1 repeats only that share of the finished graphs of each measuring session (at
    least one each), chosen by `repeat_choice` spread over families; graphs repeated earlier count
    towards it.

    The configurations are rebuilt from the manifest's parameters and checked against the file's
    configuration features; the repeat's (K, P) samples go into the file as
    ``config_runtime_repeat_samples`` and the manifest entry gets ``repeat`` (Spearman of the two
    labels, noise, loads, date). Resumable like `collect`.

    `out_dir` and ``options.cache_dir`` are checked first (`graphcost.collect.guard`): a file, a device,
    a virtual or read-only file system, a training or tuning run or a directory of other files is refused
    naming the argument (`names` maps ``out_dir`` / ``cache_dir`` / ``configs`` to the names the messages use).
    """
    out_dir = check_collection_out(out_dir, options.cache_dir, names=names)
    if not (out_dir / MANIFEST).is_file():
        raise ValueError(f"{out_dir / MANIFEST}: no collection here to repeat (collect it first)")
    with open_collection(out_dir, options.cache_dir, names=names):
        manifest = load_manifest(out_dir, options)
        check_same_cpu(manifest, out_dir / MANIFEST)
        cache_dir = Path(options.cache_dir or out_dir / WORK / "jax-cache").resolve()
        options = replace(options, cache_dir=cache_dir)
        with persistent_cache(cache_dir):
            _repeat(out_dir, options, manifest, progress, share)
        _cleanup(out_dir, manifest, None)
    return manifest


SESSION_GAP_S = 15 * 60  # a graph takes minutes: a longer pause means the collection was stopped and restarted


def measuring_sessions(graphs: dict) -> list[list[str]]:
    """The finished graphs grouped by the stretch of measurement that produced them, oldest first.

    Graphs are ordered by their ``date_utc``; a new session starts after a pause longer than
    `SESSION_GAP_S`, i.e. where a chunked collection was stopped and run again, perhaps under
    other load or on another machine. Graphs without a readable date form one session of their own.
    """
    dated, undated = [], []
    for name in sorted(graphs):
        when = _utc_seconds(graphs[name].get("date_utc"))
        (undated.append(name) if when is None else dated.append((when, name)))
    sessions: list[list[str]] = [undated] if undated else []
    last = None
    for when, name in sorted(dated):
        if last is None or when - last > SESSION_GAP_S:
            sessions.append([])
        sessions[-1].append(name)
        last = when
    return sessions


def _utc_seconds(text: object) -> float | None:
    """Seconds since the epoch of a manifest's ``%Y-%m-%dT%H:%M:%SZ`` date, None when it is not one."""
    from datetime import datetime, timezone

    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def repeat_choice(graphs: dict, share: float, seed: int) -> list[str]:
    """The graphs a repeat of `share` of the collection still has to measure, in order.

    Every measuring session (`measuring_sessions`) is checked on its own: of its n graphs,
    ceil(share * n) (at least one) are repeated, graphs already repeated counting towards it, so
    a chunk measured under other conditions cannot hide behind the others' agreement. Within a
    session the graphs are taken round-robin over families (each family's graphs in a seeded
    order), families not repeated anywhere yet first, so a 10% repeat covers as many families as
    it can.
    """
    rng = np.random.default_rng(seed)
    seen = {str(e.get("family")) for e in graphs.values() if "repeat" in e}
    chosen: list[str] = []
    for session in measuring_sessions(graphs):
        target = max(1, math.ceil(share * len(session) - 1e-9))
        done = sum("repeat" in graphs[n] for n in session)
        queues: dict[str, list[str]] = {}
        for name in session:
            if "repeat" not in graphs[name]:
                queues.setdefault(str(graphs[name].get("family", name)), []).append(name)
        order = sorted(queues, key=lambda f: (f in seen, f))  # families already repeated come last
        picked = round_robin([[queues[f][i] for i in rng.permutation(len(queues[f]))] for f in order],
                             target - done)
        seen |= {str(graphs[n].get("family", n)) for n in picked}
        chosen += picked
    return chosen


def _repeat(out_dir: Path, options: CollectOptions, manifest: dict, progress: bool, share: float = 1.0) -> None:
    from tqdm.auto import tqdm

    names = sorted(manifest["graphs"])
    todo = ([n for n in names if "repeat" not in manifest["graphs"][n]] if share >= 1.0
            else repeat_choice(manifest["graphs"], share, options.seed))
    done = sum("repeat" in manifest["graphs"][n] for n in names)
    manifest.setdefault("repeat_environment", environment_metadata(options.protocol))  # the first repeat session's
    sessions = manifest.setdefault("repeat_sessions", [])  # every repeat session's machine, in order
    if todo:
        sessions.append({"date_utc": _now(), "cpu_model": cpu_model(), "loadavg_start": load_average()})
    bar = tqdm(total=done + len(todo), initial=done, unit="graph", disable=not progress,
               desc=f"repeat {options.space}")
    try:
        for name in todo:
            entry = manifest["graphs"][name]
            t0 = time.perf_counter()
            bar.set_postfix_str(f"{name}: prepare")
            path, stored, gj = _rebuild(out_dir, name, entry, options)
            executables = stored_executables(path, stored)  # checked before anything is measured
            work = out_dir / WORK / name
            samples, records, timing = _measure_finished(gj, work, "repeat", options, bar, name)
            stored["config_runtime_repeat_samples"] = np.round(samples).astype(np.int64)
            save_arrays(stored, path, gj.kind)
            entry["repeat"] = {**repeat_summary(samples, stored["config_runtime"], label_statistic(manifest),
                                                executables),
                               "processes": records, **timing,
                               "total_s": round(time.perf_counter() - t0, 2), "date_utc": _now()}
            atomic_write_json(manifest, out_dir / MANIFEST, indent=1)
            _remove_work(work)
            bar.update(1)
    finally:
        bar.close()


def _measure_finished(gj: GraphJob, work: Path, prefix: str, options: CollectOptions, bar, name: str,
                      first: int = 0) -> tuple[np.ndarray, list[dict], dict]:
    """Measure processes ``first .. P-1`` of a finished graph's rebuilt job (a repeat, or processes
    added): (K, P - first) samples, their records and the driver's compile time. A cache left by
    the collection serves the processes directly (a miss compiles there); an empty one is filled by
    the driver first."""
    timing = {"compile_s": 0.0}
    cache_dir = options.cache_dir
    warm = cache_dir is not None and cache_dir.is_dir() and any(cache_dir.iterdir())
    samples, records = measure_processes(
        gj.job, work, prefix, options.cross,
        before_first=None if warm else lambda: timing.update(_driver_compile(gj, options, bar)),
        status=lambda msg: bar.set_postfix_str(f"{name}: {msg}"), first=first)
    return samples, records, timing


def add_processes_collection(out_dir: str | Path, options: CollectOptions, progress: bool = True, *,
                             names: Mapping[str, str] | None = None) -> dict:
    """Raise the collection in `out_dir` to ``options.cross.processes`` measuring processes per graph.

    For every finished graph with P0 < P processes, processes P0 .. P-1 are measured (as a P-process
    collection would have measured them: same seeds) and appended to ``config_runtime_samples``; a
    graph's repeat (``config_runtime_repeat_samples``) with fewer than P processes gets its missing
    processes the same way, in processes of its own, so it stays an independent second collection.
    The labels, the manifest's noise statistics and the repeat's agreement are then recomputed over
    all processes (`_label_graph`). The collection's other parameters must be those of `options`.
    Each graph's file and the manifest are rewritten atomically when it is done, so an interrupted
    run is finished by running it again; the manifest's ``collection.processes`` becomes P once
    every graph has P. Returns the manifest.

    `out_dir` and ``options.cache_dir`` are checked first (`graphcost.collect.guard`): a file, a device,
    a virtual or read-only file system, a training or tuning run or a directory of other files is refused
    naming the argument (`names` maps ``out_dir`` / ``cache_dir`` / ``configs`` to the names the messages use).
    """
    from tqdm.auto import tqdm

    out_dir = check_collection_out(out_dir, options.cache_dir, names=names)
    path = out_dir / MANIFEST
    if not path.is_file():
        raise ValueError(f"{path}: no collection here to add processes to (collect it first)")
    check_configs_fit(options.configs, names=names)
    want = options.cross.processes
    with open_collection(out_dir, options.cache_dir, names=names):
        manifest = _read_manifest(path)
        old = manifest.get("collection")
        have = old.get("processes") if isinstance(old, dict) else None
        if not isinstance(have, int) or isinstance(have, bool) or have < 1:
            raise ValueError(f"{path}: key 'collection.processes' must be a positive integer, got {have!r}")
        if have > want:
            raise ValueError(f"{path}: key 'collection.processes' is {have}; --processes {want} would remove "
                             f"measured processes (pass --processes {have} or more)")
        manifest = load_manifest(out_dir, replace(options, cross=replace(options.cross, processes=have)), manifest)
        check_same_cpu(manifest, path)
        statistic = label_statistic(manifest, path)
        cache = Path(options.cache_dir or out_dir / WORK / "jax-cache").resolve()
        options = replace(options, cache_dir=cache)
        todo = []
        for name in sorted(manifest["graphs"]):
            file = graph_file(out_dir, name, manifest["graphs"][name])
            stored = read_graph(file)
            if any(_process_count(file, stored, key) < want for key in SAMPLE_KEYS if key in stored):
                todo.append(name)
        bar = tqdm(total=len(manifest["graphs"]), initial=len(manifest["graphs"]) - len(todo), unit="graph",
                   disable=not progress, desc=f"add processes ({have} -> {want})")
        try:
            with persistent_cache(cache):
                for name in todo:
                    _add_processes(out_dir, name, manifest, options, statistic, bar)
                    bar.update(1)
        finally:
            bar.close()
        manifest["collection"] = {**manifest["collection"], "processes": want}
        if isinstance(manifest.get("environment"), dict):
            manifest["environment"]["cross_process"] = options.cross.describe()
        atomic_write_json(manifest, path, indent=1)
        _cleanup(out_dir, manifest, None)
    return manifest


def _process_count(file: Path, stored: dict, key: str) -> int:
    """P of a graph's (K, P) samples under `key`; ValueError naming the file and key for another shape."""
    shape = np.shape(stored[key])
    if len(shape) != 2 or shape[0] != len(stored["config_runtime"]):
        raise ValueError(f"{file}: key '{key}' has shape {shape}, expected (K, P) with K = "
                         f"{len(stored['config_runtime'])}")
    return int(shape[1])


def _add_processes(out_dir: Path, name: str, manifest: dict, options: CollectOptions, statistic: str, bar) -> None:
    """`add_processes_collection` for one graph: measure its missing processes (label, then repeat),
    append them, recompute its label and statistics, write the file and the manifest."""
    entry = manifest["graphs"][name]
    bar.set_postfix_str(f"{name}: prepare")
    path, stored, gj = _rebuild(out_dir, name, entry, options)
    stored_executables(path, stored)  # checked before anything is measured
    want = options.cross.processes
    for key, prefix, records_of in zip(SAMPLE_KEYS, ("more", "repeat-more"), (entry, entry.get("repeat"))):
        if key not in stored:
            continue
        have = _process_count(path, stored, key)
        if have >= want:
            continue
        samples, records, _ = _measure_finished(gj, out_dir / WORK / name, prefix, options, bar, name, first=have)
        stored[key] = np.concatenate([stored[key], np.round(samples).astype(np.int64)], axis=1)
        if isinstance(records_of, dict):
            added = _now()
            records_of.setdefault("processes", []).extend({**r, "added_utc": added} for r in records)
    _label_graph(path, stored, entry, statistic)
    save_arrays(stored, path, gj.kind)
    atomic_write_json(manifest, out_dir / MANIFEST, indent=1)
    _remove_work(out_dir / WORK / name)


def annotate_collection(out_dir: str | Path, options: CollectOptions, progress: bool = True, *,
                        names: Mapping[str, str] | None = None) -> dict:
    """Add ``config_compiled_stats`` and ``config_executable_ids`` (what the compiler did to each
    configuration, module docstring) to every finished graph of the collection in `out_dir` that
    lacks either, and pool its labels per executable (`_label_graph`). The configurations are
    rebuilt from the manifest's parameters and checked against the file's, as for a repeat; the
    compiler's output depends on the CPU it targets, so the collection must be of this machine's CPU
    model (`check_same_cpu`). Each file and the manifest are rewritten atomically after each graph,
    so an interrupted run is finished by running it again. Nothing is measured: it may run beside
    other work. Returns the manifest.

    `out_dir` and ``options.cache_dir`` are checked first (`graphcost.collect.guard`): a file, a device,
    a virtual or read-only file system, a training or tuning run or a directory of other files is refused
    naming the argument (`names` maps ``out_dir`` / ``cache_dir`` / ``configs`` to the names the messages use)."""
    from tqdm.auto import tqdm

    from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS

    out_dir = check_collection_out(out_dir, options.cache_dir, names=names)
    if not (out_dir / MANIFEST).is_file():
        raise ValueError(f"{out_dir / MANIFEST}: no collection here to annotate (collect it first)")
    check_configs_fit(options.configs, names=names)
    with open_collection(out_dir, options.cache_dir, names=names):
        manifest = load_manifest(out_dir, options)
        check_same_cpu(manifest, out_dir / MANIFEST)
        statistic = label_statistic(manifest)
        cache = Path(options.cache_dir or out_dir / WORK / "jax-cache").resolve()
        options = replace(options, cache_dir=cache)
        todo = [name for name in sorted(manifest["graphs"])  # read_graph: a damaged file is named in one line
                if not {COMPILED_KEY, EXECUTABLE_KEY} <= set(read_graph(graph_file(out_dir, name,
                                                                                  manifest["graphs"][name])))]
        manifest["compiled_stats"] = list(COMPILED_STATS)
        bar = tqdm(total=len(manifest["graphs"]), initial=len(manifest["graphs"]) - len(todo), unit="graph",
                   disable=not progress, desc=f"annotate {options.space}")
        try:
            with persistent_cache(cache):
                for name in todo:
                    entry = manifest["graphs"][name]
                    bar.set_postfix_str(f"{name}: prepare")
                    path, stored, gj = _rebuild(out_dir, name, entry, options)
                    bar.set_postfix_str(f"{name}: compile")
                    stored.update(compiled_config_facts(gj, options.compile_workers))
                    _label_graph(path, stored, entry, statistic)
                    save_arrays(stored, path, gj.kind)
                    atomic_write_json(manifest, out_dir / MANIFEST, indent=1)
                    bar.update(1)
        finally:
            bar.close()
        atomic_write_json(manifest, out_dir / MANIFEST, indent=1)
    return manifest


def _rebuild(out_dir: Path, name: str, entry: dict, options: CollectOptions) -> tuple[Path, dict, GraphJob]:
    """(file, its arrays, the job rebuilt from the manifest) of one finished graph, for a repeat or an
    annotation; ValueError naming the manifest key of an unknown program, or the file whose
    configurations differ from the rebuilt ones."""
    path = graph_file(out_dir, name, entry)
    try:
        spec = resolve_program(name, (entry.get("hparams") or {}).get("module"))
    except ValueError as exc:
        raise ValueError(f"{out_dir / MANIFEST}: key 'graphs.{name}': {exc}") from None
    stored = read_graph(path)
    gj = prepare_job(spec, options)
    _check_same_configs(path, stored, gj)
    return path, stored, gj


def _check_same_configs(path: Path, stored: dict, gj: GraphJob) -> None:
    """ValueError naming the file when the configurations rebuilt from the manifest are not the file's."""
    feat_key = "node_config_feat" if gj.kind == "layout" else "config_feat"
    if feat_key not in stored or not np.array_equal(stored[feat_key], gj.arrays[feat_key]):
        raise ValueError(f"{path}: key '{feat_key}' differs from the configurations rebuilt from the manifest "
                         "(another graphcost version?); a repeat or an annotation must use the same configurations")


def relabel_collection(out_dir: str | Path, options: CollectOptions, *, names: Mapping[str, str] | None = None) -> dict:
    """Recompute every finished graph's label (and its tile normalizers, manifest statistics and
    repeat agreement) from its stored per-process samples with ``options.label`` (`_label_graph`);
    record the statistic in the manifest. Each file is rewritten atomically; an interrupted relabel
    is finished by running it again (every label is recomputed from the samples, so it is
    idempotent). Returns the manifest.

    `out_dir` and ``options.cache_dir`` are checked first (`graphcost.collect.guard`): a file, a device,
    a virtual or read-only file system, a training or tuning run or a directory of other files is refused
    naming the argument (`names` maps ``out_dir`` / ``cache_dir`` / ``configs`` to the names the messages use)."""
    out_dir = check_collection_out(out_dir, options.cache_dir, names=names)
    if not (out_dir / MANIFEST).is_file():
        raise ValueError(f"{out_dir / MANIFEST}: no collection here to relabel")
    with open_collection(out_dir, options.cache_dir, names=names):
        path = out_dir / MANIFEST
        manifest = _read_manifest(path)
        manifest = load_manifest(out_dir, replace(options, label=label_statistic(manifest, path)), manifest)
        for name, entry in sorted(manifest["graphs"].items()):
            file = graph_file(out_dir, name, entry)
            stored = read_graph(file)
            kind = _label_graph(file, stored, entry, options.label)
            save_arrays(stored, file, kind)
        manifest["collection"] = options.key()
        atomic_write_json(manifest, path, indent=1)
    return manifest


def _label_graph(file: Path, stored: dict, entry: dict, statistic: str) -> str:
    """Recompute one graph's label keys in `stored` and its statistics in its manifest `entry` (and
    its repeat's agreement) from the stored samples with `statistic`, one label per executable when
    the file has ``config_executable_ids``. Returns the graph's kind; ValueError naming `file` and
    the key when the samples are missing or the executable ids are not valid."""
    if "config_runtime_samples" not in stored:
        raise ValueError(f"{file}: key 'config_runtime_samples' is missing; its label cannot be recomputed")
    kind = "layout" if "node_config_feat" in stored else "tile"
    samples = stored["config_runtime_samples"]
    executables = stored_executables(file, stored)
    stored.update(label_arrays(kind, samples, statistic, executables))
    entry.update(summarize(samples, statistic, executables))
    if "config_runtime_repeat_samples" in stored and isinstance(entry.get("repeat"), dict):
        entry["repeat"].update(repeat_summary(stored["config_runtime_repeat_samples"], stored["config_runtime"],
                                              statistic, executables))
    return kind


def stored_executables(file: Path, stored: dict) -> np.ndarray | None:
    """The checked ``config_executable_ids`` of a collected graph's arrays (`stored`, read from
    `file`), None when it has none; ValueError naming the file and the key when they are not valid."""
    from graphcost.measure.cross_process import check_executable_ids

    if EXECUTABLE_KEY not in stored:
        return None
    return check_executable_ids(stored[EXECUTABLE_KEY], len(stored["config_runtime"]), f"{file}: key '{EXECUTABLE_KEY}'")


def _read_manifest(path: Path) -> dict:
    """The JSON object of a manifest; ValueError naming the file when it is unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad JSON or text; RecursionError: too deep
        raise ValueError(f"{path}: unreadable manifest ({exc}); move it away to start a new collection") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a manifest must be a JSON object, got {type(data).__name__}")
    return data


def read_graph(path: Path) -> dict:
    """Every array of a collected npz (no pickles); ValueError naming the file when it is missing or damaged."""
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as z:
            stored = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: cannot read the collected graph ({type(exc).__name__}: {exc})") from None
    if "config_runtime" not in stored:
        raise ValueError(f"{path}: key 'config_runtime' is missing (not a collected graph)")
    return stored


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _remove_work(work: Path) -> None:
    import shutil

    shutil.rmtree(work, ignore_errors=True)


def _cleanup(out_dir: Path, manifest: dict, specs) -> None:
    """Remove OUT/.work (compile cache, per-process results) once every graph is finished."""
    wanted = set(manifest["graphs"]) if specs is None else {s.name for s in specs}
    if wanted <= set(manifest["graphs"]) and not any(
            p.is_dir() and p.name != "jax-cache" for p in (out_dir / WORK).glob("*")):
        _remove_work(out_dir / WORK)
