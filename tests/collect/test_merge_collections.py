"""graphcost.collect.merge (release/merge_collections.py): several collections as one training directory (what the
shipped flag model trains on: cpu_zoo_flags + cpu_zoo_flags_tuner)."""

import json
import shutil
from pathlib import Path

import numpy as np

from graphcost.collect.merge import merge


def _collection(root: Path, graphs: dict[str, tuple[str, str]], columns: list[str]) -> Path:
    """A tiny flag collection: name -> (family, split); one empty-ish npz per graph."""
    entries = {}
    for name, (family, split) in graphs.items():
        (root / split).mkdir(parents=True, exist_ok=True)
        np.savez(root / split / f"{name}.npz", config_runtime=np.arange(3))
        entries[name] = {"family": family, "split": split, "file": f"{split}/{name}.npz"}
    (root / "manifest.json").write_text(json.dumps({"collection": {"space": "flags", "flag_columns": columns},
                                                    "graphs": entries}))
    return root


def test_merge_keeps_the_first_collections_split_and_the_union_of_flag_columns(tmp_path):
    zoo = _collection(tmp_path / "zoo", {"a1": ("a", "train"), "b1": ("b", "valid"), "c1": ("c", "test")},
                      ["x", "y", "fast"])
    tuner = _collection(tmp_path / "tuner", {"a1": ("a", "train"), "b1": ("b", "train"), "d1": ("d", "valid")},
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
