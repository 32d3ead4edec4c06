"""The widened flag space (issue 25): read from the installed jaxlib, round-trips through sample,
mutate, featurize and apply, skips what the jaxlib does not know, and is big enough to need a model."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from graphcost.frontend.programs import flags as flagspace
from graphcost.frontend.programs import xla_options
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import FlagSpace, make_space


@pytest.fixture
def fresh_options():
    """Clear the cached option table before and after (a test changes what the jaxlib 'knows')."""
    flagspace.known_options.cache_clear()
    yield
    flagspace.known_options.cache_clear()


def test_options_and_defaults_come_from_the_jaxlib():
    schema, defaults = xla_options.option_schema(), xla_options.option_defaults()
    assert schema is not None and defaults is not None
    assert schema["xla_cpu_prefer_vector_width"].kind == "int" and schema["xla_cpu_ftz"].kind == "bool"
    assert ("CPU_SCHEDULER_TYPE_DEFAULT", 0) in schema["xla_cpu_scheduler_type"].enum_values
    assert schema["xla_cpu_experimental_ynn_fusion_type"].repeated
    from_env = flagspace.env_options()  # XLA read these from XLA_FLAGS (an in-process `collect --single-thread`
    # sets one before JAX starts): the space takes their built-in default and passes them explicitly
    for opt in flagspace.known_options():  # choice 0 of every other dimension is what XLA compiles by default
        if opt.candidate.option not in from_env:
            assert flagspace._same_value(opt.candidate.kind, defaults[opt.candidate.option], opt.values[0])


def test_widened_space_round_trips():
    """sample / mutate stay in the space; the features say what is applied; XLA accepts it and the
    program still computes the same thing."""
    import jax
    import jax.numpy as jnp

    space = FlagSpace()
    assert len(space.dims) > flagspace.LEGACY_COLUMNS and space.size() >= 1_000_000
    x = jnp.linspace(-1.0, 1.0, 64, dtype=jnp.float32).reshape(8, 8)
    fn = lambda x: jnp.tanh(x @ x.T).sum(0)  # noqa: E731
    program = TuneProgram(fn, (x,), "tiny")
    ref = np.asarray(jax.jit(fn)(x))
    rng = np.random.default_rng(0)
    configs = [space.sample(rng) for _ in range(6)]
    configs += [space.mutate(c, rng) for c in configs]
    graph = space.graph_for(program, "tile", configs)
    assert graph.config_feat.shape == (len(configs), flagspace.TILE_CONFIG_DIM)
    for codes, row in zip(configs, graph.config_feat):
        assert space.check(codes) == codes
        decoded = flagspace.config_from_features(row)
        options = space.compiler_options(codes)
        assert decoded.compiler_options() == options  # the features say exactly what is compiled
        for opt, value in zip(space.options, space.values(codes)):  # each option passed is a column off default
            name = opt.candidate.option
            assert (name in options) == (value != opt.default or name == "xla_cpu_multi_thread_eigen")
            if name in options:
                assert options[name] == opt.value(int(row[opt.candidate.column]))
        out = program.lower(None).compile(compiler_options=options)(x)
        np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-3, atol=1e-5)


def test_old_collection_vectors_keep_their_meaning():
    """A 7-column vector of the first cpu_flags collection decodes to the options it was collected with."""
    old = flagspace.FlagConfig((0, 0, 0, 1, 0, 2, 1))  # every old flag off its default
    assert old.values[7:] == (0,) * (len(flagspace.DEFAULT) - 7)
    assert old.compiler_options() == {
        "xla_backend_optimization_level": 0, "xla_cpu_experimental_ynn_fusion_type": "",
        "xla_cpu_use_fusion_emitters": False, "xla_cpu_enable_fast_math": True, "xla_cpu_multi_thread_eigen": False,
        "xla_cpu_prefer_vector_width": 512, "xla_llvm_disable_expensive_passes": True}
    assert flagspace.FlagConfig(flagspace.DEFAULT[:7]).compiler_options() == {"xla_cpu_multi_thread_eigen": True}


def test_unknown_option_is_skipped_with_a_warning(monkeypatch, fresh_options, caplog):
    real = xla_options.option_schema()
    fewer = {k: v for k, v in real.items() if k != "xla_cpu_scheduler_type"}
    monkeypatch.setattr(xla_options, "option_schema", lambda: fewer)
    with caplog.at_level(logging.WARNING, logger="graphcost.frontend.programs.flags"):
        space = FlagSpace()
    assert "skipping xla_cpu_scheduler_type (column 8)" in caplog.text and "no such option" in caplog.text
    assert "scheduler_type" not in [d.name for d in space.dims] and "xla_cpu_scheduler_type" in flagspace.skipped_options()
    codes = space.sample(np.random.default_rng(1))
    assert "xla_cpu_scheduler_type" not in space.compiler_options(codes)
    with pytest.raises(ValueError, match="has no xla_cpu_scheduler_type option"):
        flagspace.FlagConfig(flagspace.DEFAULT[:8] + (1,)).compiler_options()


def test_option_of_another_type_or_default_is_skipped(monkeypatch, fresh_options, caplog):
    real, defaults = xla_options.option_schema(), xla_options.option_defaults()
    changed = dict(real)
    changed["xla_cpu_ftz"] = xla_options.OptionInfo("xla_cpu_ftz", "int")
    monkeypatch.setattr(xla_options, "option_schema", lambda: changed)
    monkeypatch.setattr(xla_options, "option_defaults", lambda: {**defaults, "xla_cpu_prefer_vector_width": 1024})
    with caplog.at_level(logging.WARNING, logger="graphcost.frontend.programs.flags"):
        names = [d.name for d in FlagSpace().dims]
    assert "no_ftz" not in names and "log2_vector_width_over_128" not in names
    assert "not one of the values graphcost stores" in caplog.text and "as a int, not a bool" in caplog.text


def test_unreadable_descriptor_falls_back_to_the_old_options(monkeypatch, fresh_options, caplog):
    monkeypatch.setattr(xla_options, "option_schema", lambda: None)
    with caplog.at_level(logging.WARNING, logger="graphcost.frontend.programs.flags"):
        space = FlagSpace()
    assert "cannot read XLA's DebugOptions" in caplog.text
    assert [d.name for d in space.dims] == list(flagspace.FLAG_COLUMNS[:7])


def test_fast_math_family_only_with_allow_fast_math():
    plain, fast = FlagSpace(), FlagSpace(allow_fast_math=True)
    family = {c.name for c in flagspace.CANDIDATES if c.fast_math}
    assert all(len(d.choices) == 1 for d in plain.dims if d.name in family)
    assert all(len(d.choices) == 2 for d in fast.dims if d.name in family)
    assert fast.size() == plain.size() * 2 ** len(family)


def test_joint_space_is_large():
    import jax.numpy as jnp

    program = TuneProgram(lambda w, x: jnp.tanh(x @ w) @ w.T, (jnp.ones((16, 16)), jnp.ones((4, 16))), "mlp")
    assert make_space("both", program).size() >= 10_000


def test_an_option_in_xla_flags_keeps_its_built_in_default(monkeypatch, fresh_options):
    """XLA reads XLA_FLAGS once per process: a default read from it would differ between a process
    started before the variable changed and its children, and so would the space (and a study's
    fingerprint). Options named there take the built-in default and are always passed."""
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false --xla_cpu_ftz=false")
    space = FlagSpace()
    dims = {d.name: d for d in space.dims}
    assert dims["multi_thread_eigen"].choices[0] == 1 and dims["no_ftz"].choices[0] == 0
    options = space.compiler_options(space.default())
    assert options == {"xla_cpu_multi_thread_eigen": True, "xla_cpu_ftz": True}
