"""A kernel collection's repeat is a second collection beside it (ROOT_repeat): the card compares the two
collections' program labels (graphcost.collect.card.sibling_repeat)."""

from __future__ import annotations

import json

import numpy as np

from graphcost.collect.card import sibling_repeat


def _collection(root, labels: dict, configs: dict) -> dict:
    graphs = {}
    for name, label in labels.items():
        (root / "train").mkdir(parents=True, exist_ok=True)
        np.savez(root / "train" / f"{name}.npz", config_feat=configs[name], config_runtime=np.asarray(label, np.int64))
        graphs[name] = {"file": f"train/{name}.npz", "family": "mlp", "date_utc": "2026-12-04T08:00:00"}
    (root / "manifest.json").write_text(json.dumps({"graphs": graphs}))
    return graphs


def test_the_repeat_beside_a_collection_gives_each_common_program_its_label_agreement(tmp_path):
    feat = {n: np.arange(12, dtype=np.float32).reshape(4, 3) for n in ("a", "b", "c")}
    graphs = _collection(tmp_path / "col", {"a": [1, 2, 3, 4], "b": [4, 3, 2, 1], "c": [1, 2, 3, 4]}, feat)
    other = dict(feat, c=feat["c"][::-1].copy())  # c was measured at other configurations: not comparable
    _collection(tmp_path / "col_repeat", {"a": [10, 20, 30, 40], "b": [1, 2, 3, 4], "c": [1, 2, 3, 4]}, other)
    graphs["b"]["repeat"] = {"spearman_vs_label": 0.5}  # a --repeat entry of its own wins
    found = sibling_repeat(tmp_path / "col", graphs)
    assert set(found) == {"a"} and found["a"]["spearman_vs_label"] == 1.0
    assert found["a"]["collection"] == "col_repeat"
    assert sibling_repeat(tmp_path / "col_repeat", graphs) == {}  # nothing beside the repeat itself
