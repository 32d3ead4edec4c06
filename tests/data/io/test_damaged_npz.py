"""Damaged npz files give a SchemaError naming file and member, never a zlib/zipfile/tokenize traceback.

QA found that about half of 300 byte-flipped files made `graphcost data stats` print a raw
`zlib.error`, `BadZipFile`, `NotImplementedError`, `TokenError` or `MemoryError`.
"""

import random
import struct
import zipfile

import numpy as np
import pytest

from graphcost.data.io.npz_stream import iter_rows, read_member_header
from graphcost.data.io.schema import SchemaError
from graphcost.data.stats import graph_stats
from graphcost.data.synth.collection import synth_layout_graph, synth_tile_graph
from graphcost.data.io.tpugraphs_io import iter_node_config_feat_chunks, load_graph, save_graph


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
    """Tiny synthetic layout (deflated and stored) and tile files: name -> bytes."""
    d = tmp_path_factory.mktemp("tiny")
    layout = synth_layout_graph(num_nodes=24, num_configs=6, seed=3)
    tile = synth_tile_graph(num_nodes=10, num_configs=5, seed=3)
    out = {}
    for name, graph, compressed in [("layout_z", layout, True), ("layout_s", layout, False), ("tile_z", tile, True)]:
        path = save_graph(graph, d / f"{name}.npz", compressed=compressed)
        out[name] = path.read_bytes()
    return out


def _readers(path):
    """Every way data-io reads a file: eager, lazy + stats, and the streaming helpers."""
    yield lambda: load_graph(path)
    yield lambda: graph_stats(path)
    if b"node_config_feat" in path.read_bytes():
        yield lambda: list(iter_node_config_feat_chunks(path, 4))


def _expect_clean(path, readers=None):
    """Each reader either succeeds or raises a SchemaError naming `path`."""
    for read in readers or _readers(path):
        try:
            read()
        except SchemaError as exc:
            assert str(path) in str(exc)
        # any other exception propagates and fails the test with its traceback


def test_byte_flip_fuzz_only_schema_errors(tiny_files, tmp_path):
    rng = random.Random(20261122)  # seeded: the same 60 mutants every run
    names = sorted(tiny_files)
    for i in range(60):
        data = bytearray(tiny_files[names[i % len(names)]])
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path = tmp_path / f"mutant{i}.npz"
        path.write_bytes(bytes(data))
        _expect_clean(path)


def test_truncated_files_only_schema_errors(tiny_files, tmp_path):
    data = tiny_files["layout_s"]
    for n in range(0, len(data), max(1, len(data) // 25)):
        path = tmp_path / f"cut{n}.npz"
        path.write_bytes(data[:n])
        _expect_clean(path)


def _rewrite(src: bytes, tmp_path, name, member=None, new_bytes=None, compression=zipfile.ZIP_STORED):
    """Copy an npz, replacing member `member`'s bytes by `new_bytes`."""
    src_path = tmp_path / f"src_{name}"
    src_path.write_bytes(src)
    path = tmp_path / name
    with zipfile.ZipFile(src_path) as zin, zipfile.ZipFile(path, "w", compression=compression) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info.filename, new_bytes if info.filename == member else data)
    return path


def _patch_central_dir(path, offset: int, fmt: str, value):
    """Overwrite a field (`offset` bytes into every central directory record) of the zip at `path`."""
    data = bytearray(path.read_bytes())
    pos = data.find(b"PK\x01\x02")
    while pos != -1:
        struct.pack_into(fmt, data, pos + offset, value)
        pos = data.find(b"PK\x01\x02", pos + 4)
    path.write_bytes(bytes(data))


def test_unknown_compression_method(tiny_files, tmp_path):
    path = tmp_path / "method.npz"
    path.write_bytes(tiny_files["layout_z"])
    _patch_central_dir(path, 10, "<H", 99)  # compression method 99: zipfile raised NotImplementedError
    with pytest.raises(SchemaError, match=r"method\.npz: key '\w+': damaged npz archive \(NotImplementedError"):
        load_graph(path)
    with pytest.raises(SchemaError, match=r"key 'node_config_feat'"):
        read_member_header(path, "node_config_feat")


def test_encrypted_flag(tiny_files, tmp_path):
    path = tmp_path / "enc.npz"
    path.write_bytes(tiny_files["layout_z"])
    _patch_central_dir(path, 8, "<H", 1)  # "encrypted" flag bit: zipfile raised RuntimeError
    with pytest.raises(SchemaError, match="enc.npz"):
        load_graph(path)
    with pytest.raises(SchemaError, match="enc.npz"):
        list(iter_rows(path, "node_config_feat", 2))


def test_unparsable_npy_header(tiny_files, tmp_path):
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, "  # unterminated: tokenize.TokenError
    header = header.ljust(118) + b"\n"
    member = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + bytes(64)
    path = _rewrite(tiny_files["layout_z"], tmp_path, "hdr.npz", "node_feat.npy", member)
    with pytest.raises(SchemaError, match=r"hdr\.npz: key 'node_feat': unreadable \.npy header"):
        load_graph(path)
    with pytest.raises(SchemaError, match=r"key 'node_feat': unreadable \.npy header"):
        graph_stats(path)


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_absurd_header_shape_refused_before_allocating(tiny_files, tmp_path, compression):
    src = tmp_path / "src.npz"
    src.write_bytes(tiny_files["layout_s"])
    with zipfile.ZipFile(src) as zf:
        member = zf.read("node_config_feat.npy")
    nc = np.load(src)["node_config_feat"].shape[0]
    bad = member.replace(f"'shape': ({nc}, ".encode(), b"'shape': (99999999999, ")
    assert bad != member
    path = _rewrite(tiny_files["layout_s"], tmp_path, "huge.npz", "node_config_feat.npy", bad, compression)
    expected = r"huge\.npz: key 'node_config_feat': \.npy header declares shape \(99999999999"
    for read in (lambda: load_graph(path), lambda: graph_stats(path), lambda: read_member_header(path, "node_config_feat")):
        with pytest.raises(SchemaError, match=expected):
            read()  # was a MemoryError (eager) or a memmap ValueError (lazy)


def test_not_a_zip_archive(tmp_path):
    npy = tmp_path / "single.npz"
    np.save(npy.with_suffix(".npy"), np.zeros(3))
    npy.write_bytes(npy.with_suffix(".npy").read_bytes())
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"\x80\x04garbage that np.load would treat as a pickle")
    for path in (npy, junk):
        for read in (lambda: load_graph(path), lambda: read_member_header(path, "node_feat")):
            with pytest.raises(SchemaError, match=r"not an npz \(zip\) archive") as info:
                read()
            assert "pickled" not in str(info.value) and path.name in str(info.value)
    with pytest.raises(SchemaError, match=r"single-array \.npy file"):
        load_graph(npy)
