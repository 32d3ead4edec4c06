"""Atomic writes: the target appears only complete, a failed write keeps the old file and no temp file."""

import json

import pytest

from graphcost.atomic import atomic_write, atomic_write_json, atomic_write_text, blocking_file


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
