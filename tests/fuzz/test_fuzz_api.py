"""The fuzz suite of the Python API (issue 65): `graphcost.fit`, `RunSpec`, `recipe_config`, `graphcost.tune`,
`TuneConfig`, `graphcost.compile_with`, `graphcost.rank_configs` and the LayerDAG API (`LayerDAGTrainConfig`,
`train_layerdag`'s model overrides, `sample_dags`) driven with generated arguments.

The property of every case: the call either accepts the value or raises `graphcost.guards.bounds.ArgumentError` (a
`GraphcostError`, a ValueError and a TypeError) whose message STARTS with the argument's name, before any work;
no other exception escapes (no AttributeError, no IndexError, no torch or JAX error). Values that no argument can
use (NaN, an arbitrary object, bytes) must be refused. Outputs inside the inputs, inside another run, on a
virtual file system or on a device are refused, naming the argument, with nothing written.

Hypothesis draws with a fixed seed (`derandomize`) and a small budget here; `pytest --deep` (GRAPHCOST_FUZZ_DEEP=1)
draws 5,000 per test (50,062 cases, about a minute; BENCHMARKS.md "Fuzz suite, deep mode"). Nothing here trains,
compiles or samples: a value the library accepts ends before the work (skipped as usable, or the work mocked).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from deep import DEEP, cap_address_space, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphcost.guards.bounds import ArgumentError
from graphcost.errors import GraphcostError
from graphcost.layerdag.train import LayerDAGTrainConfig

if DEEP:
    cap_address_space()
    pytestmark = pytest.mark.timeout(0)  # a deep test runs for minutes: no per-test limit (pyproject `timeout`)
FUZZ = settings(max_examples=examples(80), derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Opaque:
    """An object no argument can use."""

    def __repr__(self) -> str:
        return "Opaque()"


NEVER = [math.nan, Opaque(), b"\x00"]  # no argument takes these
VALUES = st.one_of(
    st.sampled_from([*NEVER, math.inf, -math.inf, -1, 0, 1, -(10**30), 10**30, 2**63, 1.5, -0.5, "", "1", "nope", "0.1",
                     None, True, False, [], [1], ["nope"], {}, {"nope": 1}, ()]),
    st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
)


def _fields(cls) -> list[str]:
    import dataclasses

    return [f.name for f in dataclasses.fields(cls)]


def check_refusal(call, name: str, value) -> None:
    """`call()` accepts `value` for argument `name`, or refuses it with an ArgumentError starting with `name`."""
    try:
        call()
    except ArgumentError as exc:
        assert isinstance(exc, GraphcostError)
        assert str(exc).startswith(name), f"{name}={value!r}: the message does not start with {name!r}: {exc}"
        assert "\n" not in str(exc).strip(), f"{name}={value!r}: not one line: {exc}"
        return
    assert not any(value is v for v in NEVER) and not (isinstance(value, float) and math.isnan(value)), \
        f"{name}={value!r} was accepted"


def _recipe_fields() -> list[str]:
    from graphcost.train.trainer import TrainConfig

    return _fields(TrainConfig)


@FUZZ
@given(name=st.sampled_from(["folds", "train_folds", "keep", "seeds", "max_graphs", "data_dir", "collection", "trees",
                             "config"]), value=VALUES)
def test_run_spec_fields(name, value):
    from graphcost.train.spec import RunSpec

    extra = {"folds": 3} if name in ("train_folds", "keep") else {}
    check_refusal(lambda: RunSpec(**extra, **{name: value}), name, value)


@FUZZ
@given(name=st.sampled_from(_recipe_fields()), value=VALUES)
def test_recipe_config_fields(name, value):
    from graphcost.train.spec import recipe_config

    check_refusal(lambda: recipe_config(**{name: value}), name, value)


@FUZZ
@given(name=st.sampled_from(["out", "cache_dir", "max_memory_gb", "report", "resume", "overwrite", "spec"]),
       value=VALUES)
def test_fit_arguments(name, value, tmp_path_factory):
    """`fit` checks its own arguments before it reads any data: a usable value gets as far as the data (absent
    here: a DatasetError), an unusable one is refused naming the argument."""
    from graphcost.train.fit import fit
    from graphcost.train.spec import RunSpec

    if name in ("out", "cache_dir") and isinstance(value, str) and value.strip():
        return  # a path: test_fit_outputs_... draws those
    if name == "spec" and value is None:
        return  # fit(None) is the default recipe on the shipped data: it trains (tests/train); found by the deep run
    tmp = tmp_path_factory.mktemp("fit")
    spec = value if name == "spec" else RunSpec(data_dir=tmp / "absent")
    kwargs = {"out": tmp / "run", **({} if name == "spec" else {name: value})}
    try:
        fit(spec, **kwargs)
    except ArgumentError as exc:
        assert str(exc).startswith(name), f"{name}={value!r}: {exc}"
        return
    except GraphcostError:  # the absent data, found once every argument passed
        pass
    assert not any(value is v for v in NEVER) and not (isinstance(value, float) and math.isnan(value)), \
        f"{name}={value!r} was accepted"
    assert not (tmp / "run").exists()


# where neither a run nor a cache may go: inside the data, onto an earlier run (no overwrite), a device, a virtual
# file system, a file or below one
OUTPUT_PLACES = ["DATA", "DATA/train", "DATA/train/inner", "DATA/train/g0.npz", "RUN", "/proc/graphcost", "/dev/null",
                 "/sys/graphcost", "FILE", "FILE/below"]


def _place(tmp: Path, where: str) -> Path:
    return Path(where.replace("DATA", str(tmp / "data")).replace("RUN", str(tmp / "run"))
                .replace("FILE", str(tmp / "file.txt")))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A data directory (two graphs of the shipped cpu_layout), a finished training run and a plain file."""
    import shutil

    from graphcost.datasets import shipped_dataset_dir

    tmp = tmp_path_factory.mktemp("world")
    src = shipped_dataset_dir("cpu_layout")
    for split in ("train", "valid"):
        (tmp / "data" / split).mkdir(parents=True)
        for i, f in enumerate(sorted((src / split).glob("*.npz"))[:2]):
            shutil.copy(f, tmp / "data" / split / f"g{i}.npz")
    (tmp / "run").mkdir()
    (tmp / "run" / "run.json").write_text('{"config": {}}')
    (tmp / "run" / "best.pt").write_bytes(b"weights")
    (tmp / "file.txt").write_text("keep me")
    return tmp


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@FUZZ
@given(name=st.sampled_from(["out", "cache_dir"]), where=st.sampled_from(OUTPUT_PLACES))
def test_fit_outputs_inside_inputs_runs_and_devices_are_refused(world, name, where):
    """Refused before any graph is read; a case that got past the checks would stop at the model's memory
    (max_memory_gb 1e-12), never train."""
    from graphcost.train.fit import fit
    from graphcost.train.spec import RunSpec
    from graphcost.guards.atomic import OutputExistsError
    from graphcost.guards.outputs import OutputPathError

    if name == "cache_dir" and where == "RUN":
        return  # a cache beside another run's files is allowed
    before = _snapshot(world)
    kwargs = {"out": world / "fresh_out", "cache_dir": world / "fresh_cache", name: _place(world, where)}
    with pytest.raises((OutputPathError, OutputExistsError)) as info:
        fit(RunSpec(data_dir=world / "data"), max_memory_gb=1e-12, **kwargs)
    message = str(info.value)
    assert message.startswith(f"{name} ") or message.startswith(f"{_place(world, where)}: {name} "), message
    assert "\n" not in message.strip()
    assert _snapshot(world) == before
    assert not (world / "fresh_out").exists() and not (world / "fresh_cache").exists()


@pytest.fixture(scope="module")
def tune_fields():
    from graphcost.tuning import TuneConfig

    return [f for f in _fields(TuneConfig) if f not in ("progress",)]


@FUZZ
@given(data=st.data(), value=VALUES)
def test_tune_config_fields(tune_fields, data, value):
    from graphcost.tuning import TuneConfig

    name = data.draw(st.sampled_from(tune_fields))
    check_refusal(lambda: TuneConfig(**{name: value}), name, value)


@FUZZ
@given(data=st.data(), value=VALUES)
def test_tune_keywords(tune_fields, data, value):
    """`graphcost.tune(fn, x, **{field: value})` checks them like the config, before anything is traced. An
    unknown `learner` (the last field checked) stops every case there, so nothing is tuned."""
    import numpy as np

    from graphcost.tuning import tune
    from graphcost.tuning.strategies import ONLINE_LEARNERS

    name = data.draw(st.sampled_from(tune_fields))
    if name in ("out", "storage", "program_ref", "name") and isinstance(value, str) and value:
        return  # a path, URL or name: the output tests draw those
    if name == "learner" and value in ONLINE_LEARNERS:
        return
    kwargs = {"learner": "__poison__", name: value}
    with pytest.raises(ArgumentError) as info:
        tune(lambda x: x, np.ones(2, np.float32), **kwargs)
    message = str(info.value)
    assert message.startswith(name) or message.startswith("learner"), f"{name}={value!r}: {message}"
    if any(value is v for v in NEVER) or (isinstance(value, float) and math.isnan(value)):
        assert message.startswith(name), f"{name}={value!r} was accepted: {message}"


@FUZZ
@given(field=st.sampled_from(["space", "codes", "compiler_options", "flags", "layouts"]), value=VALUES)
def test_compile_with_a_damaged_configuration(field, value):
    """A best.json's dict with one field replaced: refused in one line (or applied when still valid)."""
    from graphcost.tuning import compile_with

    best = {"space": "flags", "codes": [], "compiler_options": {}, "flags": {}, "layouts": []}
    best[field] = value
    try:
        compile_with(lambda x: x, best)
    except (ArgumentError, ValueError) as exc:
        assert isinstance(exc, GraphcostError) or "tuned configuration" in str(exc), f"{field}={value!r}: {exc!r}"
        assert "\n" not in str(exc).strip()


@FUZZ
@given(option=st.sampled_from(["xla_dump_to", "xla_dump_hlo_as_text", "xla_dump_hlo_pass_re", "nope",
                               "xla_backend_optimization_level", "xla_cpu_enable_fast_math"]),
       value=st.sampled_from(["some/path", "/tmp/x", True, 3, 99, ".*", "nope"]))
def test_compile_with_takes_no_option_outside_the_space(option, value):
    """issue 65: a best.json whose compiler_options hold xla_dump_to made XLA write files where the file said.
    An option outside the tune space is always refused; one of the space with a value outside its domain too."""
    from graphcost.tuning import compile_with

    best = {"space": "flags", "codes": [], "compiler_options": {option: value}, "flags": {}, "layouts": []}
    in_space = option in ("xla_backend_optimization_level", "xla_cpu_enable_fast_math")
    try:
        compile_with(lambda x: x, best)
    except (ArgumentError, ValueError) as exc:
        assert "compiler_options" in str(exc) or option in str(exc), str(exc)
        return
    assert in_space and (value in (True, 3) if option == "xla_backend_optimization_level" else value is True), \
        f"{option}={value!r} was applied"


@FUZZ
@given(name=st.sampled_from(["configs", "seed", "workers", "name", "allow_fast_math"]), value=VALUES)
def test_rank_configs_arguments(name, value):
    """Every argument is checked before the program is traced: the tracing, the model's loading and the compiling
    and costing (`_rank`) are replaced here, so an accepted value ends at once (the real ranking:
    tests/collect/test_kernel_collection.py)."""
    from unittest import mock

    import numpy as np

    from graphcost.frontend.programs import user_program
    from graphcost.workload import rank

    with mock.patch.object(user_program, "prepare_program"), mock.patch.object(rank.KernelCostModel, "load"), \
            mock.patch.object(rank, "_rank", return_value="ranked") as ranked:
        try:
            result = rank.rank_configs(lambda x: x * 2, np.ones(4, np.float32), **{name: value})
        except ArgumentError as exc:
            assert str(exc).startswith(name), f"{name}={value!r}: {exc}"
            assert not ranked.called
            return
    assert result == "ranked"
    assert not any(value is v for v in NEVER), f"{name}={value!r} was accepted"


@FUZZ
@given(name=st.sampled_from(_fields(LayerDAGTrainConfig)), value=VALUES)
def test_layerdag_train_config_fields(name, value):
    check_refusal(lambda: LayerDAGTrainConfig(**{name: value}), name, value)


@pytest.fixture(scope="module")
def tiny_dags():
    import numpy as np

    from graphcost.layerdag.dag_record import DAG

    return [DAG(np.array([0, 1, 1]), np.array([0, 0]), np.array([1, 2])) for _ in range(3)]


@FUZZ
@given(name=st.sampled_from(["T_node", "dim", "heads", "label_dropout", "edge_density", "conditional", "node_marginal",
                             "nope"]), value=VALUES)
def test_layerdag_model_overrides(tiny_dags, name, value):
    from graphcost.layerdag.train import build_model

    try:
        build_model(tiny_dags, **{name: value})
    except ArgumentError as exc:
        assert str(exc).startswith(name), f"{name}={value!r}: {exc}"
        return
    except ValueError as exc:  # a model the data cannot have (e.g. label dropout without labels): one line
        assert "\n" not in str(exc).strip()
        return
    assert not any(value is v for v in NEVER), f"{name}={value!r} was accepted"


@pytest.fixture(scope="module")
def tiny_model(tiny_dags):
    from graphcost.layerdag.train import build_model

    model, _ = build_model(tiny_dags, dim=8, T_node=2, T_edge=2)
    return model


@FUZZ
@given(name=st.sampled_from(["num", "batch_size", "seed", "max_layers", "guidance", "final_step", "labels"]),
       value=VALUES)
def test_sample_dags_arguments(tiny_model, name, value):
    from graphcost.layerdag.sample import sample_dags

    from graphcost.guards.bounds import SAMPLES_MAX, SEED_MAX

    usable = {"num": (1, SAMPLES_MAX), "batch_size": (1, SAMPLES_MAX), "seed": (0, SEED_MAX),
              "max_layers": (1, SAMPLES_MAX)}  # the library's bounds: an integer inside would sample (tests/layerdag)
    if isinstance(value, int) and not isinstance(value, bool) and name in usable and \
            usable[name][0] <= value <= usable[name][1]:
        return  # accepted and correct, but a large count samples for minutes (the deep run stalled here)
    try:
        sample_dags(tiny_model, **{"num": 1, "progress": False, name: value})
    except ArgumentError as exc:
        assert str(exc).startswith(name), f"{name}={value!r}: {exc}"
        return
    except ValueError as exc:  # a model that cannot honour it (guidance on an unconditional model): one line
        assert "\n" not in str(exc).strip()
        return
    assert not any(value is v for v in NEVER), f"{name}={value!r} was accepted"
