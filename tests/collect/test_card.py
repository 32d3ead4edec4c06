"""The data card's repeatability table is computed from the manifest, with the target applied."""

import json

from graphcost.collect.card import render, repeatability


def _entry(family, rho, within=0.99, flagged=False, split="train"):
    return {"family": family, "split": split, "hparams": {"mode": "fwd"}, "num_nodes": 10, "num_configurable": 2,
            "runtime_ns_min": 1e5, "runtime_ns_max": 2e5, "spread": 2.0, "noise_ratio": 0.05,
            "process_spearman_mean": within, "flagged": flagged, "total_s": 10.0, "compile_s": 2.0,
            "date_utc": "2026-11-25T00:00:00Z",
            "processes": [{"load_start": [0.5, 0.5, 0.5], "waited_s": 0.0, "compile_or_load_s": 1.0}],
            "repeat": {"spearman_vs_label": rho, "date_utc": "2026-11-25T01:00:00Z"}}


def test_repeatability_by_family_and_target(tmp_path):
    graphs = {f"a{i}": _entry("a", r) for i, r in enumerate([0.95, 0.93, 0.97, 0.91])}
    graphs.update({f"b{i}": _entry("b", r, flagged=i == 0) for i, r in enumerate([0.95, 0.5, 0.92])})
    rows, overall = repeatability(graphs)
    a, b = rows
    assert a["met"] and a["median"] == 0.94 and a["share_ge_floor"] == 1.0
    assert not b["met"] and b["min"] == 0.5 and b["flagged"] == 1  # 2 of 3 >= 0.8: below 90%
    assert overall["graphs"] == 7 and not overall["met"]
    (tmp_path / "manifest.json").write_text(json.dumps({
        "collection": {"space": "layout", "configs": 64, "processes": 3, "rounds": 7, "calls": 5, "warmup": 2,
                       "xla_flags": "--xla_cpu_multi_thread_eigen=false"},
        "environment": {"cross_process": {"measure_core": 1, "max_wait_s": 300, "max_load": 1.5}},
        "graphs": graphs}))
    card = render(tmp_path, "test", "graphcost collect ...")
    assert "| a | 4 | 0.940 |" in card and "**Not met** for: b" in card and "0.500 ⚠" in card


def test_layout_card_gives_the_repeat_agreement_by_search_mode(tmp_path):
    import numpy as np

    from graphcost.collect.local import save_arrays

    label = np.array([100, 101, 102, 103, 200, 300, 400, 500], np.int64)
    repeat = np.array([103, 100, 102, 101, 210, 290, 420, 480], np.int64)  # near-equal half reordered
    modes = np.array(["default"] * 4 + ["random"] * 4)
    arrays = {"node_feat": np.zeros((3, 140), np.float32), "node_opcode": np.array([1, 2, 3], np.int64),
              "edge_index": np.array([[1, 0], [2, 1]], np.int64), "node_config_ids": np.array([1], np.int64),
              "node_config_feat": np.zeros((8, 1, 18), np.float32), "node_splits": np.zeros((1, 0), np.int64),
              "config_runtime": label, "config_search_mode": modes,
              "config_runtime_repeat_samples": np.stack([repeat] * 3, axis=1)}
    save_arrays(arrays, tmp_path / "train" / "g.npz", "layout")
    graphs = {"g": {**_entry("a", 0.9), "file": "train/g.npz"}}
    (tmp_path / "manifest.json").write_text(json.dumps({
        "collection": {"space": "layout", "configs": 8, "processes": 3, "rounds": 5, "calls": 5, "warmup": 2,
                       "label": "level-median"}, "graphs": graphs}))
    card = render(tmp_path, "test", "graphcost collect ...")
    assert "`default` median ρ -0.400 (1 graphs); `random` median ρ 1.000 (1 graphs)" in card
    assert "level-normalised median" in card


def test_card_of_a_missing_or_damaged_collection_is_a_one_line_error(tmp_path):
    from typer.testing import CliRunner

    from cli_asserts import one_line_error
    from graphcost.cli import app

    def card():
        return CliRunner().invoke(app, ["data", "card", str(tmp_path)])

    one_line_error(card(), str(tmp_path), "manifest.json")
    (tmp_path / "manifest.json").write_text("{")
    one_line_error(card(), str(tmp_path), "cannot write a card")
    (tmp_path / "manifest.json").write_text('{"graphs": {}}')
    one_line_error(card(), str(tmp_path), "missing key 'collection'")
    assert not (tmp_path / "CARD.md").exists()


def test_flag_card_names_the_options_it_varied(tmp_path):
    graphs = {f"a{i}": _entry("a", 0.95) for i in range(2)}
    col = {"space": "flags", "configs": 64, "processes": 3, "rounds": 7, "calls": 5, "warmup": 2, "xla_flags": ""}
    env = {"cross_process": {"measure_core": 1, "max_wait_s": 300, "max_load": 1.5}}
    for key, expect in (({"flag_columns": ["backend_optimization_level", "onednn"]},
                         "varying 2 options (backend_optimization_level, onednn)"),
                        ({"flag_columns": ["onednn"], "mode": "tuner"}, "as `graphcost tune` spreads its candidates "
                         "(search mode `tuner`; `config_search_mode`: random | default)"),
                        ({}, "varying the first 7 options")):
        (tmp_path / "manifest.json").write_text(json.dumps({"collection": {**col, **key}, "environment": env,
                                                            "graphs": graphs}))
        assert expect in render(tmp_path, "test", "graphcost collect ...")
    assert "Executables" not in render(tmp_path, "test", "c")  # no executable ids: nothing said about them
    graphs["a0"]["num_executables"], graphs["a1"]["num_executables"] = 20, 26
    (tmp_path / "manifest.json").write_text(json.dumps({"collection": col, "environment": env, "graphs": graphs}))
    assert ("2 of 2 graphs have it, with a median 23 distinct executables of 64 configurations (min 20)"
            in render(tmp_path, "test", "c"))


def test_card_says_how_the_graphs_were_split(tmp_path):
    graphs = {"a0": _entry("a", 0.95), "a1": _entry("a", 0.95), "b0": _entry("b", 0.9, split="valid"),
              "c0": _entry("c", 0.9, split="test")}
    col = {"space": "layout", "configs": 32, "processes": 3, "rounds": 5, "calls": 5, "warmup": 2, "xla_flags": ""}
    env = {"cross_process": {"measure_core": 1, "max_wait_s": 60, "max_load": 2.0}}
    manifest = {"collection": col, "environment": env, "graphs": graphs}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert "stratified by family: train 2, valid 1, test 1" in render(tmp_path, "t", "c")
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "split": {"by": "family"}}))
    assert "graphs train 2, valid 1, test 1; families train 1, valid 1, test 1" in render(tmp_path, "t", "c")
