"""Atomic file writes (a temp file in the target's directory, renamed into place on success), and
the checks of output paths that every command runs before any work.

Every writer in graphcost (npz, checkpoints, JSON, CSV, PNG) goes through `atomic_write` (or
`temp_beside` for writers that manage the file themselves), so an interrupted command never leaves
a half-written file under the final name, and a failed write never leaves its temp file behind.

Written files get the mode an ordinary `open(path, "w")` would give them, `0o666 & ~umask`
(0644 under the usual umask 022), so a shared dataset or run directory stays readable to
colleagues; `tempfile.mkstemp` would make every one of them 0600.

The output checks raise typed errors, which the commands print as one line: `OutputExistsError`
(a file or an earlier run is there and --overwrite was not given), `OutputPathError` (a path that can
never be written: `check_output_path` for files, `check_dir_option` and `check_run_dir_path` for
directories; defined in `graphcost.guards.outputs`, which also refuses devices, virtual and read-only
file systems and outputs inside inputs) and `DirectoryLockedError` (`lock_dir`).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from graphcost.errors import GraphcostError
from graphcost.guards.outputs import OutputPathError as OutputPathError  # raised by the checks below; re-exported
from graphcost.guards.outputs import check_regular_target, check_target_kind, check_writable_place


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


class WriteError(GraphcostError, OSError):
    """A file that could not be written (a full disk, a file-size limit, an I/O error), in one line naming it;
    its `errno` is the cause's. Nothing half-written is left at the path (`atomic_write`)."""

    def __init__(self, path: str | os.PathLike, cause: OSError):
        super().__init__(f"cannot write {path}: {cause.strerror or cause}")
        self.errno, self.strerror, self.filename = cause.errno, cause.strerror, str(path)

    def __str__(self) -> str:
        return str(self.args[0])


class OutputWriteError(GraphcostError, OSError):
    """An output of a verb that could not be written (a full disk, no permission, a damaged value), in one line
    naming the argument and the file: ``ARGUMENT PATH: cause``. Nothing half-written is left (`atomic_write`)."""

    def __str__(self) -> str:
        return str(self.args[0])


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", fsync: bool = False) -> Iterator[IO]:
    """Yield a handle on a temp file beside `path` (parents created); on a clean exit the file is
    flushed (and fsync'ed if asked) and `os.replace`d onto `path`; on any error it is deleted. An
    OSError that names no file (a full disk: ENOSPC) is raised again naming `path`. A target that is a
    device, FIFO or socket is refused (`NotARegularFileError`, an OSError) before anything is written."""
    check_regular_target(path)
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None and exc.errno is not None:  # e.g. a full disk: say which file could not be written
            raise WriteError(path, exc) from exc
        raise
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


def remove_stale_temps(directory: str | os.PathLike) -> list[Path]:
    """Delete the temp files that `atomic_write` leaves in `directory` when its process is killed
    mid-write (``.NAME.XXXXXXXX.tmp``, often 0 bytes); returns them. Call it only when no other
    writer is active there, e.g. when resuming a run."""
    removed: list[Path] = []
    directory = Path(directory)
    if not directory.is_dir():
        return removed
    for path in directory.glob(".*.tmp"):
        if _TEMP_NAME.fullmatch(path.name) and path.is_file():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


# temp_beside's ".NAME.<12 hex>.tmp", and mkstemp's ".NAME.<8 chars>.tmp" that earlier versions left
_TEMP_NAME = re.compile(r"\..+\.(?:[0-9a-f]{12}|[A-Za-z0-9_]{8})\.tmp")


class OutputExistsError(GraphcostError, FileExistsError):
    """An output path already holds a file or a run, and the user did not ask to replace it."""


def check_new_file(path: str | os.PathLike, overwrite: bool, option: str = "--out") -> Path:
    """Refuse (OutputExistsError) to replace an existing file at `path` unless `overwrite`."""
    path = Path(path)
    if path.is_file() and not overwrite:
        raise OutputExistsError(f"{option} {path}: already exists; pass --overwrite to replace it")
    return path


# How a refused output path is worded: str.format templates over {option}, {path} and {blocker}.
# A command whose refusals have always read differently passes its own templates.
FILE_IS_A_DIRECTORY = "{option} {path}: is a directory; give the file to write"
DIR_IS_A_FILE = "{option} {path}: is a file, but {option} must be a directory"
RUN_DIR_IS_A_FILE = "{option} {path}: is a file; give a run directory"
BELOW_A_FILE = "{option} {path}: {blocker} is not a directory"
DIR_BELOW_A_FILE = "{option} {path}: cannot be created, {blocker} is a file"


def check_output_path(path: str | os.PathLike, option: str = "--out", overwrite: bool = False, *,
                      is_dir: str = FILE_IS_A_DIRECTORY, blocked: str | None = BELOW_A_FILE) -> Path:
    """An output FILE option, checked before any work: OutputExistsError when a file is there and
    not `overwrite`; OutputPathError when `path` is a directory or lies below a file (`blocked=None`:
    that is left to the write); also a device, a virtual or read-only file system (`graphcost.guards.outputs`)."""
    check_target_kind(path, option)
    check_writable_place(path, option)
    path = check_new_file(path, overwrite, option)
    if path.is_dir():
        raise OutputPathError(is_dir.format(option=option, path=path, blocker=None), path)
    _check_not_below_a_file(path, option, blocked)
    return path


def check_output_file(path: str | os.PathLike) -> Path:
    """`path` as a Path if a file can be written there (an existing one is replaced); OutputPathError
    (a ValueError) when it is a directory or lies below a file. The check of `write_json`."""
    return check_output_path(path, "", True, is_dir="{path}: is a directory; give a file path to write",
                             blocked="{path}: cannot write there, {blocker} is a file, not a directory")


def write_json(data: Any, path: str | os.PathLike) -> Path:
    """Write `data` as JSON to `path` atomically, after `check_output_file`."""
    return atomic_write_json(data, check_output_file(path))


def check_dir_option(path: str | os.PathLike, option: str = "--out", *, is_file: str = DIR_IS_A_FILE,
                     blocked: str | None = DIR_BELOW_A_FILE) -> Path:
    """A DIRECTORY option (created later if missing): OutputPathError when `path` exists and is not a
    directory, or lies below a file (`blocked=None`: that is left to the write); also a device, a virtual
    or read-only file system (`graphcost.guards.outputs`)."""
    path = check_target_kind(path, option)
    check_writable_place(path, option)
    if path.exists() and not path.is_dir():
        raise OutputPathError(is_file.format(option=option, path=path, blocker=None), path)
    _check_not_below_a_file(path, option, blocked)
    return path


def _check_not_below_a_file(path: Path, option: str, blocked: str | None) -> None:
    """OutputPathError worded by `blocked` when `path` lies below a file; None: no check."""
    if blocked is None:
        return
    blocker = blocking_file(path)
    if blocker is not None:
        raise OutputPathError(blocked.format(option=option, path=path, blocker=blocker), path, blocker)


RUN_MARKERS = ("run.json", "checkpoint.pt", "best.pt", "ensemble.json")  # files that make a directory a run
TUNE_MARKERS = ("study.db", "result.json", "trials.csv")  # files that make a directory a tuning run


def check_run_dir(path: str | os.PathLike, overwrite: bool, resume: bool, option: str = "--out",
                  markers: tuple[str, ...] = RUN_MARKERS, holds: str = "files (an earlier run?)") -> Path:
    """A run directory may be written when it is missing or empty, continued with `resume`, or replaced
    with `overwrite` if it is a run directory (holds one of `markers`); OutputExistsError otherwise.
    `holds` names what an occupied directory holds in the refusal."""
    path = Path(path)
    if resume and overwrite:
        raise OutputExistsError(f"{option} {path}: --resume continues a run and --overwrite replaces it; pass one")
    if resume or not path.is_dir() or not any(p.name != LOCK_NAME for p in path.iterdir()):
        return path
    if not overwrite:
        raise OutputExistsError(
            f"{option} {path}: already holds {holds}; pass --overwrite to replace it, "
            "--resume to continue it, or another directory"
        )
    if not any((path / marker).exists() for marker in markers):
        raise OutputExistsError(
            f"{option} {path}: not a run directory (none of {', '.join(markers)}); refusing to replace it"
        )
    return path


def check_run_dir_path(path: str | os.PathLike, option: str = "--out", overwrite: bool = False, resume: bool = False,
                       markers: tuple[str, ...] = RUN_MARKERS, holds: str = "files (an earlier run?)", *,
                       is_file: str = RUN_DIR_IS_A_FILE, blocked: str = BELOW_A_FILE) -> Path:
    """A run-directory option, checked before any work: `check_dir_option` (OutputPathError), then
    `check_run_dir` (OutputExistsError)."""
    path = check_dir_option(path, option, is_file=is_file, blocked=blocked)
    return check_run_dir(path, overwrite, resume, option, markers, holds)


def clear_dir(path: str | os.PathLike, keep: tuple[str | os.PathLike, ...] = ()) -> None:
    """Remove everything under directory `path` (kept itself); used by --overwrite after `check_run_dir`.
    keep: paths the command still needs (e.g. a cache it has just filled): an entry of `path` holding
    one of them stays."""
    path = Path(path)
    if not path.is_dir():
        return
    kept = [Path(k).resolve() for k in keep]
    for child in path.iterdir():
        if child.name == LOCK_NAME:  # the lock of the command that clears it (`lock_dir`): kept
            continue
        if any(k == child.resolve() or k.is_relative_to(child.resolve()) for k in kept):
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


LOCK_NAME = ".graphcost.lock"  # the lock file `lock_dir` holds in an output directory


class DirectoryLockedError(OutputExistsError):
    """Another live process holds the lock of an output directory (`lock_dir`)."""


class DirLock:
    """An exclusive lock on an output directory, held while this object is open.

    The lock is an ``fcntl.flock`` on ``DIR/.graphcost.lock``, which holds the holder's pid. The
    kernel releases it when the process ends, even by SIGKILL, so a stale lock file never blocks a
    later run. Use as a context manager or call `release`.
    """

    def __init__(self, path: Path, fd: int):
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        """Release the lock (the file stays: removing it could race with a new holder)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "DirLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def lock_dir(directory: str | os.PathLike, option: str = "--out") -> DirLock:
    """Create `directory` if needed and take its exclusive lock (`DirLock`); DirectoryLockedError,
    naming the holder's pid and the lock file, when another process holds it."""
    import fcntl

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        finally:
            os.close(fd)
        raise DirectoryLockedError(f"{option} {directory}: in use by another graphcost process (pid {holder}, lock "
                                   f"file {path}); wait for it to finish or use another directory") from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return DirLock(path, fd)
