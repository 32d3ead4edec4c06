"""The shipped wide zoo (``cpu_zoo_layout``, issue 33): as wide as promised, split by family, its labels
repeatable, and every configuration carrying what the compiler did to it."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict

import numpy as np

from graphcost.datasets import shipped_dataset_dir
from graphcost.frontend.collect.local import COMPILED_KEY
from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS

ZOO = shipped_dataset_dir("cpu_zoo_layout")
GRAPHS: dict = json.loads((ZOO / "manifest.json").read_text())["graphs"]


def test_the_zoo_is_wide():
    assert len(GRAPHS) >= 300
    assert len({e["family"] for e in GRAPHS.values()}) >= 25
    assert min(e["num_configs"] for e in GRAPHS.values()) >= 32
    steps = sum(e["hparams"].get("mode") == "train" for e in GRAPHS.values())
    assert steps >= len(GRAPHS) / 3, f"{steps} training steps of {len(GRAPHS)} programs"


def test_split_by_family():
    sides: dict[str, set] = defaultdict(set)
    for name, e in GRAPHS.items():
        sides[e["family"]].add(e["split"])
        assert e["file"] == f"{e['split']}/{name}.npz" and (ZOO / e["file"]).is_file(), name
    assert all(len(s) == 1 for s in sides.values()), {f: s for f, s in sides.items() if len(s) > 1}
    families = {side: sum(s == {side} for s in sides.values()) for side in ("train", "valid", "test")}
    assert families["valid"] >= 2 and families["test"] >= 2 and families["train"] >= 15, families
    on_disk = sorted(p.relative_to(ZOO).as_posix() for p in ZOO.rglob("*.npz"))
    assert on_disk == sorted(e["file"] for e in GRAPHS.values())


def test_an_independent_repeat_of_a_tenth_agrees():
    rho = [e["repeat"]["spearman_vs_label"] for e in GRAPHS.values() if "repeat" in e]
    assert len(rho) >= 0.1 * len(GRAPHS)
    assert statistics.median(rho) >= 0.9


def test_every_configuration_carries_what_the_compiler_did():
    for e in GRAPHS.values():
        with np.load(ZOO / e["file"], allow_pickle=False) as z:
            stats = z[COMPILED_KEY]
            assert stats.shape == (len(z["config_runtime"]), len(COMPILED_STATS)) and np.isfinite(stats).all(), e["file"]
