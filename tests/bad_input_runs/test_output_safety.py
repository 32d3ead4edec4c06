"""Output safety (issue 19): an existing run directory or output file is refused unless --overwrite;
default run names are unique; `data synth` refuses a collection directory holding other data; the
loader refuses a dataset whose splits share a graph."""

import shutil
from pathlib import Path

from bad_runs import dag_cli
from cli_asserts import invoke, one_line_error

TRAIN_SMALL = ["--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "layout_dim=2",
               "--model-opt", "num_blocks=1", "--epochs", "1", "--batch-configs", "8", "--no-progress",
               "--device", "cpu"]  # fmt: skip


def _train(data_root, out, *extra):
    return invoke("train", "-c", "layout:xla:random", "--data-dir", data_root, *TRAIN_SMALL, "--out", out, *extra)


def test_train_refuses_an_existing_run_unless_overwrite(data_root, cost_copy):
    before = (cost_copy / "checkpoint.pt").read_bytes()
    one_line_error(_train(data_root, cost_copy), "--out", cost_copy, "--overwrite")
    assert (cost_copy / "checkpoint.pt").read_bytes() == before  # untouched
    (cost_copy / "stale.txt").write_text("from the old run")
    result = _train(data_root, cost_copy, "--overwrite")
    assert result.exit_code == 0, result.output
    assert not (cost_copy / "stale.txt").exists() and (cost_copy / "checkpoint.pt").is_file()  # replaced whole


def test_train_overwrite_refuses_a_directory_that_is_not_a_run(data_root, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("precious")
    one_line_error(_train(data_root, home, "--overwrite"), "--out", home, "not a run directory")
    assert (home / "thesis.tex").read_text() == "precious"


def test_train_into_an_empty_directory_is_fine(data_root, tmp_path):
    (tmp_path / "empty").mkdir()
    result = _train(data_root, tmp_path / "empty")
    assert result.exit_code == 0, result.output


def test_default_run_names_are_unique_within_one_second(tmp_path, monkeypatch):
    import time

    from graphcost.runs.run_dir import new_run_name

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(time, "strftime", lambda fmt, *a: "20260101-000000")  # both in the same second
    names = {new_run_name("tgraph") for _ in range(20)}
    assert len(names) == 20 and all((tmp_path / "runs" / n).is_dir() for n in names)


def test_two_default_runs_get_two_directories_and_latest_follows(data_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["train", "-c", "layout:xla:random", "--data-dir", data_root, *TRAIN_SMALL]
    for _ in range(2):
        assert invoke(*args).exit_code == 0
    runs = sorted(p for p in (tmp_path / "runs").iterdir() if not p.is_symlink())
    assert len(runs) == 2 and all((r / "checkpoint.pt").is_file() for r in runs)
    latest = tmp_path / "runs" / "latest"
    assert latest.is_symlink() and latest.resolve() in {r.resolve() for r in runs}
    assert (latest / "run.json").is_file()


def test_evaluate_json_refuses_an_existing_file(cost_run, tmp_path):
    option = "--json"
    target = tmp_path / "report.json"
    target.write_text("keep")
    one_line_error(invoke("evaluate", cost_run, "--device", "cpu", "--tta", "0", option, target), option, target,
                   "already exists")  # fmt: skip
    assert target.read_text() == "keep"
    result = invoke("evaluate", cost_run, "--device", "cpu", "--tta", "0", option, target, "--overwrite")
    assert result.exit_code == 0, result.output
    assert target.read_text() != "keep"


def test_predict_out_refuses_an_existing_file(cost_run, tmp_path):
    target = tmp_path / "sub.csv"
    target.write_text("keep")
    one_line_error(invoke("predict", cost_run, "--out", target, "--device", "cpu", "--tta", "0"), "--out", target,
                   "already exists")  # fmt: skip
    assert target.read_text() == "keep"


def test_data_stats_json_refuses_an_existing_file(data_root, tmp_path):
    target = tmp_path / "stats.json"
    target.write_text("keep")
    one_line_error(invoke("data", "stats", data_root, "--json", target), "--json", target, "already exists")
    assert target.read_text() == "keep"
    assert invoke("data", "stats", data_root, "--json", target, "--overwrite").exit_code == 0
    assert target.read_text().startswith("[")


def test_dag_outputs_refuse_existing_files(dag_run, tmp_path):
    out = tmp_path / "s.npz"
    sample = ["sample", dag_run, "-n", "1", "--tmax", "1", "--threads", "1", "--out", out]
    assert dag_cli(*sample).exit_code == 0
    one_line_error(dag_cli(*sample), "--out", out, "already exists")
    out.unlink()  # the drawing beside it is an output too
    one_line_error(dag_cli(*sample), "--out", out.with_suffix(".png"), "already exists")
    assert dag_cli(*sample, "--overwrite").exit_code == 0
    js = tmp_path / "r.json"
    js.write_text("keep")
    one_line_error(dag_cli("evaluate", dag_run, "--samples", out, "--json", js), "--json", js, "already exists")
    assert js.read_text() == "keep"


def test_dag_train_refuses_an_existing_run_unless_overwrite(dag_run, tmp_path):
    run = shutil.copytree(dag_run, tmp_path / "run")
    args = ["train", "--dataset", "lp", "--num-graphs", "12", "--threads", "1", "--epochs", "1", "--out", run]
    before = (run / "checkpoint.pt").read_bytes()
    one_line_error(dag_cli(*args), "--out", run, "--overwrite")
    assert (run / "checkpoint.pt").read_bytes() == before
    (run / "stale.txt").write_text("old")
    assert dag_cli(*args, "--overwrite").exit_code == 0
    assert not (run / "stale.txt").exists()


SYNTH = ["data", "synth", "-c", "tile:xla", "--max-configs", "6", "--max-nodes", "12"]


def test_data_synth_refuses_a_collection_with_other_data(tmp_path):
    from graphcost.data.io.discover import collection_dir

    assert invoke(*SYNTH, "--out", tmp_path, "-n", "10").exit_code == 0
    assert invoke(*SYNTH, "--out", tmp_path, "-n", "10").exit_code == 0  # the same command again: kept, not refused
    base = collection_dir(tmp_path, "tile:xla")
    one_line_error(invoke(*SYNTH, "--out", tmp_path, "-n", "20"), "--out", base, "--overwrite")
    assert len(list(base.rglob("*.npz"))) == 10  # untouched
    assert invoke(*SYNTH, "--out", tmp_path, "-n", "20", "--overwrite").exit_code == 0
    assert len(list(base.rglob("*.npz"))) == 20  # replaced whole: no file of the old split left over
    (base / "train" / "my_real_graph.npz").write_bytes(b"")
    one_line_error(invoke(*SYNTH, "--out", tmp_path, "-n", "10", "--overwrite"), base, "did not write")
    assert (base / "train" / "my_real_graph.npz").exists()


def test_data_synth_refuses_a_training_or_tuning_run_as_its_root(tmp_path):
    """Issue 65: `data synth -o A_TRAINING_RUN` wrote its npz tree into the run (the library verb refuses it)."""
    for marker in ("run.json", "result.json"):
        run = tmp_path / marker.split(".")[0]
        run.mkdir()
        (run / marker).write_text("{}")
        one_line_error(invoke(*SYNTH, "--out", run, "-n", "4"), "--out", run, f"holds a run ({marker})")
        assert sorted(p.name for p in run.iterdir()) == [marker]


def test_loader_refuses_splits_that_share_a_graph(tmp_path):
    """What an old `data synth` left behind: the same graph under a train and a valid name."""
    assert invoke(*SYNTH, "--out", tmp_path, "-n", "10").exit_code == 0
    base = tmp_path / "npz" / "tile" / "xla"
    leaked = sorted((base / "train").glob("*.npz"))[0]
    shutil.copy(leaked, base / "valid" / "copy_of_a_train_graph.npz")
    result = invoke("train", "-c", "tile:xla", "--data-dir", tmp_path, "--epochs", "1", "--no-progress",
                    "--device", "cpu", "--out", tmp_path / "run")  # fmt: skip
    one_line_error(result, leaked.name, "copy_of_a_train_graph.npz", "share a graph")
    assert not (tmp_path / "run").exists()


def _write_npz(path, arrays, date_time):
    """An npz written with explicit zip timestamps (numpy's own writer fixes them at 1980)."""
    import io
    import zipfile

    import numpy as np

    with zipfile.ZipFile(path, "w") as archive:
        for key, value in arrays.items():
            buf = io.BytesIO()
            np.save(buf, value)
            archive.writestr(zipfile.ZipInfo(f"{key}.npy", date_time=date_time), buf.getvalue())


def test_fingerprint_ignores_zip_timestamps(tmp_path):
    """Two writes of the same arrays at different times differ in bytes (zip timestamps) but are one
    graph; different arrays have another fingerprint."""
    import numpy as np

    from graphcost.data.io.split_overlap import npz_fingerprint, shared_graphs

    arrays = {"node_feat": np.arange(12.0).reshape(3, 4), "edge_index": np.array([[1, 0], [2, 1]])}
    a, b, c = (tmp_path / f"{n}.npz" for n in "abc")
    _write_npz(a, arrays, (2024, 5, 1, 12, 0, 0))
    _write_npz(b, arrays, (2023, 1, 2, 3, 4, 6))
    _write_npz(c, {**arrays, "node_feat": arrays["node_feat"] + 1}, (2024, 5, 1, 12, 0, 0))
    assert a.read_bytes() != b.read_bytes()
    assert npz_fingerprint(a) == npz_fingerprint(b) != npz_fingerprint(c)
    assert shared_graphs({"train": [a, c], "valid": [b]}) == [(a, b)]
    assert shared_graphs({"train": [a, b], "valid": [c]}) == []  # a duplicate inside one split is no leak
    assert npz_fingerprint(tmp_path / "missing.npz") is None


def test_train_overwrite_keeps_the_old_run_when_the_new_data_is_bad(data_root, cost_copy, tmp_path):
    """issue 26: --overwrite empties --out only after every graph of the new data was read and validated."""
    import numpy as np

    bad = Path(shutil.copytree(data_root, tmp_path / "bad_data"))
    victim = sorted(bad.rglob("train/*.npz"))[0]
    with np.load(victim, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["node_feat"] = arrays["node_feat"].copy()
    arrays["node_feat"][0, 0] = np.nan
    np.savez(victim, **arrays)
    before = {p.name: p.read_bytes() for p in cost_copy.iterdir() if p.is_file()}
    one_line_error(_train(bad, cost_copy, "--overwrite"), victim.name, "node_feat")
    assert {p.name: p.read_bytes() for p in cost_copy.iterdir() if p.is_file()} == before  # the old run is whole


def test_train_on_a_full_disk_names_the_file(data_root, tmp_path, monkeypatch):
    """issue 26: a full disk (ENOSPC, here when a checkpoint is synced) is one line naming the file it
    could not write; no temp file is left behind."""
    import errno
    import os

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "run"
    line = one_line_error(_train(data_root, out), "No space left on device", "cannot write", str(out))
    assert ".pt" in line
    assert not list(out.glob(".*.tmp"))


def test_train_overwrite_keeps_a_cache_dir_inside_the_run(data_root, cost_copy):
    """--overwrite now empties --out after the data is prepared: a --cache-dir inside --out, just filled,
    is kept (everything else of the old run is replaced)."""
    cache = cost_copy / "cache"
    (cost_copy / "stale.txt").write_text("from the old run")
    result = _train(data_root, cost_copy, "--overwrite", "--cache-dir", cache)
    assert result.exit_code == 0, result.output
    assert not (cost_copy / "stale.txt").exists() and any(cache.iterdir())
