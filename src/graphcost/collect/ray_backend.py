"""Distributed `graphcost collect` on a Ray cluster (optional extra ``graphcost[ray]``).

The same collection as `graphcost.collect.local.collect` (same configurations, protocol,
files and manifest), with the work spread over the machines of a Ray cluster:

* a **compile task** per graph (``num_cpus = compile_workers``, any node) builds and featurizes
  the program, samples its configurations, and compiles them all in a fresh process into an
  empty JAX persistent-cache directory, then reads what the compiler did from it
  (``config_compiled_stats``); it returns the graph arrays and the cache entries (files);
* a **measure task** per graph holds one unit of the custom resource ``graphcost_measure``, which
  every node offers exactly once, so two measurements never share a machine; it writes the cache
  entries into a node-local directory and runs the P measuring processes of the cross-process
  protocol there (each loads the executables instead of compiling them), pinned to one core;
* the **driver** streams finished measurements back as they complete (``ray.wait``) and writes each
  graph's npz and manifest entry atomically, so a finished graph is never lost. Ray retries a task
  whose worker or node died (``max_retries``) on another node; a driver that dies loses only the
  graphs in flight, and a re-run skips the finished ones.

Start the cluster with the measure resource on every node that measures, e.g.::

    ray start --head --resources '{"graphcost_measure": 1}'            # on the head node
    ray start --address HEAD:6379 --resources '{"graphcost_measure": 1}' # on each worker node
    graphcost collect --backend ray --ray-address auto ...              # on the head node

Every node needs graphcost with its jax extra installed (the same versions: a label measured with
other versions is another label). A graph's P processes run on one node, recorded in its
manifest entry (``node``), so a label never mixes machines.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from graphcost.collect.jobs import CollectOptions, check_modules, prepare_job
from graphcost.collect.local import MANIFEST, add_compiled_stats, finish_graph, load_manifest, pending
from graphcost.data.splits import stratified_split
from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS
from graphcost.frontend.programs.compile import persistent_cache
from graphcost.frontend.programs.zoo import ProgramSpec, resolve_program
from graphcost.measure.cross_process import measure_processes, run_child
from graphcost.measure.interleaved import environment_metadata, load_average

MEASURE_RESOURCE = "graphcost_measure"
MAX_RETRIES = 3


def _run(ray, specs, todo, splits, out_dir: Path, manifest: dict, options: CollectOptions, progress: bool) -> None:
    """Submit a compile task per pending graph, a measure task per compiled one; write results as they come."""
    from tqdm.auto import tqdm

    if not any(n.get("Resources", {}).get(MEASURE_RESOURCE) for n in ray.nodes() if n.get("Alive")):
        raise ValueError(f"--backend ray: no live node of the cluster offers the resource '{MEASURE_RESOURCE}'; "
                         f"start each measuring node with --resources '{{\"{MEASURE_RESOURCE}\": 1}}'")
    manifest["environment"] = environment_metadata(options.protocol)
    manifest["environment"]["cross_process"] = {**options.cross.describe(), "backend": "ray"}
    manifest["compiled_stats"] = list(COMPILED_STATS)  # the columns of the files' config_compiled_stats
    options = replace(options, cache_dir=None)
    compile_task = ray.remote(num_cpus=options.compile_workers, max_retries=MAX_RETRIES)(compile_graph)
    measure_task = ray.remote(num_cpus=1, resources={MEASURE_RESOURCE: 1}, max_retries=MAX_RETRIES)(measure_graph)
    bar = tqdm(total=len(specs), initial=len(specs) - len(todo), unit="graph", disable=not progress,
               desc=f"collect {options.space} (ray)")
    try:
        compiling = {compile_task.remote(s.name, options, s.hparams.get("module")): s for s in todo}
        measuring: dict[Any, Any] = {}
        compiled: dict[Any, Any] = {}
        while compiling or measuring:
            ready, _ = ray.wait(list(compiling) + list(measuring), num_returns=1)
            ref = ready[0]
            if ref in compiling:
                spec = compiling.pop(ref)
                result = ray.get(ref)
                compiled[spec.name] = result
                measuring[measure_task.remote(result["job"], result.pop("cache"), options)] = spec
                bar.set_postfix_str(f"{spec.name}: compiled on {result['compile_node']}")
                continue
            spec = measuring.pop(ref)
            got, c = ray.get(ref), compiled.pop(spec.name)
            if c.get("warning"):
                bar.write(c["warning"])
            finish_graph(out_dir, manifest, spec, splits[spec.name], c["kind"], c["arrays"], c["info"],
                         np.asarray(got["samples"], np.float64),
                         {"processes": got["processes"], "node": got["node"], "compile_s": c["compile_s"],
                          "compile_node": c["compile_node"]})
            bar.set_postfix_str(f"{spec.name}: measured on {got['node']}")
            bar.update(1)
    except ray.exceptions.RayTaskError as exc:
        raise RuntimeError(f"--backend ray: a task failed after {MAX_RETRIES} retries: "
                           f"{str(exc).strip().splitlines()[-1]}") from None
    finally:
        bar.close()


def compile_graph(name: str, options: CollectOptions, module: str | None = None) -> dict:
    """The compile task: arrays, job and info of one graph, plus its compiled cache entries (`module`: an
    XLA module program's reference)."""
    import platform

    t0 = time.perf_counter()
    gj = prepare_job(resolve_program(name, module), options)
    tmp = Path(tempfile.mkdtemp(prefix="graphcost-compile-"))
    try:
        job = {**gj.job, "cache_dir": str(tmp / "cache")}
        job_path = tmp / "job.json"
        job_path.write_text(_json(job), encoding="utf-8")
        _run_compile(job_path, tmp / "done.npz", options.compile_workers, options.cross.worker_timeout_s)
        with persistent_cache(tmp / "cache"):  # what the compiler did, read back from the fresh cache
            problem = add_compiled_stats(gj, options.compile_workers)
        files = {p.name: p.read_bytes() for p in (tmp / "cache").iterdir() if p.is_file()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"arrays": gj.arrays, "job": gj.job, "info": gj.info, "kind": gj.kind, "cache": files,
            "compile_s": round(time.perf_counter() - t0, 2), "compile_node": platform.node(), "warning": problem}


def _run_compile(job_path: Path, out: Path, threads: int, timeout_s: float) -> None:
    import sys

    cmd = [sys.executable, "-m", "graphcost.measure.worker", str(job_path), "0", str(out), "-1",
           str(max(1, threads))]  # worker.main: process 0, not pinned, compile only with THREADS
    proc = run_child(cmd, timeout_s)
    if proc.returncode != 0 or not out.exists():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{job_path}: compiling failed (exit {proc.returncode}): {last}")


def measure_graph(job: dict, cache: dict, options: CollectOptions) -> dict:
    """The measure task: the P processes of one graph on this node, from the shipped cache entries."""
    import platform

    work = Path(tempfile.mkdtemp(prefix="graphcost-measure-"))
    try:
        (work / "cache").mkdir()
        for fname, data in cache.items():
            (work / "cache" / fname).write_bytes(data)
        samples, records = measure_processes({**job, "cache_dir": str(work / "cache")}, work, "proc", options.cross)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"samples": samples, "processes": records, "node": platform.node()}


def _json(obj) -> str:
    import json

    return json.dumps(obj, sort_keys=True)


def check_reachable(address: str | None, timeout_s: float = 10.0) -> None:
    """Refuse (ValueError, one line naming --ray-address) a cluster address where nothing answers:
    Ray itself retries an unreachable address without end. ``host:port`` and ``ray://host:port`` are
    probed with one TCP connection bounded by `timeout_s`; None and ``auto`` (a local cluster) are not."""
    import socket

    if not address or address == "auto" or address.startswith("local"):
        return
    target = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"--ray-address {address!r}: expected HOST:PORT, ray://HOST:PORT or auto")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        why = "no answer within {:g} s".format(timeout_s) if isinstance(exc, TimeoutError) else (exc.strerror or exc)
        raise ValueError(f"--ray-address {address}: no Ray cluster reachable at {host}:{port} ({why})") from None


def collect_ray(specs: list[ProgramSpec], out_dir: str | Path, options: CollectOptions, address: str | None = None,
                progress: bool = True, init_kwargs: dict | None = None, *, names: dict[str, str] | None = None) -> dict:
    """Collect `specs` into `out_dir` on the Ray cluster at `address` (None: a local one). Returns the manifest.

    `out_dir` and ``options.cache_dir`` are checked first, as by `graphcost.collect.local.collect`
    (`graphcost.collect.guard`; `names` maps ``out_dir`` / ``cache_dir`` to the names messages use)."""
    from graphcost.collect.guard import check_collection_out, open_collection

    out_dir = check_collection_out(out_dir, options.cache_dir, names=names)
    try:
        import ray
    except ImportError as exc:
        raise ImportError("the Ray backend needs the optional extra: pip install 'graphcost[ray]'") from exc
    from graphcost.guards.atomic import atomic_write_json

    check_reachable(address)
    with open_collection(out_dir, options.cache_dir, names=names):  # one collection at a time per directory
        manifest = load_manifest(out_dir, options)
        splits = stratified_split([(s.name, s.family) for s in specs], options.split_fractions, options.seed)
        todo = pending(specs, out_dir, manifest)
        if not todo:  # every graph finished: no cluster to start, nothing to write
            return manifest
        check_modules(todo)  # before the cluster starts: a module that hangs or crashes is one line
        env = {"XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}
        started = not ray.is_initialized()
        if started:
            ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False, **(init_kwargs or {}))
        try:
            _run(ray, specs, todo, splits, out_dir, manifest, options, progress)
        finally:
            if started:
                ray.shutdown()
        manifest["environment"]["loadavg_end"] = load_average()
        atomic_write_json(manifest, out_dir / MANIFEST, indent=1)
    return manifest


__all__ = ["MEASURE_RESOURCE", "collect_ray", "compile_graph", "measure_graph"]
