"""The output of every collection verb, checked before anything is measured or written (the checks
lived in `graphcost collect`, so a Python caller of `collect`, `collect_ray`, `repeat_collection`,
`add_processes_collection`, `annotate_collection` or `relabel_collection` got none of them).

`check_collection_out` refuses, in one line naming the argument (``out_dir`` / ``cache_dir`` for the Python
API; the command passes ``--out`` / ``--cache-dir`` through `names`):

* an output or cache directory that is a file or lies below one, a device, a virtual or read-only file system
  (`graphcost.guards.atomic.check_dir_option`, an OutputPathError);
* an output directory that holds a training or tuning run, or other files than a collection's (a
  training run directory got a manifest and split directories written into it), an OutputExistsError.

`open_collection` is that check followed by the directory's lock (`graphcost.guards.atomic.lock_dir`);
`check_configs_fit` the bound on configurations per measuring process (vm.max_map_count) of the verbs that
compile a graph's configurations in one process (`collect`, `add_processes_collection`, `annotate_collection`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from graphcost.guards.atomic import LOCK_NAME, DirLock, OutputExistsError, check_dir_option, lock_dir

RUN_FILES = ("run.json", "checkpoint.pt", "best.pt", "ensemble.json", "study.db", "result.json")  # a train / tune run
SPLITS = ("train", "valid", "test")


def _name(names: Mapping[str, str] | None, key: str) -> str:
    """How the messages name the argument `key`: `names`' entry, else the argument's own name."""
    return (names or {}).get(key, key)


def check_collection_out(out_dir: str | os.PathLike, cache_dir: str | os.PathLike | None = None, *,
                         names: Mapping[str, str] | None = None) -> Path:
    """`out_dir` (and `cache_dir` when given) checked as the module docstring says; returns `out_dir` as a Path.
    A directory that is new, empty, a collection (has manifest.json), or what a collection killed before its first
    graph leaves (``.work``, the lock, split directories) passes."""
    option = _name(names, "out_dir")
    out = check_dir_option(out_dir, option)
    if cache_dir is not None:
        check_dir_option(cache_dir, _name(names, "cache_dir"))
    try:
        entries = sorted(p.name for p in out.iterdir() if p.name != LOCK_NAME) if out.is_dir() else []
    except OSError:  # unreadable: the collection says so when it opens the directory
        return out
    run = [name for name in RUN_FILES if name in entries]
    if run:
        raise OutputExistsError(f"{option} {out}: holds a training or tuning run ({run[0]}), not a collection; "
                                "collect into another directory")
    if not entries or "manifest.json" in entries:
        return out
    other = [e for e in entries if e not in (".work", *SPLITS) or not (out / e).is_dir()]
    graphs = [e for e in entries if e in SPLITS and e not in other and any((out / e).iterdir())]
    if not other and (".work" in entries or not graphs):
        return out  # a collection killed before its first graph was finished (resumed), or empty split directories
    shown = (other or graphs)[0]
    raise OutputExistsError(f"{option} {out}: not a collection (no manifest.json) but holds {len(entries)} entries, "
                            f"such as {shown}; give a new or empty directory, or an existing collection to resume")


def check_configs_fit(configs: int, *, names: Mapping[str, str] | None = None) -> None:
    """`configs` executables per measuring process fit this machine's vm.max_map_count
    (`graphcost.measure.memory_maps.check_executables_fit`): a ValueError naming ``configs`` (or its
    name in `names`: ``--configs``) and the fix, before anything is compiled."""
    from graphcost.measure.memory_maps import check_executables_fit

    check_executables_fit(configs, _name(names, "configs"))


def open_collection(out_dir: str | os.PathLike, cache_dir: str | os.PathLike | None = None, *,
                    names: Mapping[str, str] | None = None) -> DirLock:
    """`check_collection_out`, then the lock of `out_dir` (created if needed; DirectoryLockedError naming the
    holder when another process holds it). Use as ``with open_collection(...):``."""
    out = check_collection_out(out_dir, cache_dir, names=names)
    return lock_dir(out, _name(names, "out_dir"))
