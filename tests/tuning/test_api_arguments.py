"""The Python API checks its arguments with the CLI's bounds (issue 36): `TuneConfig`, `graphcost.tune`
and `compile_with` raise one typed error, `graphcost.guards.bounds.ArgumentError` (a ValueError and a
TypeError), whose message starts with the argument's name. Was: numpy / pathlib / dataclasses
errors for wrong types ("unknown strategy 't'" for strategies="tpe"), and bad values accepted."""

from __future__ import annotations

import pytest

import graphcost
from graphcost.guards.bounds import ArgumentError
from graphcost.measure.interleaved import TimingProtocol

CONFIG_CASES = [  # (field, value, words of the message)
    ("rtol", "x", "rtol must be a number"),
    ("rtol", float("nan"), "rtol must be a finite number"),
    ("atol", -1.0, "atol must be >= 0"),
    ("seed", "a", "seed must be an integer"),
    ("seed", -1, "seed must be an integer from 0"),
    ("model", 5, "model must be a run directory"),
    ("out", 5, "out must be a directory path"),
    ("out", "/proc/graphcost-x", "virtual file system"),
    ("out", "/dev/full", "character device"),
    ("strategies", "tpe", "strategies must be a list of names, got the string 'tpe'"),
    ("strategies", ["bogus"], "strategies entry must be one of"),
    ("min_gain", -1, "min_gain must be >= 0"),
    ("device", "bogus", "device must be auto, cpu, cuda or cuda:N"),
    ("learner", "bogus", "learner must be one of"),
    ("space", "bogus", "space must be one of"),
    ("budget", 0, "budget must be an integer from 1 to 100000"),
    ("budget", 10**9, "budget must be an integer from 1 to 100000"),  # was: unbounded
    ("budget", 2.5, "budget must be an integer"),
    ("processes", 10**6, "processes must be an integer from 1 to 64"),
    ("allow_fast_math", "yes", "allow_fast_math must be True or False"),
    ("protocol", {"rounds": 3}, "protocol must be a TimingProtocol"),
    ("protocol", TimingProtocol(rounds=10**9), "protocol.rounds must be an integer from 1 to 10000"),
    ("program_ref", "nope.py:make", "program_ref 'nope.py:make': no such file"),  # issue 65: was recorded as is
    ("program_ref", "make", "program_ref 'make': expected FILE.py:FUNCTION"),
]


def test_tune_refuses_an_out_that_holds_a_training_run(tmp_path):
    """issue 65: graphcost.tune(..., out=A_TRAINING_RUN) wrote its study and plots into the run."""
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(ArgumentError, match=r"^out .*: holds a training run \(run\.json\)"):
        graphcost.TuneConfig(out=tmp_path)


@pytest.mark.parametrize("field, value, words", CONFIG_CASES, ids=[f"{c[0]}-{c[1]!r}"[:40] for c in CONFIG_CASES])
def test_tune_config_names_the_field(field, value, words):
    with pytest.raises(ArgumentError, match=words.replace("(", r"\(")) as caught:
        graphcost.TuneConfig(**{field: value})
    assert str(caught.value).startswith(field)  # the message names the argument first
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, TypeError)


def test_tune_checks_fn_config_and_overrides_before_any_work():
    with pytest.raises(ArgumentError, match="fn must be a JAX function"):
        graphcost.tune(5)
    with pytest.raises(ArgumentError, match="config must be a TuneConfig"):
        graphcost.tune(lambda x: x, 1.0, config={"budget": 3})
    with pytest.raises(ArgumentError, match="rtol must be a number"):
        graphcost.tune(lambda x: x, 1.0, rtol="x")
    assert graphcost.TuneConfig(strategies=["tpe"], out=None).strategies == ["tpe"]  # the good ones still pass


def _flags_best(**change):
    from graphcost.tuning.space import FlagSpace

    space = FlagSpace(allow_fast_math=True)
    codes = [0] * len(space.dims)
    described = space.describe(tuple(codes))
    return {"space": "flags", "codes": codes, **described, **change}, space


def test_compile_with_checks_the_configuration():
    pytest.importorskip("jax")
    fn = lambda x: x + 1  # noqa: E731
    best, space = _flags_best()
    assert graphcost.compile_with(fn, best).config.space == "flags"
    with pytest.raises(ArgumentError, match="fn must be a JAX function"):
        graphcost.compile_with(5, best)
    with pytest.raises(ArgumentError, match="best must be a TunedConfig"):
        graphcost.compile_with(fn, 5)
    with pytest.raises(ArgumentError, match="field 'space' must be one of"):
        graphcost.compile_with(fn, {**best, "space": "bogus"})
    with pytest.raises(ArgumentError, match=r"field 'codes\[0\]'"):
        graphcost.compile_with(fn, {**best, "codes": [999] + best["codes"][1:]})
    with pytest.raises(ArgumentError, match="field 'codes' holds 1 codes"):
        graphcost.compile_with(fn, {**best, "codes": [0]})
    with pytest.raises(ArgumentError, match="field 'flags' names 'no_such_flag'"):
        graphcost.compile_with(fn, {**best, "flags": {"no_such_flag": 1}})
    fast_math = next(d for d in space.dims if d.name == "fast_math")
    with pytest.raises(ArgumentError, match=f"compiler_options.{fast_math.param}"):  # codes say: the default
        graphcost.compile_with(fn, {**best, "compiler_options": {**best["compiler_options"], fast_math.param: True}})
    key, value = next(iter(best["compiler_options"].items()))
    with pytest.raises(ArgumentError, match=f"compiler_options.{key}' is {not value!r}"):
        graphcost.compile_with(fn, {**best, "compiler_options": {key: not value}})


def test_the_timing_protocols_old_name_still_imports_with_a_warning():
    """issue 66: the timing `Protocol` shared its name with `typing.Protocol`; it is `TimingProtocol` now."""
    import warnings

    from graphcost.measure import interleaved

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        old = interleaved.Protocol
    assert old is interleaved.TimingProtocol and any(w.category is DeprecationWarning for w in seen)
