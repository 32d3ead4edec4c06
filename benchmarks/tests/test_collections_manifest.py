"""collections/MANIFEST.json matches the raw collections beside it (files, bytes, sha256:
benchmarks/collections/manifest.py); skipped where the folder is absent."""

from __future__ import annotations

import json

import pytest
from bench_modules import load_benchmark


@pytest.fixture(scope="module")
def manifest():
    yield from load_benchmark("collections/manifest.py")


def test_every_collection_matches_its_manifest_entry(manifest):
    if not (manifest.ROOT / manifest.MANIFEST).is_file():
        pytest.skip(f"no raw collections at {manifest.ROOT}")
    assert manifest.mismatches(manifest.ROOT) == []


def test_a_changed_file_or_an_unlisted_folder_is_named(manifest, tmp_path):
    (tmp_path / "a" / "train").mkdir(parents=True)
    (tmp_path / "a" / "train" / "g.npz").write_bytes(b"x")
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"collections": {"a": {}}}))
    assert manifest.main(["--root", str(tmp_path)]) == 0
    assert manifest.main(["--root", str(tmp_path), "--check"]) == 0
    entry = json.loads((tmp_path / "MANIFEST.json").read_text())["collections"]["a"]
    assert entry["files"] == 1 and entry["bytes"] == 1
    (tmp_path / "a" / "train" / "g.npz").write_bytes(b"y")
    (tmp_path / "b").mkdir()
    assert manifest.main(["--root", str(tmp_path), "--check"]) == 1
    assert manifest.mismatches(tmp_path) == ["b: a folder of " + str(tmp_path) + " the manifest does not list",
                                             f"a: sha256 is {manifest.folder_digest(tmp_path / 'a')['sha256']}, "
                                             f"the manifest says {entry['sha256']}"]
