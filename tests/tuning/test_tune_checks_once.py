"""`graphcost tune` checks and builds everything once: the CLI calls one verb (`tune_program`), which builds
the config, the run directory, the space, the models and the scorer once, and the search uses them as built."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

from cli_asserts import TINY_PROGRAM as PROGRAM
from cli_asserts import count_calls
from typer.testing import CliRunner

from graphcost.cli import app


def test_tune_builds_the_config_run_dir_space_models_and_scorer_once(tmp_path, monkeypatch):
    import graphcost.runs.lifecycle as lifecycle
    import graphcost.tuning.arguments as arguments
    import graphcost.tuning.scoring as scoring
    import graphcost.tuning.tuner as tuner
    import graphcost.tuning.tuning_run_dir as tuning_run_dir

    calls: Counter = Counter()
    for module, attr in ((tuner, "make_space"), (tuner, "resolve_models"), (arguments, "check_tune_config"),
                         (tuning_run_dir, "RunDirectory"), (lifecycle, "RunDirectory")):
        count_calls(monkeypatch, calls, module, attr)
    monkeypatch.setattr(scoring, "GraphModelScorer", lambda *a, **k: calls.update(["GraphModelScorer"]) or "scorer")
    seen = {}

    def search(program, name, sp, cfg, protocol, runs, label, strategies, out, storage, scorer=None, kernel_model=None):
        seen.update(scorer=scorer, strategies=strategies)
        return SimpleNamespace(trials=[], message="kept the default", beats_default=False)

    monkeypatch.setattr(tuner, "_search", search)
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    run = tmp_path / "model_run"
    run.mkdir()
    res = CliRunner().invoke(app, ["tune", f"{prog}:make", "--model", str(run), "--strategy", "model", "--budget", "2",
                                   "--out", str(tmp_path / "o"), "--no-kernels", "--no-ablation"])
    assert res.exit_code == 0, res.output
    assert seen == {"scorer": "scorer", "strategies": ["model"]}  # the search got the scorer the checks built
    assert calls == Counter(make_space=1, resolve_models=1, check_tune_config=1, RunDirectory=1, GraphModelScorer=1)


def test_tune_errors_name_the_option(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    res = CliRunner().invoke(app, ["tune", f"{prog}:make", "--online", "bogus", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1 and "--online must be one of auto, effects, tree, finetune, got 'bogus'" in res.output
    res = CliRunner().invoke(app, ["tune", f"{prog}:make", "--study", " ", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1 and "--study must be a non-empty name" in res.output
    res = CliRunner().invoke(app, ["tune", f"{prog}:make", "--model", str(tmp_path / "nope"), "--out",
                                   str(tmp_path / "o")])
    assert res.exit_code == 1 and f"--model {tmp_path / 'nope'}: no such run directory or checkpoint" in res.output
