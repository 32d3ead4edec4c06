"""A program whose own output changes from call to call (issue 36): the tuner says that the DEFAULT is
non-deterministic, once, instead of reporting every configuration as a failed output check."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from graphcost.cli import app

PROGRAM = '''
import numpy as np
import jax
import jax.numpy as jnp
from jax.experimental import io_callback

_rng = np.random.default_rng()


def _noise():
    return _rng.standard_normal(8).astype(np.float32)


def noisy():
    def fn(a):
        return jnp.tanh(a) + io_callback(_noise, jax.ShapeDtypeStruct((8,), jnp.float32))
    return fn, (jnp.ones(8),)


def steady():
    def fn(a):
        return jnp.tanh(a) * 2.0
    return fn, (jnp.ones(8),)
'''
FAST = ["--rounds", "1", "--calls", "1", "--processes", "1", "--round-size", "2", "--budget", "2",
        "--strategy", "random", "--no-kernels", "--no-ablation"]


@pytest.fixture()
def prog(tmp_path):
    path = tmp_path / "noisy_prog.py"
    path.write_text(PROGRAM)
    return path


def test_a_non_deterministic_default_is_said_once(tmp_path, prog):
    from cli_asserts import one_line_error

    line = one_line_error(CliRunner().invoke(app, ["tune", f"{prog}:noisy", "--out", str(tmp_path / "o"), *FAST]),
                          "the default configuration itself gives different outputs from call to call",
                          "deterministic", "--rtol")
    assert "wrong_output" not in line


def test_the_evaluator_compares_the_default_with_itself(prog):
    import importlib.util

    from graphcost.measure.interleaved import TimingProtocol
    from graphcost.frontend.programs.user_program import TuneProgram
    from graphcost.tuning.space import make_space
    from graphcost.tuning.trial import Evaluator, NondeterministicProgram

    spec = importlib.util.spec_from_file_location("noisy_prog", prog)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    protocol = TimingProtocol(rounds=1, calls=1, warmup=0)
    for name, deterministic in (("noisy", False), ("steady", True)):
        fn, args = getattr(module, name)()
        program = TuneProgram(fn, args, name)
        space = make_space("flags", program)
        if deterministic:
            Evaluator(program, space, protocol)
        else:
            with pytest.raises(NondeterministicProgram, match="noisy: the default configuration itself"):
                Evaluator(program, space, protocol)
