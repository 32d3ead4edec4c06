"""`graphcost collect --action annotate` / `annotate_collection`: what the compiler did to each configuration
(`config_compiled_stats`, `config_executable_ids`) added to the graphs of a collection made without
it, labels pooled per executable; idempotent; the configurations must be the file's, the CPU the
collection's."""

import json

import numpy as np
import pytest
from cli_asserts import invoke, one_line_error

from graphcost.collect.jobs import CollectOptions, prepare_job
from graphcost.collect.local import COMPILED_KEY, EXECUTABLE_KEY, annotate_collection, read_graph, save_arrays
from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS
from graphcost.measure.cross_process import CrossProcess, check_executable_ids, combine

pytest.importorskip("jax")
NAME = "mlp-d1-w64-b8-fwd"
OPTIONS = CollectOptions(space="layout", mode="both", configs=3, seed=0, cross=CrossProcess(processes=1, measure_core=-1))


def _collection(root, tamper: bool = False):
    from graphcost.frontend.programs.zoo import get_program

    arrays = dict(prepare_job(get_program(NAME), OPTIONS).arrays)
    if tamper:
        arrays["node_config_feat"] = arrays["node_config_feat"][::-1].copy()
    samples = np.array([[100], [120], [110]], np.int64)
    arrays.update(config_runtime=samples[:, 0].copy(), config_runtime_samples=samples)
    save_arrays(arrays, root / "train" / f"{NAME}.npz", "layout")
    entry = {"file": f"train/{NAME}.npz", "split": "train", "family": "mlp"}
    (root / "manifest.json").write_text(json.dumps({"collection": OPTIONS.key(), "graphs": {NAME: entry}}))
    return root


def test_annotate_adds_the_compiled_statistics_once(tmp_path):
    root = _collection(tmp_path / "c")
    manifest = annotate_collection(root, OPTIONS, progress=False)
    stored = read_graph(root / "train" / f"{NAME}.npz")
    stats = stored[COMPILED_KEY]
    assert stats.shape == (3, len(COMPILED_STATS)) and np.all(np.isfinite(stats)) and np.all(stats >= 0)
    assert manifest["compiled_stats"] == list(COMPILED_STATS)
    ids = check_executable_ids(stored[EXECUTABLE_KEY], 3)
    assert np.array_equal(stored["config_runtime_samples"][:, 0], [100, 120, 110])  # the measurements are untouched
    assert np.array_equal(stored["config_runtime"], np.round(combine(stored["config_runtime_samples"], "median", ids)))
    assert manifest["graphs"][NAME]["num_executables"] == len(set(ids.tolist()))
    mtime = (root / "train" / f"{NAME}.npz").stat().st_mtime_ns
    annotate_collection(root, OPTIONS, progress=False)  # nothing left to do: the file is not rewritten
    assert (root / "train" / f"{NAME}.npz").stat().st_mtime_ns == mtime


def test_annotate_refuses_other_configurations(tmp_path):
    root = _collection(tmp_path / "c", tamper=True)
    with pytest.raises(ValueError, match=f"{NAME}.npz: key 'node_config_feat' differs"):
        annotate_collection(root, OPTIONS, progress=False)
    with pytest.raises(ValueError, match="no collection here to annotate"):
        annotate_collection(tmp_path / "none", OPTIONS, progress=False)


@pytest.mark.parametrize("other", ["--relabel", "--repeat"])
def test_annotate_takes_no_other_mode(other):
    result = invoke("collect", "--annotate", other, "--list")
    assert result.exit_code == 2 and "--annotate" in result.output and "Traceback" not in result.output


def test_annotate_on_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")  # what the command sets (--single-thread)
    root = _collection(tmp_path / "c")
    result = invoke("collect", "--out", root, "--action", "annotate", "--configs", "3", "--processes", "1", "--measure-core", "-1")
    assert result.exit_code == 0, result.output
    assert "1 graphs in" in result.output and COMPILED_KEY in read_graph(root / "train" / f"{NAME}.npz")
    one_line_error(invoke("collect", "--out", root, "--action", "annotate", "--configs", "8", "--processes", "1",
                          "--measure-core", "-1"), "manifest")


def test_annotate_names_a_damaged_file(tmp_path):
    root = _collection(tmp_path / "c")
    (root / "train" / f"{NAME}.npz").write_bytes(b"not an npz")
    with pytest.raises(ValueError, match=f"{NAME}.npz: cannot read the collected graph"):
        annotate_collection(root, OPTIONS, progress=False)


def test_annotate_pools_the_labels_of_configurations_that_compile_to_one_executable(tmp_path):
    """Two copies of one configuration are one executable: annotate gives them one label."""
    root = _collection(tmp_path / "c")
    path = root / "train" / f"{NAME}.npz"
    stored = read_graph(path)
    for key in ("node_config_feat", "config_runtime", "config_runtime_samples"):
        stored[key] = stored[key][[0, 1, 2, 0]]
    stored["config_runtime_samples"] = np.array([[100], [120], [110], [104]], np.int64)
    save_arrays(stored, path, "layout")
    dup = CollectOptions(space="layout", mode="both", configs=4, seed=0, cross=OPTIONS.cross)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["collection"] = dup.key()
    (root / "manifest.json").write_text(json.dumps(manifest))
    import graphcost.collect.local as local

    real = local.prepare_job

    def with_a_copy(spec, options):  # the same configurations as the file: the first one twice
        import dataclasses

        gj = real(spec, OPTIONS)
        order = [0, 1, 2, 0]
        arrays = {**gj.arrays, "node_config_feat": gj.arrays["node_config_feat"][order]}
        return dataclasses.replace(gj, arrays=arrays, lower=lambda: [gj.lower()[i] for i in order],
                                   compiler_options=[gj.compiler_options[i] for i in order])

    local.prepare_job = with_a_copy
    try:
        annotate_collection(root, dup, progress=False)
    finally:
        local.prepare_job = real
    stored = read_graph(path)
    assert stored[EXECUTABLE_KEY][3] == 0 and stored["config_runtime"][0] == stored["config_runtime"][3] == 102


def test_annotate_refuses_a_collection_of_another_cpu(tmp_path):
    root = _collection(tmp_path / "c")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["environment"] = {"host": {"cpu_model": "A CPU graphcost never ran on"}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="key 'environment.host.cpu_model' is 'A CPU graphcost never ran on'"):
        annotate_collection(root, OPTIONS, progress=False)


@pytest.mark.parametrize("run", ["repeat", "relabel"])
def test_bad_executable_ids_are_named_with_their_file_before_anything_is_measured(tmp_path, run):
    from graphcost.collect.local import relabel_collection, repeat_collection

    root = _collection(tmp_path / "c")
    path = root / "train" / f"{NAME}.npz"
    stored = read_graph(path)
    stored[EXECUTABLE_KEY] = np.array([0, 2, 2])  # config 1 points past itself
    save_arrays(stored, path, "layout")
    with pytest.raises(ValueError, match=rf"{NAME}\.npz: key '{EXECUTABLE_KEY}': each entry must be the index"):
        (repeat_collection if run == "repeat" else relabel_collection)(root, OPTIONS)
    assert "config_runtime_repeat_samples" not in read_graph(path)
