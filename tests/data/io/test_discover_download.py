"""Discovery on a tmp tree; downloads fail cleanly offline (never touches the network)."""

import io
import tarfile
import urllib.error

import numpy as np
import pytest

from graphcost.data.io import discover
from graphcost.data.io.discover import DataNotFoundError, find_collection_files, find_npz_files
from graphcost.data.io.download import DownloadError, download_collection, download_file, safe_extract, tar_name


def _touch_npz(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, a=np.zeros(1))


def test_official_layout(tmp_path):
    for split in ("train", "valid"):
        for name in ("b.npz", "a.npz"):
            _touch_npz(tmp_path / "npz/layout/nlp/random" / split / name)
    _touch_npz(tmp_path / "npz/tile/xla/test/k.npz")
    files = find_collection_files(tmp_path, "layout:nlp:random", "train")
    assert [f.name for f in files] == ["a.npz", "b.npz"]
    assert find_collection_files(tmp_path, "tile:xla", "test")[0].name == "k.npz"
    found = discover.available_collections(tmp_path)
    assert set(found) == {"layout:nlp:random", "tile:xla"}
    assert set(found["layout:nlp:random"]) == {"train", "valid"}


def test_missing_collection_message(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        find_collection_files(tmp_path, "layout:xla:default", "valid")
    msg = str(info.value)
    assert str(tmp_path / "npz/layout/xla/default/valid") in msg
    assert "graphcost data download --collection layout:xla:default" in msg
    assert "graphcost data synth" in msg
    with pytest.raises(ValueError, match="unknown collection"):
        find_collection_files(tmp_path, "layout:xla", "train")
    with pytest.raises(ValueError, match="unknown split"):
        find_collection_files(tmp_path, "tile:xla", "dev")


def test_env_var_root(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHCOST_DATA_DIR", str(tmp_path))
    assert discover.default_data_root() == tmp_path
    _touch_npz(tmp_path / "npz/tile/xla/train/x.npz")
    assert find_collection_files(None, "tile:xla", "train") == [tmp_path / "npz/tile/xla/train/x.npz"]
    monkeypatch.delenv("GRAPHCOST_DATA_DIR")
    assert discover.default_data_root().parts[-2:] == ("data", "tpugraphs")


def test_any_directory(tmp_path):
    flat = tmp_path / "flat"
    _touch_npz(flat / "g1.npz")
    _touch_npz(flat / "g0.npz")
    assert [f.name for f in find_npz_files(flat)] == ["g0.npz", "g1.npz"]
    with pytest.raises(DataNotFoundError, match="no 'train' subdirectory"):
        find_npz_files(flat, "train")
    split = tmp_path / "split"
    _touch_npz(split / "train" / "a.npz")
    _touch_npz(split / "valid" / "b.npz")
    assert [f.name for f in find_npz_files(split, "valid")] == ["b.npz"]
    assert len(find_npz_files(split)) == 2
    assert find_npz_files(flat / "g0.npz") == [flat / "g0.npz"]
    with pytest.raises(DataNotFoundError):
        find_npz_files(tmp_path / "nothing")


def _unreachable(request, timeout):
    assert timeout <= 10
    raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")


def test_download_fails_fast_offline(tmp_path):
    with pytest.raises(DownloadError) as info:
        download_collection("tile:xla", tmp_path, opener=_unreachable, timeout=1, progress=False)
    msg = str(info.value)
    assert "npz_tile_xla_train.tar" in msg and "No internet access?" in msg
    assert not list(tmp_path.glob("*.tar"))
    root = tmp_path / "new" / "root"  # issue 67: an offline download left an empty data root behind
    with pytest.raises(DownloadError):
        download_collection("tile:xla", root, opener=_unreachable, timeout=1, progress=False)
    assert not (tmp_path / "new").exists() and tmp_path.is_dir()


class _FakeResponse(io.BytesIO):
    def __init__(self, data, status=200, headers=None):
        super().__init__(data)
        self.status = status
        self.headers = headers or {}


def test_download_resumes_part_file(tmp_path):
    payload = bytes(range(256)) * 40
    dest = tmp_path / "f.tar"
    (tmp_path / "f.tar.part").write_bytes(payload[:1000])
    seen = {}

    def opener(request, timeout):
        seen["range"] = request.get_header("Range")
        return _FakeResponse(payload[1000:], 206, {"Content-Range": f"bytes 1000-{len(payload) - 1}/{len(payload)}"})

    download_file("http://example.invalid/f.tar", dest, opener=opener, progress=False)
    assert seen["range"] == "bytes=1000-"
    assert dest.read_bytes() == payload and not (tmp_path / "f.tar.part").exists()


def _tar(path, members):
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_extract_official_tar_without_network(tmp_path):
    buf = io.BytesIO()
    np.savez(buf, a=np.arange(3))
    _tar(tmp_path / tar_name("tile:xla", "valid"), [("npz/tile/xla/valid/k1.npz", buf.getvalue())])
    out = download_collection("tile:xla", tmp_path, splits=["valid"], opener=_unreachable, progress=False)
    assert (out / "valid" / "k1.npz").is_file()
    assert find_collection_files(tmp_path, "tile:xla", "valid") == [out / "valid" / "k1.npz"]


@pytest.mark.parametrize("name", ["../evil.npz", "/abs/evil.npz", "npz/../../evil.npz", "other/x.npz"])
def test_extract_refuses_traversal(tmp_path, name):
    _tar(tmp_path / "bad.tar", [(name, b"x")])
    with pytest.raises(DownloadError, match="refusing|unexpected"):
        safe_extract(tmp_path / "bad.tar", tmp_path / "root", progress=False)
    assert not (tmp_path / "evil.npz").exists()


def test_extract_refuses_symlink(tmp_path):
    with tarfile.open(tmp_path / "link.tar", "w") as tar:
        info = tarfile.TarInfo("npz/tile/xla/train/l.npz")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(DownloadError, match="only regular files"):
        safe_extract(tmp_path / "link.tar", tmp_path / "root", progress=False)


def _npz_bytes(n=200):
    buf = io.BytesIO()
    np.savez(buf, a=np.arange(n))
    return buf.getvalue()


def test_a_truncated_or_damaged_archive_is_refused_before_anything_is_written(tmp_path):
    good = tmp_path / "good.tar"
    _tar(good, [("npz/tile/xla/train/a.npz", _npz_bytes()), ("npz/tile/xla/train/b.npz", _npz_bytes())])
    data = good.read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(data[: 512 + 700])  # the second member's data is missing
    with pytest.raises(DownloadError, match="cut.tar: (truncated|not a readable tar)"):
        safe_extract(cut, tmp_path / "root", progress=False)
    flipped = bytearray(data)
    flipped[512 + 300] ^= 0xFF  # one byte inside a.npz's compressed data: tar headers intact, zip CRC wrong
    bad = tmp_path / "bad.tar"
    bad.write_bytes(bytes(flipped))
    with pytest.raises(DownloadError, match="a.npz' is damaged"):
        safe_extract(bad, tmp_path / "root", progress=False)
    assert not list((tmp_path / "root").rglob("*.npz"))  # nothing half-written or damaged left in the root
    assert safe_extract(good, tmp_path / "root", progress=False) == 2
    assert sorted(p.name for p in (tmp_path / "root").rglob("*.npz")) == ["a.npz", "b.npz"]
    assert [p.name for p in (tmp_path / "root").iterdir()] == ["npz"]  # no temporary directory left


def test_interrupted_download_keeps_part(tmp_path):
    import http.client

    class _Broken(_FakeResponse):
        def read(self, n=-1):
            data = super().read(100)
            if not data:
                raise http.client.IncompleteRead(b"", 50)
            return data

    payload = b"x" * 300
    dest = tmp_path / "g.tar"
    with pytest.raises(DownloadError, match="interrupted"):
        download_file("http://example.invalid/g.tar", dest, progress=False,
                      opener=lambda req, timeout: _Broken(payload, 200, {"Content-Length": "350"}))
    assert (tmp_path / "g.tar.part").stat().st_size == 300 and not dest.exists()

    def rest(request, timeout):
        assert request.get_header("Range") == "bytes=300-"
        return _FakeResponse(b"y" * 50, 206, {"Content-Range": "bytes 300-349/350"})

    download_file("http://example.invalid/g.tar", dest, progress=False, opener=rest)
    assert dest.read_bytes() == payload + b"y" * 50
