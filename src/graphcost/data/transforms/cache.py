"""On-disk cache of prepared graphs: one npz per (source file, options, format version).

The key hashes the source's absolute path, size and mtime (ns), the preprocessing options and
`FORMAT_VERSION`; bump FORMAT_VERSION whenever preprocessing output changes and every old entry
misses (and is removed when its replacement is written). Entries are written atomically (temp
file in the cache dir + os.replace) and read with `allow_pickle=False`; an unreadable or
mismatching entry is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from graphcost.guards.atomic import atomic_write
from graphcost.data.io.npz_stream import DAMAGED_ARCHIVE_ERRORS
from graphcost.data.transforms.prepared import PreparedGraph
from graphcost.errors import GraphcostError

FORMAT_VERSION = 2  # 2: prepared graphs carry config_compiled_stats ("compiled")


def cache_key(source: str | Path, options: dict[str, Any], format_version: int | None = None) -> str:
    """sha256 over (absolute path, size, mtime_ns, options, format version) of a source file."""
    if format_version is None:
        format_version = FORMAT_VERSION  # read at call time, so a bump invalidates every entry
    path = Path(source).resolve()
    st = path.stat()
    payload = {
        "path": str(path),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "options": options,
        "format_version": format_version,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def cache_path(cache_dir: str | Path, source: str | Path, options: dict[str, Any], key: str) -> Path:
    """<cache_dir>/<source stem>-<digest of (path, options)>-<key[:16]>.npz

    Entries of one (source, options) pair share the prefix, so a newer entry replaces older ones.
    A leading ``~`` in `cache_dir` is the user's home (as in the README's ``"~/.cache/graphcost"``).
    """
    ident = json.dumps({"path": str(Path(source).resolve()), "options": options}, sort_keys=True, default=str)
    digest = hashlib.sha256(ident.encode()).hexdigest()[:10]
    return Path(cache_dir).expanduser() / f"{Path(source).stem}-{digest}-{key[:16]}.npz"


def load_cached(path: str | Path, key: str) -> PreparedGraph | None:
    """The cached PreparedGraph at `path` if present and written for `key`, else None (a miss)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as d:
            if int(d["format_version"][()]) != FORMAT_VERSION or str(d["cache_key"][()]) != key:
                return None
            return PreparedGraph.from_arrays(d)
    except (KeyError, *DAMAGED_ARCHIVE_ERRORS):
        return None  # truncated / foreign / older layout: treat as a miss and rebuild


class CacheError(GraphcostError, ValueError):
    """The cache directory cannot be used (not a directory, not writable); names the path."""


def save_cached(prepared: PreparedGraph, path: str | Path, key: str) -> Path:
    """Atomically write `prepared` to `path`; remove stale entries of the same source.

    Raises CacheError (a ValueError naming the directory) when the cache directory is a file or
    cannot be written.
    """
    path = Path(path)
    if path.parent.exists() and not path.parent.is_dir():
        raise CacheError(f"{path.parent}: cache directory exists and is not a directory")
    arrays = prepared.to_arrays()
    arrays["format_version"] = np.array(FORMAT_VERSION, dtype=np.int64)
    arrays["cache_key"] = np.array(key)
    try:
        with atomic_write(path) as handle:
            np.savez(handle, **arrays)
    except OSError as exc:  # a parent is a file, no permission, read-only file system, disk full, ...
        raise CacheError(f"{path.parent}: cannot write to the cache directory ({exc.strerror or exc})") from None
    # Entries for the same (source, options) under another key (old mtime / format version) are stale.
    prefix = path.name.rsplit("-", 1)[0] + "-"
    for old in path.parent.iterdir():
        if old != path and old.name.startswith(prefix) and old.suffix == ".npz":
            old.unlink(missing_ok=True)
    return path
