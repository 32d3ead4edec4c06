"""The library owns its guards (issue 65): every library function a command calls to write to a user-given path
checks that path itself, before any work, so a Python caller gets the same refusals as the command line. Each
test calls the LIBRARY function directly with a bad output (a file where a directory goes, a path inside the
input, an existing output without overwrite, /proc/x) and asserts the typed error, its message naming the
Python argument, and that nothing was written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphcost.guards.atomic import OutputExistsError, OutputPathError


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative path -> bytes) and every directory (-> b'<dir>')."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(root.rglob("*"))}


@pytest.fixture
def ws(tmp_path) -> Path:
    """A workspace with a plain file `file` in it, and a training run `run/` (run.json, checkpoint.pt)."""
    (tmp_path / "file").write_text("keep")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    (tmp_path / "run" / "checkpoint.pt").write_text("weights")
    return tmp_path


def _graph(path: Path) -> Path:
    """A small labelled TpuGraphs-schema tile npz (what `split_by_configuration` and `stats_for_path` read)."""
    rng = np.random.default_rng(0)
    np.savez(path, node_feat=rng.random((4, 140), dtype=np.float32), node_opcode=np.array([1, 2, 3, 4], np.uint8),
             edge_index=np.array([[1, 0], [2, 1], [3, 2]], np.int64), config_feat=rng.random((6, 24), dtype=np.float32),
             config_runtime=rng.random(6) + 1.0, config_runtime_normalizers=np.ones(6))
    return path


def test_download_collection_checks_its_root_before_any_download(ws):
    from graphcost.data.io.download import download_collection

    def opener(*args, **kwargs):  # never reached: the root is refused first
        raise AssertionError("downloaded")

    before = _tree(ws)
    with pytest.raises(OutputPathError, match=f"^root {ws / 'file'}: is a file"):
        download_collection("tile:xla", ws / "file", opener=opener, progress=False)
    with pytest.raises(OutputPathError, match="^root /proc/graphcost-x: lies on a virtual file system"):
        download_collection("tile:xla", "/proc/graphcost-x", opener=opener, progress=False)
    with pytest.raises(OutputPathError, match="^--data-dir "):  # the command's name for it
        download_collection("tile:xla", ws / "file" / "below", opener=opener, progress=False, option="--data-dir")
    assert _tree(ws) == before


def test_write_synthetic_collection_checks_its_root_and_settings(ws):
    from graphcost.data.synth.collection import write_synthetic_collection

    before = _tree(ws)
    small = dict(num_graphs=2, max_nodes=12, max_configs=4, progress=False)
    with pytest.raises(OutputPathError, match=f"^root {ws / 'file'}: is a file; expected the data root"):
        write_synthetic_collection(ws / "file", "tile:xla", **small)
    with pytest.raises(OutputPathError, match="^root /proc/graphcost-x: lies on a virtual file system"):
        write_synthetic_collection("/proc/graphcost-x", "tile:xla", **small)
    with pytest.raises(OutputExistsError, match="holds a run"):
        write_synthetic_collection(ws / "run", "tile:xla", **small)
    with pytest.raises(ValueError, match="^layout_pad must be 0 or -1"):
        write_synthetic_collection(ws / "new", "tile:xla", layout_pad=0.5, **small)
    with pytest.raises(ValueError, match="^min_nodes 20 is above max_nodes 12"):
        write_synthetic_collection(ws / "new", "tile:xla", min_nodes=20, **small)
    assert _tree(ws) == before


def test_stats_for_path_checks_its_json_before_reading(ws):
    from graphcost.data.stats import stats_for_path

    graph = _graph(ws / "g.npz")
    before = _tree(ws)
    with pytest.raises(OutputExistsError, match=f"^json_out {ws / 'file'}: already exists"):
        stats_for_path(graph, json_out=ws / "file")
    with pytest.raises(OutputPathError, match=f"^json_out {ws}: is a directory; give a file path such as "):
        stats_for_path(graph, json_out=ws, overwrite=True)
    with pytest.raises(OutputPathError, match=f"^json_out {graph}: is a file of the input path"):
        stats_for_path(graph, json_out=graph, overwrite=True)
    with pytest.raises(OutputPathError, match="^json_out /proc/graphcost-x.json: lies on a virtual file system"):
        stats_for_path(ws / "no-such-data", json_out="/proc/graphcost-x.json")  # before the data is looked at
    assert _tree(ws) == before
    rows = stats_for_path(graph, json_out=ws / "stats.json", validate=False)  # and a good one is written
    assert rows and (ws / "stats.json").is_file()


def test_split_by_configuration_checks_its_out_dir_before_reading(ws):
    from graphcost.data.config_split import split_by_configuration

    graph = _graph(ws / "g.npz")
    before = _tree(ws)
    with pytest.raises(OutputPathError, match=f"^out_dir {ws / 'file'}: is a file"):
        split_by_configuration(graph, ws / "file", 0.5, 0.25)
    with pytest.raises(OutputPathError, match="^out_dir /proc/graphcost-x: lies on a virtual file system"):
        split_by_configuration(graph, "/proc/graphcost-x", 0.5, 0.25)
    with pytest.raises(OutputPathError, match=f"^--out {ws / 'junk.npz'}: "):  # not read: junk is never opened
        split_by_configuration(ws / "junk.npz", ws / "junk.npz", 0.5, 0.25, option="--out", input_name="GRAPH")
    assert _tree(ws) == before


def test_write_kernel_dataset_checks_out_before_reading_the_collection(ws):
    from graphcost.kernels.table import write_kernel_dataset

    root = ws / "collection"  # never read: every call below is refused first
    root.mkdir()
    (ws / "full").mkdir()
    (ws / "full" / "x.npz").write_text("x")
    before = _tree(ws)
    with pytest.raises(OutputPathError, match=f"^out {ws / 'file'}: is a file"):
        write_kernel_dataset(root, ws / "file")
    with pytest.raises(OutputPathError, match=f"^out {root / 'kernels'}: lies inside the input table {root}"):
        write_kernel_dataset(root, root / "kernels")
    with pytest.raises(OutputExistsError, match="exists and is not empty"):
        write_kernel_dataset(root, ws / "full")
    with pytest.raises(OutputPathError, match="^out /proc/graphcost-x: lies on a virtual file system"):
        write_kernel_dataset(root, "/proc/graphcost-x")
    assert _tree(ws) == before


def test_convert_file_checks_its_out_dir_before_reading(ws):
    from graphcost.frontend.hlo.convert import convert_file

    before = _tree(ws)
    with pytest.raises(OutputPathError, match=f"^{ws / 'file'}: out_dir exists and is not a directory"):
        convert_file(ws / "missing.pb", ws / "file")
    with pytest.raises(OutputPathError, match="^out_dir /proc/graphcost-x: lies on a virtual file system"):
        convert_file(ws / "missing.pb", Path("/proc/graphcost-x"))
    assert _tree(ws) == before


def test_collection_verbs_check_out_and_cache(ws):
    from graphcost.collect.jobs import CollectOptions
    from graphcost.collect.local import annotate_collection, collect, relabel_collection, repeat_collection

    before = _tree(ws)
    with pytest.raises(OutputExistsError, match=f"^out_dir {ws / 'run'}: holds a training or tuning run"):
        collect([], ws / "run", CollectOptions(), progress=False)
    with pytest.raises(OutputPathError, match=f"^out_dir {ws / 'file'}: is a file"):
        relabel_collection(ws / "file", CollectOptions())
    with pytest.raises(OutputPathError, match="^out_dir /proc/graphcost-x: lies on a virtual file system"):
        repeat_collection("/proc/graphcost-x", CollectOptions(), progress=False)
    with pytest.raises(OutputPathError, match=f"^cache_dir {ws / 'file'}: is a file"):
        annotate_collection(ws / "new", CollectOptions(cache_dir=ws / "file"), progress=False)
    with pytest.raises(OutputExistsError, match="^--out .*not a collection"):
        collect([], ws, CollectOptions(), progress=False, names={"out_dir": "--out"})
    assert _tree(ws) == before


def test_profile_program_checks_its_outputs_before_loading_the_program(ws):
    from graphcost.workload.profile import profile_program

    before = _tree(ws)
    never = "no_such_program.py:make"  # loading it would fail: the outputs are refused first
    with pytest.raises(OutputExistsError, match=f"^json_out {ws / 'file'}: already exists"):
        profile_program(never, json_out=ws / "file")
    with pytest.raises(OutputPathError, match=f"^plot {ws}: is a directory"):
        profile_program(never, plot=ws, overwrite=True)
    with pytest.raises(OutputPathError, match="^--json /proc/graphcost-x: lies on a virtual file system"):
        profile_program(never, json_out="/proc/graphcost-x", names={"json_out": "--json"})
    assert _tree(ws) == before


def test_evaluate_run_and_predict_run_check_their_outputs_before_reading_the_run(ws):
    from graphcost.inference.verbs import evaluate_run, predict_run

    (ws / "data").mkdir()
    before = _tree(ws)
    run = ws / "run"
    with pytest.raises(OutputExistsError, match=f"^json_out {ws / 'file'}: already exists"):
        evaluate_run(run, json_out=ws / "file")
    with pytest.raises(OutputPathError, match="^json_out /proc/graphcost-x: lies on a virtual file system"):
        evaluate_run(ws / "no-such-run", json_out="/proc/graphcost-x")
    with pytest.raises(OutputPathError, match=f"^json_out {run / 'run.json'}: is a file of the input run"):
        evaluate_run(run, json_out=run / "run.json", overwrite=True)
    with pytest.raises(OutputPathError, match="^cache_dir .*inside the input data_dir"):
        evaluate_run(run, data_dir=ws / "data", cache_dir=ws / "data" / "cache")
    with pytest.raises(OutputPathError, match=f"^cache_dir {ws / 'file'}: is a file"):
        evaluate_run(run, cache_dir=ws / "file")
    with pytest.raises(OutputExistsError, match=f"^out {ws / 'file'}: already exists"):
        predict_run([run], ws / "file")
    with pytest.raises(OutputPathError, match=f"^out {run / 'checkpoint.pt'}: is a file of the input model"):
        predict_run([run], run / "checkpoint.pt", overwrite=True)
    with pytest.raises(OutputPathError, match=f"^out {ws / 'file'}: is a file of the input csv"):
        predict_run([ws / "file"], ws / "file", overwrite=True, combine=True)
    with pytest.raises(OutputPathError, match="^out /proc/graphcost-x.csv: lies on a virtual file system"):
        predict_run([ws / "no-such-run"], "/proc/graphcost-x.csv")
    assert _tree(ws) == before


def test_dag_verbs_check_their_outputs_before_loading_anything(ws):
    from graphcost.layerdag.dag_verbs import evaluate_dag_run, sample_to_file, train_dag_run

    model = ws / "no-such-model"  # never loaded: every call below is refused first
    before = _tree(ws)
    with pytest.raises(OutputExistsError, match=f"^out {ws / 'file'}: already exists"):
        sample_to_file(model, ws / "file", n=2)
    with pytest.raises(ValueError, match="^out .*give a .npz path"):
        sample_to_file(model, ws / "samples.png", n=2)
    with pytest.raises(OutputPathError, match="^out /proc/graphcost-x.npz: lies on a virtual file system"):
        sample_to_file(model, "/proc/graphcost-x.npz", n=2)
    with pytest.raises(OutputPathError, match=f"^out {ws / 'run' / 'run.json'}: is a file of the input model_path"):
        sample_to_file(ws / "run", ws / "run" / "run.json", n=2, overwrite=True)
    with pytest.raises(ValueError, match="^final_step must be mode or sample"):
        sample_to_file(model, ws / "new.npz", final_step="last")
    with pytest.raises(FileNotFoundError, match=f"^model_path {model}: no such run directory"):
        sample_to_file(model, ws / "new.npz")
    with pytest.raises(OutputExistsError, match=f"^json_out {ws / 'file'}: already exists"):
        evaluate_dag_run(model, json_out=ws / "file")
    with pytest.raises(OutputPathError, match="^json_out /proc/graphcost-x: lies on a virtual file system"):
        evaluate_dag_run(model, json_out="/proc/graphcost-x")
    with pytest.raises(OutputPathError, match=f"^out {ws / 'file'}: is a file"):
        train_dag_run("lp", ws / "file")
    with pytest.raises(OutputExistsError, match=f"^out {ws / 'run'}: already holds"):
        train_dag_run("lp", ws / "run")
    with pytest.raises(FileNotFoundError, match="^resume: .*checkpoint.pt does not exist"):
        train_dag_run("lp", ws / "new-run", resume=True)
    with pytest.raises(ValueError, match="^fold 1 needs folds K"):
        train_dag_run("lp", ws / "new-run", fold=1)
    assert _tree(ws) == before


def test_tuning_run_dir_refuses_what_is_no_tuning_run(ws):
    from graphcost.tuning.tuning_run_dir import tuning_run_dir

    (ws / "prog").mkdir()
    (ws / "prog" / "make.py").write_text("def make():\n    pass\n")
    before = _tree(ws)
    with pytest.raises(OutputExistsError, match="^out .*not a run directory .* holds the program's source make.py"):
        tuning_run_dir(ws / "prog", f"{ws / 'prog' / 'make.py'}:make")
    with pytest.raises(FileNotFoundError, match="^resume: .*study.db does not exist"):
        tuning_run_dir(ws / "new", resume=True)
    with pytest.raises(OutputPathError, match=f"^{ws / 'file'}: out must be a directory"):
        tuning_run_dir(ws / "file")
    with pytest.raises(OutputPathError, match="^out /proc/graphcost-x: lies on a virtual file system"):
        tuning_run_dir("/proc/graphcost-x")
    assert _tree(ws) == before


def test_fit_names_its_outputs_as_the_caller_asks(ws):
    import graphcost
    from graphcost.datasets import shipped_dataset_dir

    spec = graphcost.RunSpec(data_dir=str(shipped_dataset_dir("cpu_layout")), max_graphs=2)
    before = _tree(ws)
    with pytest.raises(OutputPathError, match="^--out /proc/graphcost-x: lies on a virtual file system"):
        graphcost.fit(spec, "/proc/graphcost-x", names={"out": "--out"})
    with pytest.raises(OutputPathError, match=f"^cache_dir {ws / 'file'}: "):
        graphcost.fit(spec, ws / "new-run", cache_dir=ws / "file")
    assert _tree(ws) == before


def test_collection_verbs_bound_the_configurations_per_process(ws, monkeypatch):
    from graphcost.collect.jobs import CollectOptions
    from graphcost.collect.local import collect
    from graphcost.measure import memory_maps

    monkeypatch.setattr(memory_maps, "max_map_count", lambda: 65530)
    before = _tree(ws)
    with pytest.raises(ValueError, match="^configs 1000000: one measuring process holds every configuration"):
        collect([], ws / "new", CollectOptions(configs=10**6), progress=False)
    assert _tree(ws) == before
