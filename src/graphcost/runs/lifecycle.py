"""One output directory's lifecycle, the same for every verb that writes one.

``RunDirectory(path, name, ...)`` checks, when it is built and so before any work:

* the path against the inputs, both ways (`graphcost.guards.outputs.check_outside_inputs`: nothing inside a data
  directory, no input file replaced);
* the path itself (`graphcost.guards.atomic.check_run_dir_path`): not a file nor below one, not a device, not on a
  virtual or read-only file system, and not an earlier run (one of `markers`) unless `overwrite` (replace it)
  or `resume` (continue it).

``with RunDirectory(...) as out:`` then takes the directory's lock (`graphcost.guards.atomic.lock_dir`: a run
another live process holds is never touched), checks again under the lock, empties the directory when
`overwrite` (but for `keep`), and releases the lock when the block ends, however it ends. Every error is
one line naming `name` (``out`` for the Python API, ``--out`` for the commands).

A command that opens the directory and then calls the library verb, which opens it again, nests: the inner
``RunDirectory`` of the same path in the same process finds it open and neither locks it again nor clears it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from graphcost.guards.atomic import BELOW_A_FILE, RUN_DIR_IS_A_FILE, RUN_MARKERS, DirLock, check_run_dir, \
    check_run_dir_path, clear_dir, lock_dir
from graphcost.guards.outputs import check_outside_inputs

_OPEN: dict[Path, int] = {}  # the directories a RunDirectory of this process holds open -> that process's pid


class RunDirectory:
    """The output directory `path` of one verb (module docstring)."""

    def __init__(self, path: str | os.PathLike, name: str = "out", *, overwrite: bool = False, resume: bool = False,
                 markers: tuple[str, ...] = RUN_MARKERS, holds: str = "files (an earlier run?)",
                 data: Iterable[tuple[str, str | os.PathLike]] = (), files: Iterable[tuple[str, str | os.PathLike]] = (),
                 keep: tuple[str | os.PathLike, ...] = (), is_file: str = RUN_DIR_IS_A_FILE,
                 blocked: str = BELOW_A_FILE):
        self.path, self.name = Path(path), name
        self.overwrite, self.resume, self.markers, self.holds, self.keep = overwrite, resume, markers, holds, keep
        self._lock: DirLock | None = None
        if self._nested():
            return  # the enclosing RunDirectory checked it
        check_outside_inputs(self.path, name, data=list(data), files=list(files))
        check_run_dir_path(self.path, name, overwrite, resume, markers, holds, is_file=is_file, blocked=blocked)

    def _nested(self) -> bool:
        key = self.path.resolve()
        return _OPEN.get(key) == os.getpid()

    def __enter__(self) -> Path:
        if self._nested():
            return self.path
        self._lock = lock_dir(self.path, self.name)
        try:
            check_run_dir(self.path, self.overwrite, self.resume, self.name, self.markers, self.holds)  # now ours
            if self.overwrite:
                clear_dir(self.path, keep=self.keep)
        except BaseException:
            self._lock.release()
            raise
        _OPEN[self.path.resolve()] = os.getpid()
        return self.path

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._lock is not None:
            _OPEN.pop(self.path.resolve(), None)
            self._lock.release()
            self._lock = None
