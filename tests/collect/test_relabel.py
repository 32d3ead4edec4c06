"""`graphcost collect --action relabel` / `relabel_collection`: every label recomputed from the stored
per-process samples with another statistic, the manifest's statistics and key with it; a resume with
another statistic than the collection's is refused in one line that names both ways out."""

import json
from dataclasses import replace

import numpy as np
import pytest
from cli_asserts import invoke, one_line_error

from graphcost.collect.jobs import CollectOptions
from graphcost.collect.local import load_manifest, read_graph, relabel_collection, save_arrays
from graphcost.measure.cross_process import CrossProcess, combine

OPTIONS = CollectOptions(space="layout", mode="both", configs=2, seed=0, label="median",
                         cross=CrossProcess(processes=3, measure_core=-1))
SAMPLES = np.array([[100, 102, 104], [101, 103, 101]], np.int64)  # (K, P): p2 flips the order under a plain median


def _collection(root):
    arrays = {"node_feat": np.zeros((3, 140), np.float32), "node_opcode": np.array([1, 2, 3], np.int64),
              "edge_index": np.array([[1, 0], [2, 1]], np.int64), "node_config_ids": np.array([1], np.int64),
              "node_config_feat": np.zeros((2, 1, 18), np.float32), "node_splits": np.zeros((1, 0), np.int64),
              "config_runtime": np.median(SAMPLES, axis=1).astype(np.int64), "config_runtime_samples": SAMPLES,
              "config_runtime_repeat_samples": SAMPLES[:, ::-1].copy()}
    save_arrays(arrays, root / "train" / "mlp-a.npz", "layout")
    entry = {"file": "train/mlp-a.npz", "split": "train", "family": "mlp", "spread": 1.0,
             "repeat": {"spearman_vs_label": 0.0, "processes": []}}
    (root / "manifest.json").write_text(json.dumps({"collection": OPTIONS.key(), "graphs": {"mlp-a": entry}}))
    return root


def test_relabel_recomputes_labels_statistics_and_the_key(tmp_path):
    root = _collection(tmp_path / "c")
    level = replace(OPTIONS, label="level-median")
    with pytest.raises(ValueError, match="labels are the median over processes.*--label median.*--action relabel"):
        load_manifest(root, level)
    manifest = relabel_collection(root, level)
    stored = read_graph(root / "train" / "mlp-a.npz")
    expected = np.round(combine(SAMPLES, "level-median")).astype(np.int64)
    np.testing.assert_array_equal(stored["config_runtime"], expected)
    assert stored["config_runtime"][0] < stored["config_runtime"][1]  # the plain median had them the other way
    np.testing.assert_array_equal(stored["config_runtime_samples"], SAMPLES)  # the measurements are untouched
    entry = json.loads((root / "manifest.json").read_text())["graphs"]["mlp-a"]
    assert entry["runtime_ns_min"] == float(combine(SAMPLES, "level-median").min())
    assert entry["repeat"]["spearman_vs_label"] == 1.0  # the reversed processes give the same level-median
    assert manifest["collection"]["label"] == "level-median" and load_manifest(root, level)["graphs"]
    relabel_collection(root, level)  # idempotent: finishes an interrupted relabel
    np.testing.assert_array_equal(read_graph(root / "train" / "mlp-a.npz")["config_runtime"], expected)


def test_relabel_refuses_a_collection_of_other_parameters(tmp_path):
    root = _collection(tmp_path / "c")
    with pytest.raises(ValueError, match="key 'collection'"):
        relabel_collection(root, replace(OPTIONS, configs=8, label="level-median"))
    with pytest.raises(ValueError, match="no collection here"):
        relabel_collection(tmp_path / "none", OPTIONS)
    manifest = json.loads((root / "manifest.json").read_text())
    for bad, match in (({**manifest, "collection": [1]}, "key 'collection'"),
                       ({**manifest, "collection": {**manifest["collection"], "label": "mean"}},
                        "'collection.label' must be one of level-median, median, got 'mean'")):
        (root / "manifest.json").write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=match):
            relabel_collection(root, OPTIONS)


def test_collect_label_option_is_checked():
    one_line = invoke("collect", "--label", "mean", "--list")
    assert one_line.exit_code == 2 and "--label must be one of level-median, median" in one_line.output
    both = invoke("collect", "--relabel", "--repeat", "--list")  # the deprecated flags: one action at a time
    assert both.exit_code == 2 and "--relabel and --repeat: one action at a time" in both.output


def test_collect_relabel_on_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")  # what the command sets (--single-thread)
    root = _collection(tmp_path / "c")
    result = invoke("collect", "--out", root, "--action", "relabel", "--configs", "2", "--processes", "3", "--measure-core", "-1")
    assert result.exit_code == 0, result.output
    assert "relabelled 1 graphs" in result.output
    again = invoke("collect", "--out", root, "--action", "relabel", "--configs", "8")
    one_line_error(again, "key 'collection'")


def test_collect_and_repeat_refuse_a_collection_measured_on_another_cpu(tmp_path):
    """Measuring into a collection of another CPU model would mix two machines' labels: `collect` and
    `repeat` refuse in one line naming the file, the key and both CPUs; relabelling measures nothing
    and stays allowed."""
    from graphcost.collect.local import collect, repeat_collection

    root = _collection(tmp_path / "c")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["environment"] = {"host": {"cpu_model": "A CPU graphcost never ran on"}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    for run in (lambda: collect([], root, OPTIONS, progress=False), lambda: repeat_collection(root, OPTIONS)):
        with pytest.raises(ValueError, match=r"manifest\.json: key 'environment\.host\.cpu_model' is 'A CPU graphcost "
                                             r"never ran on', but this machine's CPU is .*measure into another --out"):
            run()
    relabel_collection(root, OPTIONS)



@pytest.mark.parametrize("flag", ["--relabel", "--annotate", "--add-processes", "--repeat"])
def test_the_old_mode_flags_still_work_for_one_release_with_a_warning(flag):
    """issue 66: the four mode flags became `--action`; each old flag is that action, with a deprecation warning."""
    result = invoke("collect", flag, "--list")
    assert result.exit_code == 0, result.output
    assert f"warning: {flag} is deprecated" in result.output and f"use --action {flag[2:]}" in result.output
    clash = invoke("collect", flag, "--action", "repeat" if flag != "--repeat" else "relabel", "--list")
    assert clash.exit_code == 2 and "one action at a time" in clash.output


def test_an_unknown_action_is_a_usage_error_naming_the_choices():
    result = invoke("collect", "--action", "remeasure", "--list")
    assert result.exit_code == 2 and "--action must be one of measure, repeat, relabel, annotate, add-processes" in \
        result.output
