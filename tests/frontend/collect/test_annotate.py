"""`graphcost collect --annotate` / `annotate_collection`: what the compiler did to each configuration
(`config_compiled_stats`) added to the graphs of a collection made without it; idempotent; the
configurations must be the file's."""

import json

import numpy as np
import pytest
from cli_asserts import invoke, one_line_error

from graphcost.frontend.collect.jobs import CollectOptions, prepare_job
from graphcost.frontend.collect.local import COMPILED_KEY, annotate_collection, read_graph, save_arrays
from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS
from graphcost.frontend.measure.cross_process import CrossProcess

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
    assert np.array_equal(stored["config_runtime"], [100, 120, 110])  # the measurements are untouched
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
    result = invoke("collect", "--out", root, "--annotate", "--configs", "3", "--processes", "1", "--measure-core", "-1")
    assert result.exit_code == 0, result.output
    assert "1 graphs in" in result.output and COMPILED_KEY in read_graph(root / "train" / f"{NAME}.npz")
    one_line_error(invoke("collect", "--out", root, "--annotate", "--configs", "8", "--processes", "1",
                          "--measure-core", "-1"), "manifest")


def test_annotate_names_a_damaged_file(tmp_path):
    root = _collection(tmp_path / "c")
    (root / "train" / f"{NAME}.npz").write_bytes(b"not an npz")
    with pytest.raises(ValueError, match=f"{NAME}.npz: cannot read the collected graph"):
        annotate_collection(root, OPTIONS, progress=False)
