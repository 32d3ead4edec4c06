"""The data verbs' outputs never land in their inputs, damaged labels are refused, and no name read from a data
file becomes a path (issue 81 items 4 and 5): `data split-configs`, `data stats --json`, `data kernels`,
`data from-proto`. Small synthetic inputs, built here in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_asserts import invoke, one_line_error


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative path -> bytes)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _graph(path: Path, runtime=None) -> Path:
    """A small labelled TpuGraphs-schema tile npz with 12 configurations (or len(runtime))."""
    rng = np.random.default_rng(0)
    runtime = rng.random(12) + 1.0 if runtime is None else np.asarray(runtime, np.float64)
    k = len(runtime)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, node_feat=rng.random((4, 140), dtype=np.float32), node_opcode=np.array([1, 2, 3, 4], np.uint8),
             edge_index=np.array([[1, 0], [2, 1], [3, 2]], np.int64), config_feat=rng.random((k, 24), dtype=np.float32),
             config_runtime=runtime, config_runtime_normalizers=np.ones(k))
    return path


def _collection(root: Path, fingerprints=("a1b2", "c3d4"), split="train", configs: int = 3) -> Path:
    """A kernel collection as `graphcost collect --kernels` writes it: manifest.json, one program's graph
    (train/p0.npz) and its kernel record (kernels/<split>/p0.npz) of len(fingerprints) three-node kernels."""
    rng = np.random.default_rng(1)
    u = len(fingerprints)
    _graph(root / "train" / "p0.npz", rng.random(configs) + 1.0)
    occ = [(c, k) for c in range(configs) for k in range(u)]
    record = dict(
        kernel_fingerprint=np.asarray(fingerprints, dtype=str), kernel_kind=np.asarray(["fusion"] * u, dtype=str),
        kernel_flops=np.ones(u), kernel_transcendentals=np.zeros(u), kernel_bytes=np.full(u, 64.0),
        kernel_node_offsets=np.arange(0, 3 * u + 1, 3, dtype=np.int64),
        kernel_edge_offsets=np.arange(0, 2 * u + 1, 2, dtype=np.int64),
        node_feat=rng.random((3 * u, 140), dtype=np.float32), node_opcode=np.tile(np.array([1, 2, 3], np.uint8), u),
        edge_index=np.tile(np.array([[1, 0], [2, 1]], np.int64), (u, 1)),
        occ_config=np.array([c for c, _ in occ], np.int64), occ_kernel=np.array([k for _, k in occ], np.int64),
        occ_count=np.ones(len(occ)), occ_runtime_ns=rng.random(len(occ)) * 100 + 10, occ_leaf=np.ones(len(occ), bool),
        profile_wall_ns=rng.random((configs, 2)) * 1000 + 500,
    )  # fmt: skip
    split_dir = root / "kernels" / (split if isinstance(split, str) and not Path(split).is_absolute() else "train")
    split_dir.mkdir(parents=True, exist_ok=True)
    np.savez(split_dir / "p0.npz", **record)
    manifest = {"graphs": {"p0": {"file": "train/p0.npz", "split": split, "family": "f"}}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


# --- outputs never inside inputs --------------------------------------------------------------------------------

def test_split_configs_into_its_own_input_is_refused(tmp_path):
    data = tmp_path / "data"
    graph = _graph(data / "train" / "g.npz")
    _graph(data / "valid" / "h.npz")
    before = _tree(data)
    for out in (data / "train", data, data / "train" / "sub", data / "elsewhere"):  # the split, its dataset, inside
        one_line_error(invoke("data", "split-configs", graph, "--out", out, "--train", "0.3", "--overwrite"),
                       "--out", out, "inside the input GRAPH's dataset directory", data)
    link = tmp_path / "link.npz"  # a link to the graph: judged where its file is too
    link.symlink_to(graph)
    one_line_error(invoke("data", "split-configs", link, "--out", data, "--overwrite"), "--out", "dataset directory")
    assert _tree(data) == before  # nothing written, the graph untouched
    loose = _graph(tmp_path / "loose" / "g.npz")
    one_line_error(invoke("data", "split-configs", loose, "--out", loose.parent), "--out", "directory holding")
    ok = invoke("data", "split-configs", graph, "--out", tmp_path / "one", "--train", "0.3")  # outside: fine
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "one" / "test" / "g.npz").is_file()
    ok = invoke("data", "split-configs", loose, "--out", tmp_path / "loose" / "split", "--train", "0.3")
    assert ok.exit_code == 0, ok.output  # beside a loose graph, in a new directory: as the README shows


def test_stats_json_inside_the_data_is_refused(tmp_path):
    data = tmp_path / "data"
    _graph(data / "train" / "g.npz")
    before = _tree(data)
    for target in (data / "train" / "stats.json", data / "stats.json", data / "new" / "stats.json"):
        one_line_error(invoke("data", "stats", data, "--json", target, "--no-validate"), "--json", target,
                       "inside the input PATH", data)
    assert _tree(data) == before
    ok = invoke("data", "stats", data, "--json", tmp_path / "stats.json", "--no-validate")
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "stats.json").is_file()


def test_kernels_out_that_holds_the_collection_is_refused_and_overwrite_keeps_the_input(tmp_path):
    root = _collection(tmp_path / "work" / "coll")
    before = _tree(tmp_path / "work")
    for out in (tmp_path / "work", tmp_path):  # the parent, a grandparent
        one_line_error(invoke("data", "kernels", root, "--out", out, "--overwrite"), "--out", out, "holds the input",
                       root)
    for out in (root, root / "ds"):  # the collection itself, a path inside it
        one_line_error(invoke("data", "kernels", root, "--out", out, "--overwrite"), "--out", out, "inside the input")
    assert _tree(tmp_path / "work") == before  # the collection is whole
    ok = invoke("data", "kernels", root, "--out", tmp_path / "ds")
    assert ok.exit_code == 0, ok.output
    again = invoke("data", "kernels", root, "--out", tmp_path / "ds", "--overwrite")
    assert again.exit_code == 0, again.output
    assert _tree(tmp_path / "work") == before


def test_from_proto_never_replaces_an_input(tmp_path):
    from bad_input.bad_proto_cases import layout_record  # tests/bad_input's helpers (tests/ is on pythonpath)

    proto = tmp_path / "m.npz"  # a layout protobuf under an .npz name: its output <stem>.npz in --out is itself
    proto.write_bytes(layout_record())
    before = _tree(tmp_path)
    for extra in ([], ["--overwrite"]):
        one_line_error(invoke("data", "from-proto", proto, "--out", tmp_path, "--kind", "layout", *extra), "--out",
                       proto, "inside the input INPUTS")
    assert _tree(tmp_path) == before
    ok = invoke("data", "from-proto", proto, "--out", tmp_path / "out", "--kind", "layout")
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "out" / "m.npz").is_file()


# --- damaged labels -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, index", [(np.nan, 5), (-1.0, 5), (np.inf, 5)])
def test_split_configs_refuses_damaged_runtimes_unless_asked_to_drop_them(tmp_path, bad, index):
    runtime = np.linspace(1.0, 2.0, 12)
    runtime[index] = bad
    runtime[9] = -3.0 if bad != -1.0 else np.nan  # a second bad one: the FIRST index is named
    graph = _graph(tmp_path / "g.npz", runtime)
    line = one_line_error(invoke("data", "split-configs", graph, "--out", tmp_path / "s"), graph, "'config_runtime'",
                          f"configuration {index}", "--drop-bad-runtimes")
    assert "2 of 12" in line
    assert not (tmp_path / "s").exists() or not any((tmp_path / "s").rglob("*.npz"))
    ok = invoke("data", "split-configs", graph, "--out", tmp_path / "s", "--train", "0.3", "--drop-bad-runtimes")
    assert ok.exit_code == 0, ok.output
    assert "dropped 2 configuration(s)" in ok.output
    kept = []
    for path in (tmp_path / "s").rglob("g.npz"):
        with np.load(path) as z:
            assert np.isfinite(z["config_runtime"]).all() and (z["config_runtime"] >= 0).all()
            assert len(z["config_feat"]) == len(z["config_runtime"])
            kept += z["config_runtime"].tolist()
    assert sorted(kept) == sorted(np.delete(runtime, [index, 9]).tolist())


# --- names from data never become paths -------------------------------------------------------------------------

def test_a_hostile_kernel_fingerprint_writes_nothing_outside_out(tmp_path):
    hostile = str(tmp_path / "ESC")
    root = _collection(tmp_path / "coll", fingerprints=(hostile, "../x", "../../y/z"))
    out = tmp_path / "box" / "ds"
    before = {p for p in tmp_path.rglob("*")}
    ok = invoke("data", "kernels", root, "--out", out)
    assert ok.exit_code == 0, ok.output
    new = {p for p in tmp_path.rglob("*")} - before
    assert new and all(p == out.parent or p.is_relative_to(out) for p in new), sorted(new)
    assert not list(tmp_path.glob("ESC*")) and not (tmp_path / "box" / "x.npz").exists()
    names = sorted(p.name for p in (out / "train").iterdir())
    assert len(names) == 3 and all(len(n) == len("0123456789abcdef.npz") for n in names), names
    with np.load(out / "train" / names[0]) as z:  # the fingerprint is kept as data
        assert str(z["kernel_fingerprint"]) in (hostile, "../x", "../../y/z")


@pytest.mark.parametrize("split", ["/abs/dir", "../up", "train/../../x", 3])
def test_a_manifest_split_that_is_a_path_is_refused(tmp_path, split):
    if split == "/abs/dir":
        split = str(tmp_path / "abs")
    root = _collection(tmp_path / "coll", split=split)
    before = {p for p in tmp_path.rglob("*")}
    one_line_error(invoke("data", "kernels", root, "--out", tmp_path / "ds"), root / "manifest.json",
                   "'graphs.p0.split'", "never a path")
    assert {p for p in tmp_path.rglob("*")} == before


def test_a_program_name_or_graph_file_that_is_a_path_is_refused(tmp_path):
    root = _collection(tmp_path / "coll")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["graphs"]["../p0"] = manifest["graphs"].pop("p0")
    (root / "manifest.json").write_text(json.dumps(manifest))
    one_line_error(invoke("data", "kernels", root, "--out", tmp_path / "ds"), "'graphs.../p0'", "not a plain name")
    manifest["graphs"]["p0"] = dict(manifest["graphs"].pop("../p0"), file=str(tmp_path / "elsewhere.npz"))
    (root / "manifest.json").write_text(json.dumps(manifest))
    one_line_error(invoke("data", "kernels", root, "--out", tmp_path / "ds"), "'graphs.p0.file'", "outside")


@pytest.mark.parametrize("damage", ["missing", "index", "offsets"])
def test_a_damaged_kernel_record_is_one_line_naming_the_field(tmp_path, damage):
    root = _collection(tmp_path / "coll")
    path = root / "kernels" / "train" / "p0.npz"
    with np.load(path) as z:
        record = {k: z[k] for k in z.files}
    field = {"missing": "occ_leaf", "index": "occ_kernel", "offsets": "kernel_node_offsets"}[damage]
    if damage == "missing":
        del record[field]
    elif damage == "index":
        record[field] = record[field] + 7
    else:
        record[field] = record[field][::-1].copy()
    np.savez(path, **record)
    one_line_error(invoke("data", "kernels", root, "--out", tmp_path / "ds"), path, f"'{field}'")


def test_a_fifo_record_or_a_huge_manifest_is_refused_without_reading_it(tmp_path):
    import os

    from graphcost.kernels.table import MANIFEST_MAX_BYTES, KernelTable
    from graphcost.errors import GraphcostError

    root = _collection(tmp_path / "coll")
    record = root / "kernels" / "train" / "p0.npz"
    record.unlink()
    os.mkfifo(record)  # np.load of a FIFO would wait for a writer for ever
    one_line_error(invoke("data", "kernels", root, "--out", tmp_path / "ds"), record, "a FIFO")
    with pytest.raises(GraphcostError, match="a FIFO"):  # the Python API's error is the package's
        KernelTable.read(root)
    with open(root / "manifest.json", "r+b") as f:  # sparse: costs no disk
        f.truncate(MANIFEST_MAX_BYTES + 1)
    one_line_error(invoke("data", "kernels", root, "--out", tmp_path / "ds"), root / "manifest.json", "larger than")


def test_kernels_into_an_out_another_process_holds_is_refused(tmp_path):
    from graphcost.guards.atomic import lock_dir

    root = _collection(tmp_path / "coll")
    out = tmp_path / "ds"
    with lock_dir(out):  # what a running `graphcost data kernels --out DS` holds
        one_line_error(invoke("data", "kernels", root, "--out", out, "--overwrite"), "--out", out, "in use by")
    assert [p.name for p in out.iterdir()] == [".graphcost.lock"]
    ok = invoke("data", "kernels", root, "--out", out)  # released: the lock file alone is no content
    assert ok.exit_code == 0, ok.output
