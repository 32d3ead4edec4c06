"""A dataset directory packed into one file and unpacked back (graphcost.data.io.packed), and the shipped
packed dataset found through the locator."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from graphcost.data.graph import TileGraph
from graphcost.data.io.packed import pack_dataset, unpack_dataset
from graphcost.data.io.schema import SchemaError
from graphcost.data.io.tpugraphs_io import load_graph, save_graph


def _kernel_dataset(root, graphs=3):
    """A tiny TILE-schema dataset shaped like a kernel dataset: per graph a different node and configuration
    count, 0-d string and float extras and a string array of varying length."""
    rng = np.random.default_rng(0)
    names = {}
    for g in range(graphs):
        n, c = 2 + g, 1 + 2 * g
        runtime = rng.uniform(1e3, 1e4, c)
        graph = TileGraph(path=None, node_feat=rng.normal(size=(n, 140)).astype(np.float32),
                          node_opcode=rng.integers(1, 120, n).astype(np.uint8),
                          edge_index=np.stack([np.arange(1, n), np.arange(n - 1)], axis=1).astype(np.int64),
                          config_feat=rng.integers(0, 3, (c, 24)).astype(np.float32), config_runtime=runtime,
                          config_runtime_normalizers=runtime.copy())
        split = ("train", "valid", "test")[g % 3]
        extra = {"kernel_kind": np.asarray("fusion:kLoop" if g else "dot"), "kernel_flops": np.asarray(float(g)),
                 "kernel_families": np.asarray(["mlp", "cnn"][:1 + g % 2], dtype=str),
                 "config_programs": np.ones(c, np.int64)}
        save_graph(graph, root / split / f"k{g}.npz", extra=extra)
        names[f"k{g}"] = {"file": f"{split}/k{g}.npz", "split": split}
    (root / "manifest.json").write_text(json.dumps({"schema": "tpugraphs-tile", "graphs": names}))
    return root


def test_a_packed_dataset_unpacks_to_the_same_files_keys_and_values(tmp_path):
    src = _kernel_dataset(tmp_path / "ds")
    packed = pack_dataset(src, tmp_path / "ds.npz")
    with zipfile.ZipFile(packed) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_LZMA}
    out = unpack_dataset(packed, tmp_path / "cache" / "ds")
    assert (out / "manifest.json").read_text() == (src / "manifest.json").read_text()
    originals = sorted(p.relative_to(src) for p in src.rglob("*.npz"))
    assert sorted(p.relative_to(out) for p in out.rglob("*.npz")) == originals
    for rel in originals:
        with np.load(src / rel) as a, np.load(out / rel) as b:
            assert set(a.files) == set(b.files)
            for k in a.files:
                np.testing.assert_array_equal(a[k], b[k])
                assert a[k].dtype.kind == b[k].dtype.kind and a[k].shape == b[k].shape
        graph = load_graph(out / rel)  # the TpuGraphs loader reads the unpacked files
        assert graph.kind == "tile" and graph.config_feat.shape[1] == 24
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_unpack_refuses_an_existing_directory_and_leaves_nothing_when_it_fails(tmp_path):
    packed = pack_dataset(_kernel_dataset(tmp_path / "ds"), tmp_path / "ds.npz")
    (tmp_path / "there").mkdir()
    with pytest.raises(FileExistsError, match="there: exists"):
        unpack_dataset(packed, tmp_path / "there")
    with np.load(packed) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["node_feat.offsets"] = arrays["node_feat.offsets"][::-1].copy()  # damaged offsets
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(SchemaError, match=r"bad\.npz.*node_feat\.offsets"):
        unpack_dataset(tmp_path / "bad.npz", tmp_path / "out")
    assert not (tmp_path / "out").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
    arrays = {**{k: z for k, z in arrays.items()}, "files": np.asarray(["../../evil.npz", "a.npz", "b.npz"])}
    np.savez(tmp_path / "evil.npz", **arrays)
    with pytest.raises(SchemaError, match="not a relative .npz path"):
        unpack_dataset(tmp_path / "evil.npz", tmp_path / "out")
    (tmp_path / "plain.npz").write_bytes(b"not a zip at all")
    with pytest.raises(SchemaError, match="plain.npz"):
        unpack_dataset(tmp_path / "plain.npz", tmp_path / "out")


def test_keys_that_do_not_stack_or_that_some_graphs_lack_pack_ragged(tmp_path):
    """A layout dataset's node_config_feat (C, N, 18) differs in N, and only repeated graphs carry a repeat key:
    both round-trip, a graph without the key gets none back."""
    src = _kernel_dataset(tmp_path / "ds")
    rng = np.random.default_rng(1)
    for g, f in enumerate(sorted(src.rglob("*.npz"))):
        with np.load(f) as z:
            arrays = {k: z[k] for k in z.files if not (g == 1 and k == "kernel_flops")}
        arrays["node_config_feat"] = rng.integers(-1, 3, (3, 2 + g, 18)).astype(np.int8)
        np.savez(f, **arrays)
    packed = pack_dataset(src, tmp_path / "ds.npz")
    with np.load(packed) as z:
        assert {"node_config_feat.shapes", "kernel_flops.shapes"} <= set(z.files)
        assert "node_feat.offsets" in z.files  # what stacks still stacks
    out = unpack_dataset(packed, tmp_path / "out")
    for f in sorted(src.rglob("*.npz")):
        with np.load(f) as a, np.load(out / f.relative_to(src)) as b:
            assert set(a.files) == set(b.files), f.name
            for k in a.files:
                assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
                np.testing.assert_array_equal(a[k], b[k])


def test_pack_refuses_arrays_that_cannot_come_back_as_they_were(tmp_path):
    src = _kernel_dataset(tmp_path / "ds")
    with np.load(src / "valid" / "k1.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["kernel_flops"] = np.asarray(1, np.int64)  # float64 in the other graphs
    np.savez(src / "valid" / "k1.npz", **arrays)
    with pytest.raises(SchemaError, match="k1.npz.*kernel_flops"):
        pack_dataset(src, tmp_path / "ds.npz")
    assert not (tmp_path / "ds.npz").exists()
    arrays["kernel_flops"], arrays["x.offsets"] = np.asarray(1.0), np.zeros(2)
    np.savez(src / "valid" / "k1.npz", **arrays)
    with pytest.raises(SchemaError, match="x.offsets.*reserves"):
        pack_dataset(src, tmp_path / "ds.npz")


def test_a_damaged_ragged_key_is_refused_in_one_line(tmp_path):
    src = _kernel_dataset(tmp_path / "ds")
    with np.load(src / "valid" / "k1.npz") as z:
        arrays = {k: z[k] for k in z.files if k != "kernel_flops"}
    np.savez(src / "valid" / "k1.npz", **arrays)
    with np.load(pack_dataset(src, tmp_path / "ds.npz")) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["kernel_flops.shapes"] = arrays["kernel_flops.shapes"] * 5  # declares values the array does not hold
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(SchemaError, match=r"bad\.npz.*kernel_flops\.shapes"):
        unpack_dataset(tmp_path / "bad.npz", tmp_path / "out")


def test_a_packed_shipped_dataset_is_unpacked_once_into_the_cache(tmp_path, monkeypatch):
    import graphcost.datasets as datasets

    ship = tmp_path / "pkg"
    (ship / "tiny").mkdir(parents=True)
    pack_dataset(_kernel_dataset(tmp_path / "ds"), ship / "tiny" / "kernels.npz")
    monkeypatch.setattr(datasets, "_ROOT", ship)
    monkeypatch.setattr(datasets, "SHIPPED", (*datasets.SHIPPED, "tiny"))
    monkeypatch.setattr(datasets, "PACKED", {"tiny": "kernels.npz"})
    monkeypatch.setattr("graphcost.data.io.locate.SHIPPED", datasets.SHIPPED)
    monkeypatch.setenv("GRAPHCOST_CACHE", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match="not unpacked yet"):
        datasets.shipped_dataset_dir("tiny")
    from graphcost.data.io.locate import resolve_splits
    from graphcost.data.io.packed import shipped_packed_dir

    first = shipped_packed_dir("tiny")
    assert resolve_splits("tiny").files["train"]  # --data-dir NAME finds it
    assert first.parent == tmp_path / "cache" / "datasets" and (first / "train" / "k0.npz").is_file()
    stamp = (first / "train" / "k0.npz").stat().st_mtime_ns
    assert datasets.shipped_dataset_dir("tiny") == first == shipped_packed_dir("tiny")  # found unpacked
    assert (first / "train" / "k0.npz").stat().st_mtime_ns == stamp
    (ship / "tiny" / "kernels.npz").unlink()
    with pytest.raises(FileNotFoundError, match="kernels.npz not found"):
        datasets.shipped_dataset_dir("tiny")


def test_the_shipped_kernel_dataset_is_packed_wide_and_documented():
    """cpu_zoo_kernels_flags (issue 63): one packed file of every distinct leaf kernel of the flag kernel collection,
    read here without unpacking it (its manifest and file list)."""
    import graphcost.datasets as datasets

    root = datasets._ROOT / "cpu_zoo_kernels_flags"
    with np.load(root / datasets.PACKED["cpu_zoo_kernels_flags"], allow_pickle=False) as z:
        manifest = json.loads(str(z["manifest.json"]))
        files = z["files"].tolist()
        assert z["config_feat"].shape[1] == 24 and len(z["node_feat.offsets"]) == len(files) + 1
    graphs = manifest["graphs"]
    assert len(files) == len(graphs) >= 10_000 and manifest["programs"] >= 300
    assert {e["split"] for e in graphs.values()} == {"train", "valid", "test"}
    assert len({f for e in graphs.values() for f in e["families"]}) >= 25
    assert "REAL data" in (root / "CARD.md").read_text(encoding="utf-8")


def test_every_packed_shipped_dataset_is_one_file_beside_its_card():
    """The zoo datasets ship packed (the data budget): nothing else in their package directory, and the packed
    file lists exactly the graphs its manifest names."""
    import graphcost.datasets as datasets

    for name, packed in datasets.PACKED.items():
        root = datasets._ROOT / name
        assert sorted(p.name for p in root.iterdir()) == sorted(["CARD.md", packed]), name
        with np.load(root / packed, allow_pickle=False) as z:
            manifest = json.loads(str(z["manifest.json"]))
            files = sorted(z["files"].tolist())
        assert files == sorted(e["file"] for e in manifest["graphs"].values()), name
