"""Parallel collections: programs dealt to shards, shards merged into one collection with a family split
and the repeat shards' samples as the independent second measurement."""

import json

import numpy as np
import pytest

from graphcost.collect.local import save_arrays
from graphcost.collect.parallel import merge_shards, shard_programs
from graphcost.data.splits import family_split

KEY = {"space": "layout", "configs": 4, "seed": 0}


def _layout(runtimes_ns, feat_seed=0):
    k = len(runtimes_ns)
    samples = np.stack([np.asarray(runtimes_ns) * f for f in (1.0, 1.02, 0.99)], axis=1).astype(np.int64)
    return {"node_feat": np.zeros((3, 140), np.float32), "node_opcode": np.array([1, 2, 3], np.int64),
            "edge_index": np.array([[1, 0], [2, 1]], np.int64), "node_config_ids": np.array([1], np.int64),
            "node_config_feat": np.random.default_rng(feat_seed).integers(-1, 3, (k, 1, 18)).astype(np.float32),
            "node_splits": np.zeros((1, 0), np.int64), "config_runtime": np.median(samples, axis=1).astype(np.int64),
            "config_runtime_samples": samples}


def _shard(root, name, graphs, cpu="cpu A", key=KEY):
    d = root / name
    entries = {}
    for prog, fam, arrays in graphs:
        save_arrays(arrays, d / "train" / f"{prog}.npz", "layout")
        entries[prog] = {"file": f"train/{prog}.npz", "split": "train", "family": fam, "total_s": 1.0,
                         "processes": [], "date_utc": "2026-11-26T00:00:00Z"}
    (d / "manifest.json").write_text(json.dumps({"collection": key, "environment": {"host": {"cpu_model": cpu}},
                                                 "graphs": entries}))
    return d


def test_shard_programs_repeats_the_first_programs_of_the_main_shards():
    names = [f"p{i}" for i in range(10)]
    mains, repeats = shard_programs(names, 3, 2)
    assert mains == [["p0", "p3", "p6", "p9"], ["p1", "p4", "p7"], ["p2", "p5", "p8"]]
    assert repeats == [["p0", "p2", "p4", "p6", "p8"], ["p1", "p3", "p5", "p7", "p9"]]
    with pytest.raises(ValueError, match="main >= 1"):
        shard_programs(names, 0)


def test_family_split_keeps_every_family_on_one_side():
    pairs = [(f"{fam}-{i}", fam) for fam in "abcdefghij" for i in range(3)]
    sides = family_split(pairs, seed=3)
    by_family = {}
    for name, fam in pairs:
        by_family.setdefault(fam, set()).add(sides[name])
    assert all(len(s) == 1 for s in by_family.values())
    counts = {side: sum(1 for s in by_family.values() if side in s) for side in ("train", "valid", "test")}
    assert counts == {"train": 7, "valid": 2, "test": 1} or counts == {"train": 6, "valid": 2, "test": 2}
    assert family_split(pairs, seed=3) == sides and family_split(pairs, seed=4) != sides


def test_merge_writes_one_collection_with_repeats(tmp_path):
    rt = [100_000, 200_000, 150_000, 300_000]
    a = _shard(tmp_path, "main-00", [(f"{f}-x", f, _layout(rt)) for f in "abc"])
    b = _shard(tmp_path, "main-01", [(f"{f}-y", f, _layout(rt[::-1])) for f in "abc"])
    rep = _shard(tmp_path, "repeat-02", [("a-x", "a", _layout([110_000, 190_000, 160_000, 290_000])),
                                         ("b-y", "b", _layout(rt, feat_seed=9))])  # b-y: other configurations
    out = tmp_path / "merged"
    manifest = merge_shards([a, b], [rep], out)
    graphs = manifest["graphs"]
    assert sorted(graphs) == ["a-x", "a-y", "b-x", "b-y", "c-x", "c-y"]
    for name, g in graphs.items():
        assert (out / g["file"]).is_file() and g["file"].startswith(g["split"] + "/")
        assert graphs[name[0] + "-x"]["split"] == graphs[name[0] + "-y"]["split"]  # whole families per side
    assert graphs["a-x"]["repeat"]["spearman_vs_label"] == 1.0 and "repeat" not in graphs["b-y"]
    with np.load(out / graphs["a-x"]["file"]) as z:
        assert z["config_runtime_repeat_samples"].shape == (4, 3)
    assert json.loads((out / "manifest.json").read_text())["split"]["by"] == "family"
    assert set(manifest["environment"]["shards"]) == {"main-00", "main-01"}
    with pytest.raises(ValueError, match="already exists"):
        merge_shards([a, b], [], out)


def test_merge_refuses_shards_of_other_machines_or_parameters(tmp_path):
    a = _shard(tmp_path, "s0", [("a-x", "a", _layout([1, 2, 3, 4]))])
    other_cpu = _shard(tmp_path, "s1", [("b-x", "b", _layout([1, 2, 3, 4]))], cpu="cpu B")
    other_key = _shard(tmp_path, "s2", [("c-x", "c", _layout([1, 2, 3, 4]))], key={**KEY, "configs": 8})
    with pytest.raises(ValueError, match="cpu_model.*never merged"):
        merge_shards([a, other_cpu], [], tmp_path / "m1")
    with pytest.raises(ValueError, match="key 'collection'"):
        merge_shards([a, other_key], [], tmp_path / "m2")
    dup = _shard(tmp_path, "s3", [("a-x", "a", _layout([1, 2, 3, 4]))])
    with pytest.raises(ValueError, match="also in shard"):
        merge_shards([a, dup], [], tmp_path / "m3")
    assert not any((tmp_path / m).exists() for m in ("m1", "m2", "m3"))


def test_a_program_that_cannot_be_prepared_is_skipped_and_recorded(tmp_path, monkeypatch):
    """A long collection never dies on one program: it is skipped, said and recorded in the manifest."""
    pytest.importorskip("jax")
    from graphcost.collect import local
    from graphcost.collect.jobs import CollectOptions
    from graphcost.frontend.programs.zoo import get_program

    def broken(spec, options):
        raise TypeError(f"{spec.name}: this JAX has no such function\nsecond line")

    monkeypatch.setattr(local, "prepare_job", broken)
    specs = [get_program("mlp-d1-w64-b8-fwd"), get_program("mlp-d2-w64-b8-fwd")]
    manifest = local.collect(specs, tmp_path / "out", CollectOptions(space="layout", configs=2), progress=False)
    assert manifest["graphs"] == {}
    assert set(manifest["skipped"]) == {s.name for s in specs}
    assert manifest["skipped"]["mlp-d1-w64-b8-fwd"]["reason"] == \
        "TypeError: mlp-d1-w64-b8-fwd: this JAX has no such function"
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["skipped"]
