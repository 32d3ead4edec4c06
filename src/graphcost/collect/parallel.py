"""Collections measured in parallel, one pinned collection per core, merged into one dataset.

On a many-core machine each core can run its own `graphcost collect` (driver, compile thread and
measuring processes all pinned to that core with ``taskset``), each into its own *shard*
directory. A few cores run *repeat shards*: the same programs and configurations (same seed) as
the first programs of the main shards, measured at the same time on other cores in other
processes — the independent second collection the cards' repeatability table needs.

`shard_programs` deals the programs out; `merge_shards` writes ONE collection directory in the
layout `graphcost collect` writes (``{train,valid,test}/<program>.npz`` + ``manifest.json``), with
the split chosen over all merged programs (by family by default: `graphcost.data.splits.family_split`)
and the repeat shards' samples stored as ``config_runtime_repeat_samples`` with a manifest
``repeat`` entry, exactly as ``graphcost collect --action repeat`` stores them. Labels from different
machines must never be merged: `merge_shards` refuses shards whose CPU model or collection
parameters differ.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from graphcost.guards.atomic import atomic_write_json
from graphcost.collect.local import MANIFEST, graph_file, label_statistic, read_graph, repeat_summary, save_arrays
from graphcost.data.splits import family_split, stratified_split


def shard_programs(names: Sequence[str], main: int, repeat: int = 0) -> tuple[list[list[str]], list[list[str]]]:
    """Deal `names` round-robin to `main` shards; the repeat shards get the FIRST programs of the
    main shards (the ones finished first), dealt round-robin too.

    With main shards finishing about n programs each in a given time, repeat shard r has then done
    about n programs of ``names[:n * repeat]``, which the main shards finished at positions < n.
    """
    if main < 1 or repeat < 0:
        raise ValueError(f"shards: need main >= 1 and repeat >= 0, got main={main}, repeat={repeat}")
    names = list(names)
    mains = [names[k::main] for k in range(main)]
    repeats = [names[r::repeat] for r in range(repeat)] if repeat else []
    return mains, repeats


def _manifest(shard: Path) -> dict[str, Any]:
    path = shard / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable shard manifest ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("graphs"), dict):
        raise ValueError(f"{path}: key 'graphs' must be an object of per-graph entries")
    return manifest


def _cpu(manifest: dict) -> str:
    return str(manifest.get("environment", {}).get("host", {}).get("cpu_model", "?"))


def merge_shards(main_dirs: Sequence[Path], repeat_dirs: Sequence[Path], out_dir: Path, split: str = "family",
                 fractions=(0.7, 0.15, 0.15), seed: int = 0) -> dict[str, Any]:
    """Merge shard collections into `out_dir` (which must not exist yet). Returns the manifest.

    split: ``family`` (whole families per side) or ``stratified`` (graphs of every family on every
    side, as `graphcost collect` splits). A repeat shard's graph is used only when its
    configuration features equal the main file's.
    """
    if split not in ("family", "stratified"):
        raise ValueError(f"split must be 'family' or 'stratified', got {split!r}")
    out_dir = Path(out_dir)
    if out_dir.exists():
        raise ValueError(f"{out_dir}: already exists; merge into a new directory")
    mains = [(Path(d), _manifest(Path(d))) for d in main_dirs]
    repeats = [(Path(d), _manifest(Path(d))) for d in repeat_dirs]
    if not mains:
        raise ValueError("merge: no main shard given")
    key, cpu = mains[0][1].get("collection"), _cpu(mains[0][1])
    for d, m in mains + repeats:
        if m.get("collection") != key:
            raise ValueError(f"{d / MANIFEST}: key 'collection' is {m.get('collection')}, but {mains[0][0] / MANIFEST} "
                             f"has {key}; shards must share the collection parameters")
        if _cpu(m) != cpu:
            raise ValueError(f"{d / MANIFEST}: key 'environment.host.cpu_model' is {_cpu(m)!r}, not {cpu!r}; "
                             "labels of different machines are never merged")
    entries: dict[str, tuple[Path, dict]] = {}
    for d, m in mains:
        for name, entry in m["graphs"].items():
            if name in entries:
                raise ValueError(f"{d / MANIFEST}: graph {name!r} is also in shard {entries[name][0]}")
            entries[name] = (d, entry)
    pairs = [(name, entry["family"]) for name, (_, entry) in sorted(entries.items())]
    sides = (family_split if split == "family" else stratified_split)(pairs, fractions, seed)
    repeat_of = {name: (d, entry) for d, m in repeats for name, entry in m["graphs"].items()}

    tmp = out_dir.with_name(out_dir.name + ".merging")
    shutil.rmtree(tmp, ignore_errors=True)
    graphs: dict[str, Any] = {}
    for name, (d, entry) in sorted(entries.items()):
        stored = read_graph(graph_file(d, name, entry))
        kind = "layout" if "node_config_feat" in stored else "tile"
        feat_key = "node_config_feat" if kind == "layout" else "config_feat"
        new = {**entry, "file": f"{sides[name]}/{name}.npz", "split": sides[name], "shard": d.name}
        if name in repeat_of:
            rd, rentry = repeat_of[name]
            rep = read_graph(graph_file(rd, name, rentry))
            if feat_key in rep and np.array_equal(rep[feat_key], stored[feat_key]):
                samples = rep["config_runtime_samples"]
                stored["config_runtime_repeat_samples"] = samples
                new["repeat"] = {**repeat_summary(samples, stored["config_runtime"], label_statistic(mains[0][1])),
                                 "processes": rentry.get("processes"),
                                 "compile_s": rentry.get("compile_s"), "total_s": rentry.get("total_s"),
                                 "date_utc": rentry.get("date_utc"), "shard": rd.name}
        save_arrays(stored, tmp / new["file"], kind)
        graphs[name] = new
    first = mains[0][1]
    manifest = {**{k: v for k, v in first.items() if k not in ("graphs", "environment")},
                "environment": {**first.get("environment", {}),
                                "shards": {d.name: m.get("environment", {}) for d, m in mains}},
                "split": {"by": split, "fractions": list(fractions), "seed": seed},
                "graphs": graphs}
    if repeats:
        manifest["repeat_environment"] = {**repeats[0][1].get("environment", {}),
                                          "shards": {d.name: m.get("environment", {}) for d, m in repeats}}
    atomic_write_json(manifest, tmp / MANIFEST, indent=1)
    tmp.rename(out_dir)
    return manifest
