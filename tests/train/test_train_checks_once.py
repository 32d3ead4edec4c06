"""`graphcost train` checks everything once: the CLI calls one verb (`train_run`), which checks the settings'
numbers, the model's graph kind, its sizes and its memory (built once, on PyTorch's meta device) once each,
before any graph is read; and a model registered with `graphcost.models.registry.register` passes the verb's
checks (the CLI's --model choices are the shipped models)."""

from __future__ import annotations

from collections import Counter

import pytest
from train_stubs import TinyConfig, TinyModel, write_cli_collections
from cli_asserts import count_calls
from typer.testing import CliRunner

from graphcost.cli import app

SMALL = ["--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "layout_dim=2",
         "--model-opt", "num_blocks=1"]


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return write_cli_collections(tmp_path_factory.mktemp("synthetic"), seed=3, max_nodes=20, max_configs=16)


def test_train_checks_the_numbers_kind_sizes_and_memory_once(tmp_path, data_root, monkeypatch):
    import graphcost.runs.lr_schedule as lr_schedule
    import graphcost.train.checks as checks
    import graphcost.train.fit as fit

    calls: Counter = Counter()
    for module, attr in ((fit, "check_model_kind"), (checks, "check_model_sizes"), (checks, "check_model_memory"),
                         (lr_schedule, "adamw_training_bytes"), (checks, "check_train_config"),
                         (checks, "check_run_spec"), (fit, "check_fit_arguments")):
        count_calls(monkeypatch, calls, module, attr)
    for attr in ("check_positive", "check_seed"):  # the numbers: --lr and --max-memory-gb, --seed
        count_calls(monkeypatch, calls, checks, attr, key=lambda name, value: name)
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "-c", "layout:xla:random", "--data-dir", str(data_root), *SMALL,
                                      "--epochs", "1", "--batch-configs", "8", "--no-trees", "--out", str(run),
                                      "--no-progress", "--device", "cpu", "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert (run / "best.pt").is_file()
    assert calls == Counter(check_model_kind=1, check_model_sizes=1, check_model_memory=1, adamw_training_bytes=1,
                            check_train_config=1, check_run_spec=1, check_fit_arguments=1,
                            **{"--lr": 1, "--max-memory-gb": 1, "--seed": 1})


def test_a_registered_model_passes_the_verbs_checks(tmp_path, data_root, monkeypatch):
    import graphcost.train.fit as fit
    from graphcost.guards.bounds import ArgumentError
    from graphcost.models import registry
    from graphcost.train.train_run import train_run

    monkeypatch.setattr(registry, "_MODELS", dict(registry._MODELS))  # the registration ends with the test
    registry.register("tiny-test", TinyConfig, ("layout",), lambda kind, config: TinyModel(config))
    plans = []
    monkeypatch.setattr(fit, "run_fit", lambda plan, ctx, report: plans.append(plan) or "trained")
    settings = dict(collection="layout:xla:random", data_dir=data_root, epochs=1, batch_configs=8, trees=False,
                    device="cpu", progress=False, out=tmp_path / "run")
    assert train_run(model="tiny-test", model_opts={"hidden": 4}, **settings) == "trained"
    (plan,) = plans
    assert plan.kind == "layout" and plan.spec.config.model == "tiny-test"
    assert plan.spec.config.model_config == {"hidden": 4}
    with pytest.raises(ArgumentError, match=r"^unknown model 'nope'; choose one of tgraph, .*, tiny-test$"):
        train_run(model="nope", **settings)
    with pytest.raises(ArgumentError, match=r"^--model-opt: model 'tiny-test': unknown config field"):
        train_run(model="tiny-test", model_opts={"width": 4}, names={"model_config": "--model-opt"}, **settings)
    assert not (tmp_path / "run").exists()
