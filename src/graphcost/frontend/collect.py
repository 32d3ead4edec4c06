"""Local data collection: zoo programs x real configurations -> measured TpuGraphs-schema npz files.

Two configuration spaces:

* ``layout`` (`graphcost.frontend.layouts`): per-node layouts of dot / convolution / reshape
  nodes, search mode ``random`` or ``default``. Output: one LAYOUT-schema npz per program
  (node_config_ids, node_config_feat (K, C, 18), config_runtime in ns).
* ``flags`` (`graphcost.frontend.flags`): whole-program XLA CPU compiler options. Output: one
  TILE-schema npz per program (config_feat (K, 24) = flag vector, config_runtime in ns,
  config_runtime_normalizers = runtime of the default flags). See `flags.FLAG_COLUMNS`.

The graph of every file is the UNOPTIMIZED HLO module of the program (what the compiler and
its configuration act on), featurized by `graphcost.frontend.featurizer`.

Output directory: ``OUT/{train,valid,test}/<program>.npz`` plus ``OUT/manifest.json`` (collection
parameters, environment metadata, one entry per finished graph). Programs are split by graph,
stratified by family, deterministically from the seed. Every file is written atomically; a
finished graph (file present AND listed in the manifest) is skipped on a re-run, so an
interrupted collection resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphcost.atomic import atomic_write_json
from graphcost.frontend.measure import Protocol, environment_metadata, measure_executables, spearman
from graphcost.frontend.zoo import ProgramSpec, list_programs

SPLITS = ("train", "valid", "test")
MANIFEST = "manifest.json"


@dataclass
class CollectOptions:
    """Parameters of one collection (recorded in the manifest; a resume must use the same)."""

    space: str = "layout"  # layout | flags
    mode: str = "random"  # layout search mode: random | default
    configs: int = 8
    seed: int = 0
    protocol: Protocol = field(default_factory=Protocol)
    split_fractions: tuple[float, float, float] = (0.7, 0.15, 0.15)
    compile_workers: int = 2  # not part of the collection key: it does not change what is measured

    def key(self) -> dict[str, Any]:
        return {"space": self.space, "mode": self.mode if self.space == "layout" else None, "configs": self.configs,
                "seed": self.seed, "rounds": self.protocol.rounds, "calls": self.protocol.calls,
                "warmup": self.protocol.warmup, "xla_flags": os.environ.get("XLA_FLAGS", "")}


# --- program selection and splits ------------------------------------------------------------

def select_programs(selectors: str, limit: int = 0, seed: int = 0) -> list[ProgramSpec]:
    """Programs matching `selectors`; with `limit` > 0 a seeded sample spread over families."""
    specs = list_programs(selectors)
    if limit <= 0 or len(specs) <= limit:
        return specs
    rng = np.random.default_rng(seed)
    by_family: dict[str, list[ProgramSpec]] = {}
    for s in specs:
        by_family.setdefault(s.family, []).append(s)
    # sample from the cheaper half of each family (size proxy: product of integer hparams, x3 for training)
    queues = []
    for group in by_family.values():
        group = sorted(group, key=program_cost)[: max(1, (len(group) + 1) // 2)]
        queues.append([group[i] for i in rng.permutation(len(group))])
    chosen: list[ProgramSpec] = []
    while len(chosen) < limit:  # round-robin over families
        for q in queues:
            if q and len(chosen) < limit:
                chosen.append(q.pop(0))
    names = {s.name for s in chosen}
    return [s for s in specs if s.name in names]


def program_cost(spec: ProgramSpec) -> float:
    """A rough size proxy of a program: product of its integer hyper-parameters, x3 for a training step."""
    ints = [v for v in spec.hparams.values() if isinstance(v, int) and not isinstance(v, bool)]
    return float(np.prod(ints)) * (3.0 if spec.hparams.get("mode") == "train" else 1.0)


def assign_splits(specs: list[ProgramSpec], fractions=(0.7, 0.15, 0.15), seed: int = 0) -> dict[str, str]:
    """Program name -> split, by graph, stratified by family, deterministic in `seed`.

    Within a family of n programs (seeded order), the last round(n * test) go to test, the
    round(n * valid) before them to valid (each at least 1 when n >= 3), the rest to train.
    """
    rng = np.random.default_rng(seed + 7919)
    by_family: dict[str, list[str]] = {}
    for s in specs:
        by_family.setdefault(s.family, []).append(s.name)
    out = {}
    for fam in sorted(by_family):
        names = sorted(by_family[fam])
        names = [names[i] for i in rng.permutation(len(names))]
        n = len(names)
        n_test = max(1, round(n * fractions[2])) if n >= 3 else 0
        n_valid = max(1, round(n * fractions[1])) if n >= 3 else 0
        for i, name in enumerate(names):
            out[name] = "test" if i >= n - n_test else "valid" if i >= n - n_test - n_valid else "train"
    return out


# --- manifest ------------------------------------------------------------------------------

def load_manifest(out_dir: Path, options: CollectOptions) -> dict[str, Any]:
    """The existing manifest (checked against `options`) or a fresh one."""
    path = out_dir / MANIFEST
    if path.exists():
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: unreadable manifest ({exc}); move it away to start a new collection") from exc
        old = manifest.get("collection", {})
        if old != options.key():
            raise ValueError(f"{path}: key 'collection' is {old}, but this run asks for {options.key()}; "
                             "use another --out directory or the same parameters to resume")
        manifest.setdefault("graphs", {})
        return manifest
    return {"schema": "tpugraphs-layout" if options.space == "layout" else "tpugraphs-tile",
            "label": "REAL: runtimes measured on this machine", "collection": options.key(), "graphs": {}}


# --- one graph -----------------------------------------------------------------------------

def collect_layout_graph(spec: ProgramSpec, options: CollectOptions, bar=None) -> tuple[dict, dict]:
    """Build, featurize, configure, compile and measure one program in the layout space.

    Returns ``(arrays, info)``: npz arrays in the layout schema and a manifest entry.
    """
    from graphcost.frontend.layouts import LayoutProgram, config_features, locate_sites, sample_configs

    t0 = time.perf_counter()
    fn, args = spec.build()
    lp = LayoutProgram(fn, args)
    fm, active, node_ids = locate_sites(lp)
    if not active:
        raise ValueError(f"{spec.name}: no configurable dot/convolution/reshape node found")
    configs = sample_configs(active, options.configs, options.mode, seed=options.seed)
    lowered = [lp.lowered(lp.full_config(active, cfg)) for cfg in configs]
    executables = compile_all(lowered, [None] * len(lowered), options.compile_workers, bar, spec.name)
    t_compile = time.perf_counter() - t0
    if bar is not None:
        bar.set_postfix_str(f"{spec.name}: measure {len(configs)} configs x {options.protocol.rounds} rounds")
    m = measure_executables(executables, lp.flat_args, options.protocol)
    arrays = {
        "node_feat": fm.node_feat.astype(np.float32),
        "node_opcode": fm.node_opcode,
        "edge_index": fm.edge_index.astype(np.int64),
        "node_config_ids": node_ids,
        "node_config_feat": config_features(configs),
        "config_runtime": np.round(m.runtime_ns).astype(np.int64),
        "node_splits": fm.node_splits.astype(np.int64),
    }
    info = _info(spec, arrays["node_feat"].shape[0], len(fm.edge_index), m, t_compile, time.perf_counter() - t0)
    info.update(num_configurable=int(len(node_ids)), num_jax_sites=len(lp.sites))
    return arrays, info


def compile_all(lowered: list, compiler_options: list, workers: int, bar=None, name: str = "") -> list:
    """Compile every `Lowered` (protocol step 1) with `workers` threads (XLA compiles release the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    from graphcost.frontend.jax_program import compile_lowered

    done = [0]

    def one(i):
        exe = compile_lowered(lowered[i], compiler_options[i])
        done[0] += 1
        if bar is not None:
            bar.set_postfix_str(f"{name}: compiled {done[0]}/{len(lowered)}")
        return exe

    if workers <= 1:
        return [one(i) for i in range(len(lowered))]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, range(len(lowered))))


def _info(spec: ProgramSpec, n_nodes: int, n_edges: int, m, t_compile: float, t_total: float) -> dict:
    rt = m.runtime_ns
    a, b = m.split_halves() if m.per_round_ns.shape[0] >= 2 else (rt, rt)
    return {"family": spec.family, "hparams": spec.hparams, "num_nodes": int(n_nodes), "num_edges": int(n_edges),
            "num_configs": int(len(rt)), "runtime_ns_min": float(rt.min()), "runtime_ns_max": float(rt.max()),
            "spread": float(rt.max() / rt.min()), "spearman_even_odd_rounds": spearman(a, b),
            "compile_s": round(t_compile, 2), "total_s": round(t_total, 2)}


def collect_flags_graph(spec: ProgramSpec, options: CollectOptions, bar=None) -> tuple[dict, dict]:
    """One program in the compiler-flag space: tile-schema arrays and a manifest entry."""
    from graphcost.frontend.flags import flag_configs, flag_features
    from graphcost.frontend.jax_program import (
        featurize_hlo_bytes,
        lower,
        unoptimized_hlo_bytes,
    )

    import jax

    if jax.default_backend() != "cpu":  # the flag space (graphcost.frontend.flags) is XLA:CPU's
        raise ValueError(f"--space flags measures XLA CPU compiler options, but JAX's default backend here is "
                         f"'{jax.default_backend()}'; run with JAX_PLATFORMS=cpu")  # fmt: skip
    t0 = time.perf_counter()
    fn, args = spec.build()
    lowered = lower(fn, args)
    fm = featurize_hlo_bytes(unoptimized_hlo_bytes(lowered))
    configs = flag_configs(options.configs, seed=options.seed)  # configs[0] is the default
    executables = compile_all([lowered] * len(configs), [c.compiler_options() for c in configs],
                              options.compile_workers, bar, spec.name)
    t_compile = time.perf_counter() - t0
    if bar is not None:
        bar.set_postfix_str(f"{spec.name}: measure")
    m = measure_executables(executables, args, options.protocol)
    runtime = np.round(m.runtime_ns).astype(np.int64)
    arrays = {
        "node_feat": fm.node_feat.astype(np.float32),
        "node_opcode": fm.node_opcode,
        "edge_index": fm.edge_index.astype(np.int64),
        "config_feat": flag_features(configs),
        "config_runtime": runtime,
        "config_runtime_normalizers": np.full_like(runtime, runtime[0]),  # default flags' runtime
    }
    return arrays, _info(spec, len(fm.node_feat), len(fm.edge_index), m, t_compile, time.perf_counter() - t0)


def save_arrays(arrays: dict, path: Path, kind: str) -> None:
    """Validate with `graphcost.data.io.validate` and write atomically with `graphcost.data.io.tpugraphs_io`."""
    from graphcost.data.graph import LayoutGraph, TileGraph
    from graphcost.data.io.tpugraphs_io import save_graph

    graph = LayoutGraph(path=None, **arrays) if kind == "layout" else TileGraph(path=None, **arrays)
    save_graph(graph, path, compressed=True, validate=True)


# --- the collection loop -------------------------------------------------------------------

def collect(specs: list[ProgramSpec], out_dir: str | Path, options: CollectOptions, progress: bool = True) -> dict:
    """Collect every program in `specs` into `out_dir` (resumable). Returns the manifest."""
    from tqdm.auto import tqdm

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest(out_dir, options)
    splits = assign_splits(specs, options.split_fractions, options.seed)
    manifest["environment"] = environment_metadata(options.protocol)
    todo = [s for s in specs if not (s.name in manifest["graphs"] and (out_dir / manifest["graphs"][s.name]["file"]).exists())]
    kind = "layout" if options.space == "layout" else "tile"
    worker = collect_layout_graph if options.space == "layout" else collect_flags_graph
    bar = tqdm(total=len(specs), initial=len(specs) - len(todo), unit="graph", disable=not progress,
               desc=f"collect {options.space}")
    try:
        for spec in todo:
            arrays, info = worker(spec, options, bar)
            rel = f"{splits[spec.name]}/{spec.name}.npz"
            save_arrays(arrays, out_dir / rel, kind)
            manifest["graphs"][spec.name] = {"file": rel, "split": splits[spec.name], **info}
            atomic_write_json(manifest, out_dir / MANIFEST, indent=1)
            bar.update(1)
    finally:
        bar.close()
    manifest["environment"]["loadavg_end"] = environment_metadata()["host"]["loadavg"]
    atomic_write_json(manifest, out_dir / MANIFEST, indent=1)
    return manifest
