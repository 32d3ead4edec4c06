"""Identical executables are measured once (issue 64 §3): a configuration whose compiled code is the
default's, or that of a configuration timed before or earlier in the same batch, copies that timing."""

from __future__ import annotations

import jax.numpy as jnp

from graphcost.measure.interleaved import TimingProtocol
from graphcost.tuning import trial as trial_module
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import make_space
from graphcost.tuning.trial import COPY, OK, Evaluator


def _codes(space, **values):
    """The default with the named options set to the given values."""
    codes = list(space.default())
    for i, d in enumerate(space.dims):
        if d.param_name in values:
            codes[i] = d.param_values.index(values.pop(d.param_name))
    assert not values, values
    return tuple(codes)


def _evaluator(tmp_path, monkeypatch, timed):
    a = jnp.linspace(-1.0, 1.0, 48 * 48).reshape(48, 48)
    program = TuneProgram(lambda a, b: jnp.tanh(a @ b).sum(axis=0), (a, a.T), "tiny")
    space = make_space("flags", program)
    real = trial_module.measure_executables

    def counting(exes, args, protocol):
        timed.append(len(exes) - 1)  # the default is timed with every batch
        return real(exes, args, protocol)

    monkeypatch.setattr(trial_module, "measure_executables", counting)
    return space, Evaluator(program, space, TimingProtocol(rounds=1, calls=1, warmup=1), cache_dir=tmp_path / "cache")


def test_identical_executables_are_timed_once(tmp_path, monkeypatch):
    timed: list[int] = []
    space, ev = _evaluator(tmp_path, monkeypatch, timed)
    # the LLVM's expensive passes change nothing in this program's code (executable_fingerprint's docstring)
    noop = _codes(space, xla_llvm_disable_expensive_passes=True)
    o1 = _codes(space, xla_backend_optimization_level=1)
    o1_noop = _codes(space, xla_backend_optimization_level=1, xla_llvm_disable_expensive_passes=True)
    first = ev.evaluate([noop, o1, o1_noop])
    assert [t.status for t in first] == [COPY, OK, COPY]  # copies: their own status (the tuner does not count them)
    assert first[0].extra["same_executable_as"] == "default" and first[0].ratio == 1.0
    assert first[2].extra["same_executable_as"] == list(o1) and first[2].ratio == first[1].ratio
    assert "same_executable_as" not in first[1].extra
    assert ev.fingerprints[o1] == ev.fingerprints[o1_noop] != ev.fingerprints[space.default()]
    assert timed == [1]  # only o1 was timed
    later = ev.evaluate([_codes(space, xla_backend_optimization_level=0), o1_noop])  # o1's executable again
    assert timed == [1, 1]  # only the O0 configuration: o1's executable was timed in the first batch
    assert later[1].extra["same_executable_as"] == list(o1) and later[1].ratio == first[1].ratio


def test_an_option_that_may_act_at_run_time_is_never_a_copy(tmp_path, monkeypatch):
    """The Eigen thread pool leaves no trace in the executable, but may act when it runs (trial.RUN_TIME_OPTIONS)."""
    timed: list[int] = []
    space, ev = _evaluator(tmp_path, monkeypatch, timed)
    eigen_off = _codes(space, xla_cpu_multi_thread_eigen=False)
    (trial,) = ev.evaluate([eigen_off])
    assert trial.status == OK and "same_executable_as" not in trial.extra and timed == [1]
    assert ev.fingerprints[eigen_off].split(";")[0] == ev.fingerprints[space.default()].split(";")[0]


def test_without_a_cache_every_configuration_is_timed(monkeypatch):
    timed: list[int] = []
    a = jnp.ones((16, 16))
    program = TuneProgram(lambda a: (a @ a).sum(), (a,), "tiny")
    space = make_space("flags", program)
    real = trial_module.measure_executables
    monkeypatch.setattr(trial_module, "measure_executables",
                        lambda exes, args, protocol: (timed.append(len(exes) - 1), real(exes, args, protocol))[1])
    ev = Evaluator(program, space, TimingProtocol(rounds=1, calls=1, warmup=1))
    trials = ev.evaluate([_codes(space, xla_cpu_multi_thread_eigen=False)])
    assert timed == [1] and "same_executable_as" not in trials[0].extra and not ev.fingerprints
