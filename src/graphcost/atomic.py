"""Atomic file writes: a temp file in the target's directory, renamed into place on success.

Every writer in graphcost (npz, checkpoints, JSON, CSV, PNG) goes through `atomic_write`, so an
interrupted command never leaves a half-written file under the final name, and a failed write
never leaves its temp file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", fsync: bool = False) -> Iterator[IO]:
    """Yield a handle on a temp file beside `path` (parents created); on a clean exit the file is
    flushed (and fsync'ed if asked) and `os.replace`d onto `path`; on any error it is deleted."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
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
