"""End to end through the CLI on tiny SYNTHETIC collections: train -> evaluate -> rank -> predict.

TGraph and the TpuGraphs layout baseline (sage) on layout:xla:random, TGraph and the tile MLP
baseline on tile:xla; cross-validation ensembles; --combine of the two submissions.
"""

import csv
import json
import re

import numpy as np
import pytest
import torch
from train_stubs import StopTraining, run_cli, write_cli_collections
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.io.tpugraphs_io import load_graph

SMALL = {
    "tgraph": ["--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "layout_dim=2",
               "--model-opt", "num_blocks=1"],
    "sage": ["--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "num_layers=1"],
    "tile-mlp": ["--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "num_layers=1"],
}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return write_cli_collections(tmp_path_factory.mktemp("synthetic"), seed=1)


@pytest.mark.parametrize("collection,model", [("layout:xla:random", "tgraph"), ("layout:xla:random", "sage"),
                                              ("tile:xla", "tgraph"), ("tile:xla", "tile-mlp")])
def test_train_evaluate_rank_predict(tmp_path, data_root, collection, model):
    run = tmp_path / "run"
    out = run_cli("train", "--collection", collection, "--data-dir", data_root, "--model", model, *SMALL[model],
                  "--epochs", "2", "--batch-configs", "8", "--out", run, "--no-progress", "--device", "cpu")
    assert "best valid" in out and (run / "best.pt").is_file() and (run / "metrics.csv").is_file()
    assert "blend:" in out and (run / "blend.json").is_file() and (run / "trees.txt").is_file()  # the default recipe
    recorded = json.loads((run / "run.json").read_text())["config"]["model_config"]
    # recipe.MODEL_CONFIG asks TGraph for the term; synthetic graphs carry no statistics, so it is off
    assert recorded.get("compiled_stats") is (False if model == "tgraph" else None)
    assert ("no training graph carries config_compiled_stats" in out) is (model == "tgraph")
    assert re.search(r"^threads: \d+ \(", out, re.M)  # --threads auto says what it chose
    assert re.search(r"^epoch 1/2: train loss [\d.]+, valid \w+ -?[\d.]+", out, re.M)  # a line per epoch
    assert f"plots: {run / 'learning_curves.png'}, {run / 'valid_ranks.png'}" in out  # and where the plots are
    report = tmp_path / "eval.json"
    out = run_cli("evaluate", run, "--json", report, "--tta", "2", "--device", "cpu")
    data = json.loads(report.read_text())
    out = "".join(line for line in out.splitlines(True) if not line.startswith("threads: "))
    assert out.startswith("scoring with the run's blend")  # on stderr, which CliRunner mixes in
    out = out.split("\n", 1)[1]
    assert out.startswith("split: test (") and data["split"] == "test"  # labelled test split: reported by default
    assert data["kind"] == collection.split(":")[0] and len(data["graphs"]) == 1
    assert "kendall_tau" in data["aggregate"] and "MEAN" in out
    if collection == "tile:xla":
        assert "tile_score" in data["aggregate"]

    test_file = sorted((data_root / "npz").rglob("test/*.npz"))
    test_file = [f for f in test_file if ("tile" in f.parts) == (collection == "tile:xla")][0]
    num_configs = load_graph(test_file).config_runtime.shape[0]
    out = run_cli("rank", run, test_file, "--tta", "2", "--device", "cpu")
    ranked = [int(line.split()[1]) for line in out.splitlines()[1:] if re.match(r"\s*\d+\s+\d+", line)]
    assert sorted(ranked) == list(range(num_configs))  # every ORIGINAL configuration, once
    scores = [float(line.split()[2]) for line in out.splitlines()[1:] if re.match(r"\s*\d+\s+\d+", line)]
    assert scores == sorted(scores)  # fastest (lowest score) first
    if model == "tgraph":  # bf16 inference: a full ranking too, close to the fp32 one
        threads = torch.get_num_threads()
        out16 = run_cli("rank", run, test_file, "--tta", "2", "--device", "cpu", "--precision", "bf16", "--threads", "1")
        assert torch.get_num_threads() == 1
        torch.set_num_threads(threads)  # the CLI sets it for its process; this one goes on testing
        ranked16 = [int(line.split()[1]) for line in out16.splitlines()[1:] if re.match(r"\s*\d+\s+\d+", line)]
        assert sorted(ranked16) == list(range(num_configs))
        pos16 = np.argsort(ranked16)
        assert np.corrcoef(np.argsort(ranked), pos16)[0, 1] > 0.9

    if model == "tgraph":  # the same tables for programs: stdout holds only the data
        measured = load_graph(test_file).config_runtime
        assert "runtime (measured)" in out and "Kendall tau of the scores against them" in out
        res = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()
        r = res.invoke(app, ["rank", str(run), str(test_file), "--tta", "2", "--device", "cpu", "--format", "json"])
        rows = json.loads(r.stdout)
        assert [row["config"] for row in rows] == ranked and rows[0]["rank"] == 0
        assert [row["runtime"] for row in rows] == [float(measured[i]) for i in ranked]  # beside each score
        r = res.invoke(app, ["evaluate", str(run), "--tta", "2", "--device", "cpu", "--format", "csv"])
        table = list(csv.DictReader(r.stdout.splitlines()))
        assert table[-1]["graph"] == "MEAN" and float(table[-1]["kendall_tau"]) == pytest.approx(
            data["aggregate"]["kendall_tau"], abs=1e-9)
        r = res.invoke(app, ["evaluate", str(run), "--tta", "2", "--device", "cpu", "--format", "json"])
        assert json.loads(r.stdout)["split"] == "test"

    sub = tmp_path / "sub.csv"
    run_cli("predict", run, "--out", sub, "--tta", "2", "--device", "cpu")
    rows = list(csv.reader(open(sub)))
    assert rows[0] == ["ID", "TopConfigs"] and len(rows) == 2
    assert rows[1][0] == f"{collection}:{test_file.stem}"
    ids = [int(i) for i in rows[1][1].split(";")]
    expected = ranked[:5] if collection == "tile:xla" else ranked
    assert ids == expected


def test_crossval_ensemble_and_combine(tmp_path, data_root):
    run = tmp_path / "cv"
    out = run_cli("train", "--collection", "layout:xla:random", "--data-dir", data_root, "--model", "tgraph",
                  *SMALL["tgraph"], "--epochs", "1", "--batch-configs", "8", "--folds", "3", "--train-folds", "2",
                  "--keep", "1", "--out", run, "--no-progress", "--device", "cpu")
    manifest = json.loads((run / "ensemble.json").read_text())
    assert len(manifest["fold_scores"]) == 2 and len(manifest["kept"]) == 1
    assert manifest["mean_score"] == pytest.approx(max(manifest["fold_scores"]))
    for fold in (0, 1):  # validation graphs of a fold never appear in its training set
        done = json.loads((run / f"fold_{fold:02d}" / "done.json").read_text())
        assert done["valid_graphs"]
    assert "kept" in out
    layout_csv, tile_csv, both = tmp_path / "l.csv", tmp_path / "t.csv", tmp_path / "all.csv"
    run_cli("predict", run, "--out", layout_csv, "--tta", "2", "--device", "cpu")
    (tmp_path / "t.csv").write_text("ID,TopConfigs\ntile:xla:k1,3;1;0;2;4\n")
    run_cli("predict", "--combine", layout_csv, tile_csv, "--out", both)
    rows = list(csv.reader(open(both)))
    assert [r[0].split(":")[0] for r in rows[1:]] == ["layout", "tile"]
    result = CliRunner().invoke(app, ["predict", "--combine", str(layout_csv), str(layout_csv), "--out", str(both),
                                      "--overwrite"])  # fmt: skip
    assert result.exit_code == 1 and "already present" in result.output
    result = CliRunner().invoke(app, ["predict", "--combine", str(layout_csv), str(tile_csv), "--out", str(both)])
    assert result.exit_code == 1 and "already exists; pass --overwrite" in result.output  # no silent replacement


def test_seed_ensemble_averages_its_members_and_resumes_past_finished_ones(tmp_path, data_root, monkeypatch):
    from graphcost.inference.ensemble import EnsemblePredictor, resolve_checkpoints
    from graphcost.train import trainer as trainer_mod

    run = tmp_path / "seeds"
    args = ["train", "--collection", "tile:xla", "--data-dir", data_root, "--model", "tgraph", *SMALL["tgraph"],
            "--epochs", "1", "--batch-configs", "8", "--seeds", "2", "--seed", "5", "--out", run, "--no-progress",
            "--device", "cpu"]
    out = run_cli(*args)
    manifest = json.loads((run / "ensemble.json").read_text())
    assert manifest["members"] == ["seed_00/best.pt", "seed_01/best.pt"] and len(manifest["member_scores"]) == 2
    assert [json.loads((run / f"seed_0{k}" / "done.json").read_text())["seed"] for k in (0, 1)] == [5, 6]
    assert "seeds 5..6: best valid" in out and "blend:" in out and (run / "blend.json").is_file()
    assert json.loads((run / "run.json").read_text())["seeds"] == 2
    predictor = EnsemblePredictor.load([run], tta=0)
    assert len(predictor.members) == 2 and predictor.blend is not None  # both members, and the trees beside
    a, b = (torch.load(f, weights_only=True)["model"] for f in resolve_checkpoints(run))
    assert any(not torch.equal(a[k], b[k]) for k in a)  # two seeds, two models
    report = tmp_path / "eval.json"
    run_cli("evaluate", run, "--json", report, "--tta", "0", "--device", "cpu")
    assert "kendall_tau" in json.loads(report.read_text())["aggregate"]

    (run / "seed_01" / "done.json").unlink()  # as if killed while the second member trained
    trained = []
    real_init = trainer_mod.Trainer.__init__

    def record(self, config, *a, **kw):
        trained.append(config.seed)
        real_init(self, config, *a, **kw)

    monkeypatch.setattr(trainer_mod.Trainer, "__init__", record)
    out = run_cli("train", "--resume", "--out", run, "--no-progress", "--device", "cpu")
    assert "resuming" in out and trained == [6]  # the finished member is not trained again
    assert json.loads((run / "ensemble.json").read_text())["member_scores"] == manifest["member_scores"]


def test_clear_errors(tmp_path, data_root):
    result = CliRunner().invoke(app, ["train", "--data-dir", str(tmp_path / "nope")])
    assert result.exit_code == 1 and "not a directory" in result.output
    result = CliRunner().invoke(app, ["train", "--data-dir", str(data_root)])
    assert result.exit_code == 1 and "--collection" in result.output  # two collections: must choose
    result = CliRunner().invoke(app, ["train", "--data-dir", str(data_root), "--collection", "tile:xla", "--seeds",
                                      "3", "--folds", "2"])  # fmt: skip
    assert result.exit_code == 1 and "--seeds 3 cannot be combined with --folds 2" in result.output
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "missing-run")])
    assert result.exit_code == 1 and "missing-run" in result.output


def test_killed_cli_run_resumes_to_the_same_result(tmp_path, data_root, monkeypatch):
    from graphcost.train import trainer as trainer_mod

    args = ["train", "--collection", "tile:xla", "--data-dir", data_root, "--model", "tile-mlp", *SMALL["tile-mlp"],
            "--epochs", "3", "--batch-configs", "8", "--checkpoint-every", "1", "--no-progress", "--device", "cpu"]
    run_cli(*args, "--out", tmp_path / "full")
    real_fit = trainer_mod.Trainer.fit

    def killed_fit(self, resume=False, step_callback=None):
        def kill(trainer, epoch, step):
            if (epoch, step) == (1, 2):
                raise StopTraining("simulated kill")

        return real_fit(self, resume=resume, step_callback=kill)

    monkeypatch.setattr(trainer_mod.Trainer, "fit", killed_fit)
    result = CliRunner().invoke(app, [str(a) for a in args] + ["--out", str(tmp_path / "killed")])
    assert isinstance(result.exception, StopTraining)
    monkeypatch.setattr(trainer_mod.Trainer, "fit", real_fit)
    # settings come from run.json; --device is not recorded (it may change between resumes), and the
    # exact-match promise holds on CPU, so pin it (auto would pick a GPU where one is present)
    out = run_cli("train", "--resume", "--out", tmp_path / "killed", "--no-progress", "--device", "cpu")
    assert "resuming" in out

    def metrics(run):
        rows = list(csv.DictReader(open(run / "metrics.csv")))
        return [{k: v for k, v in r.items() if k not in ("train_seconds", "configs_per_s")} for r in rows]

    assert metrics(tmp_path / "killed") == metrics(tmp_path / "full") and len(metrics(tmp_path / "full")) == 3


def test_a_data_parallel_peer_that_never_starts_is_a_one_line_error(tmp_path, data_root, monkeypatch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # rank 0 of 2, as torchrun would start it, but rank 1 never comes
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    result = CliRunner().invoke(app, ["train", "--collection", "tile:xla", "--data-dir", str(data_root), "--model",
                                      "tile-mlp", "--device", "cpu", "--dist-timeout", "1", "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("error: rank 0: data-parallel training stopped") and "--dist-timeout 1 s" in line, line


def test_evaluate_default_split_is_test_only_when_the_test_graphs_have_runtimes(tmp_path):
    from graphcost.data.io.locate import has_runtimes

    labelled, hidden = tmp_path / "a.npz", tmp_path / "b.npz"
    np.savez(labelled, config_runtime=np.array([3, 1, 2]))
    np.savez(hidden, config_runtime=np.zeros(3))  # the official TpuGraphs test files hide their runtimes
    assert has_runtimes([labelled]) and not has_runtimes([labelled, hidden]) and not has_runtimes([])


def test_the_compiled_term_is_on_where_the_training_data_carries_statistics(tmp_path, data_root):
    """The same synthetic layout collection with ``config_compiled_stats`` in every file: TGraph gets
    its term for what the compiler did (recipe.MODEL_CONFIG) and the run records it."""
    import shutil

    root = tmp_path / "data"
    shutil.copytree(data_root, root)
    files = sorted((root / "npz" / "layout").rglob("*.npz"))
    rng = np.random.default_rng(0)
    for f in files:
        with np.load(f, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["config_compiled_stats"] = rng.uniform(0, 1e4, (len(arrays["config_runtime"]), 7))
        np.savez(f, **arrays)
    run = tmp_path / "run"
    out = run_cli("train", "--collection", "layout:xla:random", "--data-dir", root, "--model", "tgraph",
                  *SMALL["tgraph"], "--epochs", "1", "--batch-configs", "8", "--out", run, "--no-progress",
                  "--device", "cpu", "--no-trees")
    assert "no training graph carries" not in out
    assert json.loads((run / "run.json").read_text())["config"]["model_config"]["compiled_stats"] is True
