"""The training settings check themselves (issue 65): the API refuses what the CLI refuses, naming the field."""

from __future__ import annotations

import math

import pytest

from graphcost.guards.bounds import ArgumentError
from graphcost.errors import GraphcostError
from graphcost.train.fit import fit
from graphcost.train.spec import RunSpec, recipe_config


@pytest.mark.parametrize("changes, needle", [
    ({"epochs": 0}, "epochs must be an integer >= 1, got 0"),
    ({"epochs": -1}, "epochs must be an integer >= 1, got -1"),
    ({"lr": math.nan}, "lr must be a finite number"),
    ({"lr": "0.1"}, "lr must be a number, got '0.1'"),
    ({"lr": 0.0}, "lr must be a finite number > 0"),
    ({"loader_workers": 100_000}, "loader_workers must be an integer from 0 to"),
    ({"batch_configs": 0}, "batch_configs must be an integer >= 1"),
    ({"model_config": [1]}, "model_config must be a dict"),
    ({"eval_tta": -2}, "eval_tta must be an integer from 0 to"),
    ({"device": "bogus"}, "device must be auto, cpu, cuda or cuda:N, got 'bogus'"),
])
def test_recipe_config_refuses_unusable_values(changes, needle):
    with pytest.raises(ArgumentError) as info:
        recipe_config(**changes)
    assert str(info.value).startswith(needle), str(info.value)
    assert isinstance(info.value, GraphcostError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("fields, needle", [
    ({"folds": "3"}, "folds must be an integer, got '3'"),
    ({"data_dir": 5}, "data_dir must be a directory path or None, got 5"),
    ({"config": {}}, "config must be a TrainConfig"),
    ({"folds": 2, "train_folds": 0}, "train_folds must be an integer from 1 to"),  # was best_score nan
    ({"folds": 2, "keep": 0}, "keep must be an integer from 1 to"),
    ({"max_graphs": -1}, "max_graphs must be an integer from 1 to"),  # silently dropped graphs
    ({"max_graphs": 0}, "max_graphs must be an integer from 1 to"),
    ({"folds": 1}, "folds must be 0 (official train/valid split) or at least 2"),
    ({"folds": 2, "seeds": 2}, "seeds 2 cannot be combined with folds 2"),
    ({"trees": "yes"}, "trees must be True or False"),
])
def test_run_spec_refuses_unusable_fields(fields, needle):
    with pytest.raises(ArgumentError) as info:
        RunSpec(**fields)
    assert str(info.value).startswith(needle), str(info.value)


@pytest.mark.parametrize("args, kwargs, needle", [
    (("layout",), {}, "spec must be a RunSpec"),
    (({},), {}, "spec must be a RunSpec"),
    ((None, 5), {}, "out must be a directory path or None, got 5"),
    ((None, ""), {}, "out must be a directory path, got an empty string"),
    ((), {"report": 5}, "report must be a function"),
    ((), {"max_memory_gb": math.nan}, "max_memory_gb must be a finite number"),
    ((), {"max_memory_gb": "8"}, "max_memory_gb must be a number"),
    ((), {"resume": "no"}, "resume must be True or False"),
])
def test_fit_refuses_unusable_arguments_before_touching_anything(tmp_path, monkeypatch, args, kwargs, needle):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArgumentError) as info:
        fit(*args, **kwargs)
    assert str(info.value).startswith(needle), str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing written: no runs/ directory


def test_a_spec_changed_after_it_was_built_is_checked_again():
    spec = RunSpec()
    spec.train_folds = 0
    with pytest.raises(ArgumentError, match="train_folds"):
        fit(spec)
