"""graphcost.collect.merge (release/merge_collections.py): several collections as one training directory (what the
shipped flag model trains on: cpu_zoo_flags + cpu_zoo_flags_tuner)."""

import json
import shutil

from collection_stubs import tiny_flag_collection

from graphcost.collect.merge import merge


def test_merge_keeps_the_first_collections_split_and_the_union_of_flag_columns(tmp_path):
    zoo = tiny_flag_collection(tmp_path / "zoo", {"a1": ("a", "train"), "b1": ("b", "valid"), "c1": ("c", "test")},
                      ["x", "y", "fast"])
    tuner = tiny_flag_collection(tmp_path / "tuner", {"a1": ("a", "train"), "b1": ("b", "train"), "d1": ("d", "valid")},
                        ["x", "y", "z"])
    out = merge([zoo, tuner], tmp_path / "out")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["collection"]["flag_columns"] == ["x", "y", "fast", "z"]
    split = {name: e["split"] for name, e in manifest["graphs"].items()}
    # b1 is a validation program of the first collection: its second graph stays on the validation side
    assert split == {"a1": "train", "b1": "valid", "c1": "test", "a1__tuner": "train", "b1__tuner": "valid",
                     "d1__tuner": "valid"}
    assert all((out / e["file"]).is_file() for e in manifest["graphs"].values())
    assert sorted(p.name for p in (out / "valid").glob("*.npz")) == ["b1.npz", "b1__tuner.npz", "d1__tuner.npz"]
    shutil.rmtree(tuner / "train")  # OUT is replaced, not added to
    (tuner / "manifest.json").write_text(json.dumps({"collection": {"space": "flags"}, "graphs": {}}))
    out = merge([zoo, tuner], tmp_path / "out")
    assert sorted(json.loads((out / "manifest.json").read_text())["graphs"]) == ["a1", "b1", "c1"]
