"""One-line errors of train / evaluate / rank / predict and the checks behind them (tiny SYNTHETIC data).

Every CLI error must be one line on stderr, exit code 1, no traceback, naming the file/option: a
damaged run.json or checkpoint, a bad --device, --model-opt or --folds, an output path that is a
directory, a missing model, moved data, a flat directory mixing layout and tile graphs. Also the
library checks the commands rely on: atomic writers, the trainer's refusal of mixed graph kinds,
graphs with equal runtimes skipped, float64 runtimes reaching the loss, and --help for every option.
"""

import dataclasses
import json
import shutil

import numpy as np
import pytest
import torch
from cli_asserts import invoke, one_line_error
from train_stubs import write_cli_collections

from graphcost.cli import app

SMALL = ["--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "layout_dim=2",
         "--model-opt", "num_blocks=1"]


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return write_cli_collections(tmp_path_factory.mktemp("synthetic"), seed=3, max_nodes=20, max_configs=16)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, data_root):
    run = tmp_path_factory.mktemp("run") / "run"
    result = invoke("train", "-c", "layout:xla:random", "--data-dir", data_root, *SMALL, "--epochs", "1",
                     "--batch-configs", "8", "--out", run, "--no-progress", "--device", "cpu")
    assert result.exit_code == 0, result.output
    return run


@pytest.fixture(scope="module")
def test_graph(data_root):
    return sorted((data_root / "npz" / "layout").rglob("test/*.npz"))[0]


# 1 -------------------------------------------------------------------------
def test_evaluate_invalid_run_json(tmp_path, run_dir):
    broken = tmp_path / "broken"
    shutil.copytree(run_dir, broken)
    (broken / "run.json").write_text("{not json")
    one_line_error(invoke("evaluate", broken, "--device", "cpu"), "run.json", "invalid JSON")


# 2 -------------------------------------------------------------------------
def test_device_is_validated_up_front(tmp_path, run_dir, test_graph, data_root, monkeypatch):
    for args in (["train", "--data-dir", data_root, "-c", "layout:xla:random", "--out", tmp_path / "r"],
                 ["evaluate", run_dir], ["rank", run_dir, test_graph], ["predict", run_dir, "-o", tmp_path / "p.csv"]):
        one_line_error(invoke(*args, "--device", "foo"), "--device", "foo")
    assert not (tmp_path / "r").exists()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a CPU-only torch
    for device in ("cuda", "cuda:0"):
        one_line_error(invoke("rank", run_dir, test_graph, "--device", device), "--device", "CUDA is not available")
        one_line_error(invoke("evaluate", run_dir, "--device", device), "CUDA is not available")


def test_check_device():
    from graphcost.runs.distributed import check_device

    assert check_device("cpu") == "cpu" and check_device("auto") == "auto"
    for bad in ("foo", "cuda:x", "gpu", ""):
        with pytest.raises(ValueError, match=r"^device '.*': expected auto, cpu, cuda or cuda:N$"):
            check_device(bad)  # the library names its argument; the commands put "--" before it


# 3 -------------------------------------------------------------------------
def test_checkpoint_with_wrong_shapes(tmp_path, run_dir, test_graph):
    from graphcost.runs import checkpoint as ckpt
    from graphcost.inference.ensemble import load_trained

    state = ckpt.load_checkpoint(run_dir / "best.pt")
    name = next(k for k, v in state["model"].items() if v.ndim == 2)
    state["model"][name] = torch.zeros(state["model"][name].shape[0] + 1, 3)
    bad = tmp_path / "bad.pt"
    ckpt.save_checkpoint(bad, state)
    with pytest.raises(ckpt.CheckpointError, match="bad.pt"):
        load_trained(bad)
    one_line_error(invoke("rank", bad, test_graph, "--device", "cpu"), "bad.pt", "do not match")


# 4 -------------------------------------------------------------------------
def test_model_opt_wrong_type(tmp_path, data_root):
    out = tmp_path / "r"
    result = invoke("train", "--data-dir", data_root, "-c", "layout:xla:random", "--model-opt", "hidden=abc",
                     "--out", out, "--device", "cpu")
    one_line_error(result, "--model-opt", "hidden='abc'", "int")
    assert not out.exists()


# 5 -------------------------------------------------------------------------
def test_output_path_is_a_directory(tmp_path, run_dir):
    target = tmp_path / "target"
    target.mkdir()
    one_line_error(invoke("predict", run_dir, "-o", target, "--device", "cpu"), "--out", "is a directory")
    one_line_error(invoke("evaluate", run_dir, "--json", target, "--device", "cpu"), "--json", "is a directory")
    assert list(target.iterdir()) == [] and not list(tmp_path.glob(".*.tmp"))


def test_atomic_writers_refuse_directories_and_clean_up(tmp_path):
    from graphcost.guards.atomic import write_json
    from graphcost.inference.predict import write_csv_rows

    (tmp_path / "d").mkdir()
    with pytest.raises(ValueError, match="is a directory"):
        write_json({}, tmp_path / "d")
    with pytest.raises(ValueError, match="is a directory"):
        write_csv_rows([], tmp_path / "d")
    with pytest.raises(TypeError):  # fails half-way through the write
        write_json({"x": object()}, tmp_path / "r.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # no .r.json.*.tmp left behind


# 6 -------------------------------------------------------------------------
def test_train_out_is_a_file(tmp_path, data_root):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile, afile / "sub"):
        result = invoke("train", "--data-dir", data_root, "-c", "layout:xla:random", "--out", out, "--device", "cpu")
        one_line_error(result, "afile", "--out")
    assert afile.read_text() == "x"


# 7 -------------------------------------------------------------------------
def test_predict_missing_model(tmp_path):
    one_line_error(invoke("predict", tmp_path / "nonexistent", "-o", tmp_path / "x.csv"),
                    "nonexistent", "no such model")


# 8 -------------------------------------------------------------------------
def test_flat_directory_with_both_kinds(tmp_path, data_root):
    from graphcost.data.io.locate import DatasetError, file_kind, resolve_splits

    flat = tmp_path / "flat"
    flat.mkdir()
    for f in sorted((data_root / "npz").rglob("*.npz")):
        shutil.copy(f, flat / f"{f.parts[-4]}_{f.parent.name}_{f.name}")
    kinds = {file_kind(f) for f in flat.glob("*.npz")}
    assert kinds == {"layout", "tile"}
    tile = resolve_splits(flat, "tile:xla")
    files = tile.files["train"] + tile.files["valid"]
    assert files and {file_kind(f) for f in files} == {"tile"}
    layout = resolve_splits(flat, "layout:xla:random")
    assert {file_kind(f) for f in layout.files["train"] + layout.files["valid"]} == {"layout"}
    with pytest.raises(DatasetError, match="--collection tile:xla or a layout collection"):
        resolve_splits(flat, None)


def test_trainer_mixed_kinds_message(tmp_path, layout_graphs, tiny_trainer):
    from graphcost.train.trainer import TrainConfig

    tile = dataclasses.replace(layout_graphs[1], kind="tile")
    with pytest.raises(ValueError, match=r"mix kinds \[.layout., .tile.\]; train on one collection \(tile:xla"):
        tiny_trainer(TrainConfig(model="tiny", device="cpu"), layout_graphs[:1], [tile], tmp_path / "r")


# 9 -------------------------------------------------------------------------
def test_recorded_data_dir_moved(tmp_path, run_dir):
    moved = tmp_path / "moved"
    shutil.copytree(run_dir, moved)
    info = json.loads((moved / "run.json").read_text())
    info["data_dir"] = str(tmp_path / "gone")
    (moved / "run.json").write_text(json.dumps(info))
    line = one_line_error(invoke("evaluate", moved, "--device", "cpu"), "gone", "run.json", "pass --data-dir")
    assert "--data-dir is not a directory" not in line
    line = one_line_error(invoke("predict", moved, "-o", tmp_path / "p.csv", "--device", "cpu"), "gone", "run.json")


# 10 ------------------------------------------------------------------------
def test_graph_with_equal_runtimes_is_skipped(layout_graphs):
    from graphcost.inference.ranking import evaluate_graphs

    class Scorer:
        def score(self, prepared):
            return np.asarray(prepared.runtime, dtype=np.float64)

    flat = dataclasses.replace(layout_graphs[0], name="flat", runtime=np.full_like(layout_graphs[0].runtime, 5.0))
    with pytest.warns(UserWarning, match="skipped"):
        report = evaluate_graphs(Scorer(), [flat, layout_graphs[1]], "layout")
    assert report.skipped == ["flat"] and [r["graph"] for r in report.rows] == ["g1"]
    assert report.to_json()["n_skipped"] == 1 and report.score == pytest.approx(1.0)


# 11 ------------------------------------------------------------------------
def test_folds_one_rejected_before_any_work(tmp_path, data_root):
    out = tmp_path / "r"
    result = invoke("train", "--data-dir", data_root, "-c", "layout:xla:random", "--folds", "1", "--out", out,
                     "--device", "cpu")
    one_line_error(result, "--folds")
    assert not out.exists() and "data:" not in result.output


# 12 ------------------------------------------------------------------------
def test_loss_gets_float64_runtimes(tmp_path, layout_graphs):
    from train_stubs import build_tiny, stub_trainer

    from graphcost.models.losses import pairwise_hinge
    from graphcost.train.trainer import TrainConfig

    graphs = [dataclasses.replace(g, runtime=1e9 + np.arange(len(g.runtime), dtype=np.float64)) for g in layout_graphs]
    seen = []

    def loss(scores, runtime):
        seen.append((scores.dtype, runtime.dtype, int(torch.unique(runtime).numel()), runtime.numel()))
        return pairwise_hinge(scores, runtime)

    config = TrainConfig(model="tiny", model_config={"hidden": 8}, epochs=1, batch_configs=16, device="cpu",
                         eval_batch=16, progress=False, plots=False)
    stub_trainer(build_model=build_tiny, loss=loss)(config, graphs[:2], graphs[2:3], tmp_path / "r").fit()
    assert seen
    for scores_dtype, runtime_dtype, distinct, total in seen:
        assert scores_dtype == torch.float32 and runtime_dtype == torch.float64
        assert distinct == total  # 1e9 + i stays distinct (float32 would merge neighbours into ties)


# 13 ------------------------------------------------------------------------
def test_every_option_has_help():
    import typer

    command = typer.main.get_command(app)
    for name in ("train", "evaluate", "rank", "predict"):
        sub = command.commands[name]
        missing = [p.name for p in sub.params if getattr(p, "param_type_name", "") == "option" and not p.help]
        assert not missing, (name, missing)
