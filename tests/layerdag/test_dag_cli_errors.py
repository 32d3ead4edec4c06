"""dag train / sample / evaluate: bad options and paths are one-line errors (exit 1 for data/file
errors, 2 for usage errors), --json is optional, sample/evaluate use best.pt unless --last."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphcost.cli import app

TRAIN = ["dag", "train", "--dataset", "lp", "--num-graphs", "12", "--threads", "1"]


def _run(args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_line_error(r, code: int, *words: str) -> str:
    out = r.output.strip()
    assert r.exit_code == code, out
    assert "Traceback" not in out and not (r.exception and not isinstance(r.exception, SystemExit)), out
    if code == 1:
        assert len(out.splitlines()) == 1, out
    for w in words:
        assert w in out, (w, out)
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("dagcli") / "run"
    r = _run(TRAIN + ["--epochs", "2", "--out", run])
    assert r.exit_code == 0, r.output
    return run


@pytest.mark.parametrize("opt", ["--batch-size", "--epochs", "--num-graphs"])
def test_train_rejects_zero_counts(tmp_path, opt):
    _one_line_error(_run(TRAIN + [opt, "0", "--out", tmp_path / "r"]), 2, opt)
    assert not (tmp_path / "r").exists()


def test_train_out_is_a_file(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    _one_line_error(_run(TRAIN + ["--epochs", "1", "--out", f]), 1, "--out", str(f), "is a file")
    _one_line_error(_run(TRAIN + ["--epochs", "1", "--out", f / "sub"]), 1, "--out", str(f))


def test_sample_errors(run_dir, tmp_path):
    _one_line_error(_run(["dag", "sample", run_dir, "-n", "0", "--out", tmp_path / "s.npz"]), 2, "-n")
    assert not (tmp_path / "s.png").exists()
    _one_line_error(_run(["dag", "sample", run_dir, "-n", "2", "--tmax", "2", "--out", tmp_path]), 1, "--out",
                    str(tmp_path), "directory")  # fmt: skip
    f = tmp_path / "file.txt"
    f.write_text("x")
    _one_line_error(_run(["dag", "sample", run_dir, "-n", "2", "--tmax", "2", "--threads", "1", "--out", f / "s.npz"]),
                    1, "--out", str(f))  # fmt: skip
    _one_line_error(_run(["dag", "sample", tmp_path / "nope", "--out", tmp_path / "s.npz"]), 1, "nope",
                    "no such run directory")  # fmt: skip
    # issue 65: --out samples.png wrote the DAGs and then the drawing to the same path (the DAGs were lost)
    _one_line_error(_run(["dag", "sample", run_dir, "-n", "2", "--tmax", "2", "--out", tmp_path / "s.png"]), 1,
                    "--out", "give a .npz path")  # fmt: skip
    assert not (tmp_path / "s.png").exists()


def test_evaluate_errors_and_optional_json(run_dir, tmp_path, monkeypatch):
    _one_line_error(_run(["dag", "evaluate", tmp_path / "nonexistent"]), 1, "nonexistent", "no such run directory")
    samples = tmp_path / "s.npz"
    r = _run(["dag", "sample", run_dir, "-n", "3", "--tmax", "2", "--threads", "1", "--out", samples])
    assert r.exit_code == 0, r.output
    d = tmp_path / "jsondir"
    d.mkdir()
    _one_line_error(_run(["dag", "evaluate", run_dir, "--samples", samples, "--json", d]), 1, "--json", str(d),
                    "directory")  # fmt: skip
    assert list(d.iterdir()) == []
    # no --json: print only, nothing written to the working directory
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    r = _run(["dag", "evaluate", run_dir, "--samples", samples])
    assert r.exit_code == 0, r.output
    assert "LP validity" in r.output and list(cwd.iterdir()) == []
    js = tmp_path / "out" / "e.json"
    r = _run(["dag", "evaluate", run_dir, "--samples", samples, "--json", js])
    assert r.exit_code == 0 and "validity" in json.loads(js.read_text())
    assert [p.name for p in js.parent.iterdir()] == ["e.json"]


def test_sample_uses_best_unless_last(run_dir, tmp_path, monkeypatch):
    import graphcost.layerdag.train as train_mod

    assert (run_dir / "best.pt").is_file()  # LP has a validation split
    seen = []
    real = train_mod.load_model
    monkeypatch.setattr(train_mod, "load_model", lambda path, last=False: seen.append(last) or real(path, last))
    for flag in ([], ["--last"]):
        r = _run(["dag", "sample", run_dir, "-n", "2", "--tmax", "2", "--threads", "1", "--out", tmp_path / "s.npz", "--overwrite"] + flag)
        assert r.exit_code == 0, r.output
    assert seen == [False, True]


@pytest.mark.parametrize("exc", ["dagfile", "oserror"])
def test_sample_write_errors_are_one_line(run_dir, tmp_path, monkeypatch, exc):
    import graphcost.layerdag.io as io_mod

    def boom(dags, path):
        if exc == "dagfile":
            raise io_mod.DAGFileError(path, "node_cat", "cannot be written")
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(io_mod, "save_dags", boom)
    out = tmp_path / "s.npz"
    r = _run(["dag", "sample", run_dir, "-n", "1", "--tmax", "2", "--threads", "1", "--out", out])
    assert r.exit_code == 1 and "Traceback" not in r.output and r.output.strip().splitlines()[-1].startswith("error: --out")
    assert str(out) in r.output.strip().splitlines()[-1]


def test_select_and_final_step_options(run_dir, tmp_path):
    _one_line_error(_run(TRAIN + ["--epochs", "1", "--select", "best", "--out", tmp_path / "r"]), 1, "--select", "best")
    _one_line_error(_run(TRAIN + ["--epochs", "1", "--lr-decay", "step", "--out", tmp_path / "r"]), 1, "--lr-decay", "step")
    _one_line_error(_run(TRAIN + ["--epochs", "1", "--ema-decay", "1.5", "--out", tmp_path / "r"]), 1, "--ema-decay", "1.5")
    _one_line_error(_run(TRAIN + ["--epochs", "1", "--label-balance", "0.5", "--out", tmp_path / "lb"]), 1, "--label-balance",
                    "labelled")  # LP graphs have no labels
    assert not (tmp_path / "lb").exists()
    assert not (tmp_path / "r").exists()
    for cmd in (["dag", "sample", run_dir, "-n", "2", "--out", tmp_path / "s.npz"], ["dag", "evaluate", run_dir]):
        _one_line_error(_run(cmd + ["--final-step", "argmax"]), 1, "--final-step", "argmax")
    r = _run(["dag", "sample", run_dir, "-n", "2", "--tmax", "2", "--threads", "1", "--final-step", "sample",
              "--out", tmp_path / "s.npz"])  # fmt: skip
    assert r.exit_code == 0, r.output
    r = _run(TRAIN + ["--epochs", "1", "--select", "total", "--out", tmp_path / "t"])
    assert r.exit_code == 0 and "--select total" in r.output, r.output
    assert torch_load(tmp_path / "t" / "best.pt")["select"] == "total"
    # resuming with a different EMA setting than the run was trained with: one line naming the checkpoint
    _one_line_error(_run(TRAIN + ["--epochs", "2", "--resume", "--ema-decay", "0.9", "--out", tmp_path / "t"]), 1,
                    "checkpoint.pt", "ema_decay")


def torch_load(path):
    import torch

    return torch.load(path, weights_only=True)


def test_sample_refuses_a_label_for_an_unconditional_model(run_dir, tmp_path):
    """issue 26: `dag sample --label` on an unconditional model recorded a label that was not used."""
    from graphcost.layerdag.sample import sample_dags
    from graphcost.layerdag.train import load_model

    out = tmp_path / "s.npz"
    _one_line_error(_run(["dag", "sample", run_dir, "-n", "2", "--label", "3", "--threads", "1", "--out", out]), 1,
                    "--label", "unconditional")
    assert not out.exists() and not out.with_suffix(".png").exists()
    model = load_model(run_dir)
    assert not model.config.conditional
    with pytest.raises(ValueError, match="unconditional"):
        sample_dags(model, 2, labels=[3.0, 3.0], progress=False)
