"""Atomic writes: the target appears only complete, a failed write keeps the old file and no temp file,
and the file gets the mode the umask allows (not mkstemp's 0600)."""

import json
import os
import stat

import numpy as np
import pytest

from graphcost.guards.atomic import atomic_write, atomic_write_json, atomic_write_text, blocking_file, temp_beside
from graphcost.data.io.npz_stream import NpzWriter


def test_writes_and_creates_parents(tmp_path):
    path = atomic_write_json({"a": 1}, tmp_path / "sub" / "x.json")
    assert json.loads(path.read_text()) == {"a": 1} and path.read_text().endswith("\n")
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]


def test_failed_write_keeps_old_content_and_leaves_no_temp_file(tmp_path):
    path = atomic_write_text(tmp_path / "x.txt", "old")
    with pytest.raises(RuntimeError):
        with atomic_write(path, "w") as handle:
            handle.write("half")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]


def test_binary_mode_with_fsync(tmp_path):
    with atomic_write(tmp_path / "b.bin", fsync=True) as handle:
        handle.write(b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"


def test_blocking_file_names_the_file_in_the_way(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    assert blocking_file(f / "a" / "b.json") == f
    assert blocking_file(tmp_path / "new" / "b.json") is None
    assert blocking_file(f) is None  # the file itself may be overwritten


@pytest.fixture
def umask():
    """Set the process umask for one test and restore the old one afterwards."""
    old = os.umask(0o022)
    try:
        yield os.umask
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_written_files_get_the_mode_the_umask_allows(tmp_path, umask, mask, expected):
    umask(mask)
    text = atomic_write_text(tmp_path / "x.txt", "x")
    with NpzWriter(tmp_path / "g.npz") as writer:
        writer.write("a", np.arange(3))
    for path in (text, tmp_path / "g.npz"):
        assert stat.S_IMODE(path.stat().st_mode) == expected, path  # mkstemp gave 0600 always
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.npz", "x.txt"]


def test_temp_beside_never_reuses_an_existing_name(tmp_path, monkeypatch):
    taken = tmp_path / ".x.npz.aaaaaaaaaaaa.tmp"
    taken.write_text("someone else's")
    names = iter(["aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr("graphcost.guards.atomic.secrets.token_hex", lambda n: next(names))
    fd, tmp = temp_beside(tmp_path / "x.npz")
    os.close(fd)
    assert tmp.name == ".x.npz.bbbbbbbbbbbb.tmp" and taken.read_text() == "someone else's"
