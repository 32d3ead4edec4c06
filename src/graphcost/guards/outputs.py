"""The one guard of every path graphcost writes: checks that run before any work, so a
wrong output costs nothing and never damages what is already there.

Three classes of output path are refused, each with one line naming the option:

* a target that is neither a regular file nor a directory (a device such as ``/dev/full``, a FIFO,
  a socket): an atomic rename would replace the device node with a regular file (`check_target_kind`);
* a place that cannot hold a file: a virtual file system (``/proc``, ``/sys``, ``/dev``: proc,
  sysfs, devtmpfs, cgroup...) or one mounted read-only (`check_writable_place`);
* an output inside an input (`check_outside_inputs`): anything inside a data directory (a cache
  written into a training split breaks every later command on that data), or a path that is an
  input file or would replace a file of an input run.

`graphcost.guards.atomic` runs the first two in every output check (`check_output_path`,
`check_dir_option`, `check_run_dir_path`) and again, for a non-regular target, in `atomic_write`;
the commands add the third with the inputs they read. This module imports nothing of graphcost.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from graphcost.errors import GraphcostError

# File systems that hold no user files: writing there fails, or worse, does something else.
VIRTUAL_FS = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "configfs",
    "pstore", "bpf", "mqueue", "fusectl", "efivarfs", "binfmt_misc", "autofs", "rpc_pipefs", "nsfs", "hugetlbfs",
})  # fmt: skip
VIRTUAL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))  # where /proc/self/mounts cannot be read
MOUNTS = Path("/proc/self/mounts")


class OutputPathError(GraphcostError, ValueError):
    """An output path that can never be written: a directory where a file must go, a file where a
    directory must go, a path below a file (`blocker`, else None), a device, a virtual or read-only
    file system, or a path inside an input."""

    def __init__(self, message: str, path: Path, blocker: Path | None = None):
        super().__init__(message)
        self.path, self.blocker = path, blocker


class NotARegularFileError(GraphcostError, OSError):
    """`atomic_write` refused to replace a target that is not a regular file (a device, FIFO, socket)."""


def _named(option: str, path: Path) -> str:
    """'--out PATH' (just 'PATH' for a check made without an option name)."""
    return f"{option} {path}" if option else str(path)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words ('a character device', 'a FIFO', ...)."""
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def special_kind(path: str | os.PathLike) -> str | None:
    """'a character device' etc. when `path` (or what its link points to) exists and is neither a
    regular file nor a directory; None otherwise (missing, a dangling link, a file, a directory)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, a link loop, a name too long: the write will say
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else kind_of(mode)


def check_target_kind(path: str | os.PathLike, option: str) -> Path:
    """OutputPathError when `path` exists and is not a regular file or a directory (e.g. /dev/full)."""
    path = Path(path)
    what = special_kind(path)
    if what is not None:
        raise OutputPathError(f"{_named(option, path)}: is {what}, not a regular file or directory; refusing to "
                              "write there", path)
    return path


def _existing_ancestor(path: Path) -> Path | None:
    """`path` itself when it exists, else its nearest existing ancestor (resolved)."""
    for candidate in (path, *path.parents):
        try:
            if candidate.exists():
                return candidate.resolve()
        except (OSError, ValueError):
            return None
    return None


def _mounts() -> list[tuple[Path, str]] | None:
    """(mount point, file system type) of every mount, longest first; None when unreadable."""
    try:
        lines = MOUNTS.read_text().splitlines()
    except OSError:
        return None
    mounts = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 3:
            point = fields[1].encode().decode("unicode_escape")  # \040 for a space
            mounts.append((Path(point), fields[2]))
    return sorted(mounts, key=lambda m: len(m[0].parts), reverse=True)


def file_system_of(path: Path) -> str | None:
    """The type of the file system holding existing `path` ('ext4', 'proc', ...), None if unknown."""
    mounts = _mounts()
    if mounts is None:
        return "proc" if any(path == r or path.is_relative_to(r) for r in VIRTUAL_ROOTS) else None
    for point, fs in mounts:
        if path == point or path.is_relative_to(point):
            return fs
    return None


def check_writable_place(path: str | os.PathLike, option: str) -> Path:
    """OutputPathError when `path` would be written on a virtual file system (/proc, /sys, /dev) or
    one mounted read-only (judged by the nearest existing ancestor)."""
    path = Path(path)
    where = _existing_ancestor(Path(os.path.abspath(path)))
    if where is None:
        return path
    fs = file_system_of(where)
    if fs in VIRTUAL_FS:
        raise OutputPathError(f"{_named(option, path)}: lies on a virtual file system ({fs} at {where}), which "
                              "holds no files; give a path on a disk", path)
    try:
        read_only = bool(os.statvfs(where).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        raise OutputPathError(f"{_named(option, path)}: lies on a read-only file system ({where}); give a "
                              "writable path", path)
    return path


def _resolved(path: str | os.PathLike) -> Path:
    return Path(os.path.realpath(path))


def check_outside_inputs(path: str | os.PathLike, option: str, data: Iterable[tuple[str, object]] = (),
                         files: Iterable[tuple[str, object]] = (), around: Iterable[tuple[str, object]] = ()) -> Path:
    """OutputPathError when output `path` lies inside an input. `data`: (option, directory or file)
    pairs nothing may be written into or onto (data directories, input files); `files`: (option, run
    directory or file) pairs whose existing files must not be replaced (a run a model is read from:
    a new report beside it is fine, its checkpoint is not); `around`: (option, directory or file) pairs
    the output directory must not hold either (an output that ``--overwrite`` empties whole: emptying a
    parent of the input would delete it). None inputs are skipped."""
    path = Path(path)
    out = _resolved(path)
    for input_option, given in around:
        if given is None:
            continue
        source = _resolved(given)  # type: ignore[arg-type]
        if source != out and source.is_relative_to(out):
            raise OutputPathError(f"{_named(option, path)}: holds the input {input_option} {given}; writing or "
                                  "replacing it could delete the input (give a path outside it)", path)
    for input_option, given in data:
        if given is None:
            continue
        source = _resolved(given)  # type: ignore[arg-type]
        if out == source or out.is_relative_to(source):
            raise OutputPathError(f"{_named(option, path)}: lies inside the input {input_option} {given}; writing there "
                                  "would change the input (give a path outside it)", path)
    for input_option, given in files:
        if given is None:
            continue
        source = _resolved(given)  # type: ignore[arg-type]
        if out == source or (out.is_relative_to(source) and out.is_file()):
            raise OutputPathError(f"{_named(option, path)}: is a file of the input {input_option} {given}; refusing to "
                                  "replace it (give a path outside the input)", path)
    return path


def check_regular_target(path: str | os.PathLike) -> None:
    """For `atomic_write`: IsADirectoryError naming `path` when it is a directory; NotARegularFileError
    when it (not following a link) is a device, FIFO or socket, which `os.replace` would silently swap
    for a regular file."""
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, f"{path}: is a directory, expected a file path")
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
        raise NotARegularFileError(errno.EINVAL, f"cannot write {path}: it is {kind_of(mode)}, not a regular file; "
                                   "refusing to replace it")
