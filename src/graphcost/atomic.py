"""Atomic file writes: a temp file in the target's directory, renamed into place on success.

Every writer in graphcost (npz, checkpoints, JSON, CSV, PNG) goes through `atomic_write` (or
`temp_beside` for writers that manage the file themselves), so an interrupted command never leaves
a half-written file under the final name, and a failed write never leaves its temp file behind.

Written files get the mode an ordinary `open(path, "w")` would give them, `0o666 & ~umask`
(0644 under the usual umask 022), so a shared dataset or run directory stays readable to
colleagues; `tempfile.mkstemp` would make every one of them 0600.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def temp_beside(path: str | os.PathLike) -> tuple[int, Path]:
    """Create and open a new, empty temp file `.NAME.<random>.tmp` in `path`'s directory (parents
    created) and return `(fd, temp_path)`. Unlike `tempfile.mkstemp` (always 0600) the file is
    created with mode 0o666, which the kernel reduces by the umask (and any default ACL), exactly
    as for `open(path, "w")`. `O_EXCL` makes the creation safe against an existing file or link."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: could not create a unique temp file for {path.name}")


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", fsync: bool = False) -> Iterator[IO]:
    """Yield a handle on a temp file beside `path` (parents created); on a clean exit the file is
    flushed (and fsync'ed if asked) and `os.replace`d onto `path`; on any error it is deleted."""
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` atomically."""
    with atomic_write(path, "w") as handle:
        handle.write(text)
    return Path(path)


def atomic_write_json(obj: Any, path: str | os.PathLike, indent: int = 2) -> Path:
    """Write `obj` as JSON (with a final newline) to `path` atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=indent) + "\n")


def blocking_file(path: str | os.PathLike) -> Path | None:
    """The nearest existing ancestor of `path` when it is a file (so `path` can never be created
    below it), else None. Lets commands refuse an output path before doing any work."""
    for parent in Path(path).parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None
