"""A study says what was run: trial parameters are the XLA options' values (a layout's minor_to_major),
read back by plain Optuna; trials.csv names every flag and layout site in its own column."""

from __future__ import annotations

import csv
import io

import optuna
import pytest
from tune_fakes import FakeEvaluator, fake_scorer

from graphcost.tuning.trial import OK, Trial
from graphcost.tuning.space import Dim, FlagSpace, Space, minor_to_major_label
from graphcost.tuning.study import Study
from graphcost.tuning.result import trials_csv
from graphcost.tuning.tuner import run_strategy


def _codes(space: Space, **values) -> tuple:
    """The configuration of `space` whose named dimensions (column names) hold `values`."""
    return tuple(d.choices.index(values[d.name]) if d.name in values else 0 for d in space.dims)


def test_trial_parameters_are_the_option_values(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    space = FlagSpace()
    study = Study(url, "prog:flags:random", space)
    o0 = _codes(space, backend_optimization_level=0, log2_vector_width_over_128=2, fusion_emitters=0,
                ynn_library_fusion=0)
    assert o0[0] != 0  # the index of O0 is not 0 (the default, O3, is choice 0)
    study.add(Trial(o0, OK, ratio=0.9, runtime_ns=900.0, default_ns=1000.0))

    (t,) = optuna.load_study(study_name="prog:flags:random", storage=url).trials  # plain Optuna, no graphcost
    assert t.params["xla_backend_optimization_level"] == 0
    assert t.params["xla_cpu_prefer_vector_width"] == 512
    assert t.params["xla_cpu_use_fusion_emitters"] is False
    assert t.params["xla_cpu_experimental_ynn_fusion_type"] == "off"
    assert t.params["xla_cpu_multi_thread_eigen"] is True  # left at its default
    # the values are the ones compiled with
    options = space.compiler_options(o0)
    assert options["xla_backend_optimization_level"] == 0 and options["xla_cpu_prefer_vector_width"] == 512
    assert options["xla_cpu_use_fusion_emitters"] is False and options["xla_cpu_experimental_ynn_fusion_type"] == ""
    assert [tr.codes for tr in Study(url, "prog:flags:random", space).trials()] == [o0]  # and read back


@pytest.mark.parametrize("strategy", ["tpe", "random"])
def test_strategies_record_values_that_decode_to_what_was_measured(tmp_path, strategy):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    ev = FakeEvaluator(FlagSpace())
    run_strategy(strategy, ev.space, ev, 6, url, "prog:flags", scorer=fake_scorer(ev), seed=0, round_size=3)
    trials = optuna.load_study(study_name=f"prog:flags:{strategy}", storage=url).trials
    measured = {tuple(ev.space.values(c)) for c in ev.measured}
    recorded = {tuple(t.params[name] for name in (d.param_name for d in ev.space.dims))
                for t in trials if t.state == optuna.trial.TrialState.COMPLETE and t.user_attrs["status"] == OK}
    as_values = {tuple(d.param_values[c] for d, c in zip(ev.space.dims, codes)) for codes in ev.measured}
    assert recorded == as_values and len(measured) == 6


def test_layout_like_choices_are_labelled_and_csv_has_a_column_per_dimension():
    class Layouts(Space):
        name = "layout"

    perms = ((1, 0), (0, 1))
    space = Layouts([Dim("site3.dot_general.out", perms, labels=tuple(map(minor_to_major_label, perms))),
                     Dim("site3.dot_general.in0", perms)])
    assert space.dims[0].param_values == ("{1,0}", "{0,1}")
    assert space.dims[1].param_values == ("(1, 0)", "(0, 1)")  # unlabelled tuples: their text
    text = trials_csv([Trial((1, 0), OK, ratio=0.5, strategy="tpe"), Trial((0, 1), "compile_error", error="boom")],
                      space)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert "codes" not in rows[0]
    assert rows[0]["site3.dot_general.out"] == "{0,1}" and rows[0]["speedup"] == "2.0"
    assert rows[1]["site3.dot_general.in0"] == "(0, 1)" and rows[1]["error"] == "boom"


def test_flag_csv_columns_are_the_xla_options():
    space = FlagSpace()
    header = next(csv.reader(io.StringIO(trials_csv([], space))))
    assert header[-1] == "error" and "xla_backend_optimization_level" in header
    assert [h for h in header if h.startswith("xla_")] == [d.param_name for d in space.dims]


def test_a_study_recorded_with_choice_indices_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    space = FlagSpace()
    old = optuna.create_study(storage=url, study_name="prog:flags:random")
    dists = {d.name: optuna.distributions.CategoricalDistribution(list(range(len(d.choices)))) for d in space.dims}
    old.add_trial(optuna.trial.create_trial(params={d.name: 1 if len(d.choices) > 1 else 0 for d in space.dims},
                                            distributions=dists, value=0.9, user_attrs={"status": OK}))
    with pytest.raises(ValueError, match="older graphcost .choice indices"):
        Study(url, "prog:flags:random", space)


def test_repeated_labels_are_refused():
    class Bad(Space):
        name = "bad"

    with pytest.raises(ValueError, match="repeated parameter values"):
        Study(None, "x", Bad([Dim("d", (1, 2), labels=("a", "a"))]))
