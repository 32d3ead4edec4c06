"""`graphcost.frontend.programs.executable_fingerprint`: equal fingerprints exactly for equal code,
read from the persistent cache entry, so a cache hit and a fresh compile agree."""

import numpy as np
import pytest

from graphcost.frontend.programs.executable_fingerprint import (cached_fingerprint, executable_ids, fingerprint,
                                                                recording_cache_keys)

OPTIONS = [
    {},
    {"xla_llvm_disable_expensive_passes": False},  # its default, passed explicitly: the same code
    {"xla_cpu_enable_fast_math": True},  # other machine code for exp/sin/log
    {"xla_backend_optimization_level": 0},  # other machine code
]


def _straight(x):
    import jax.numpy as jnp

    return jnp.sort(jnp.sin(x) * jnp.exp(x / 3.0), axis=0) + jnp.cumsum(jnp.log1p(jnp.abs(x)), axis=1)


def _looped(x):
    """A while loop (its body's thunks are nested in the while thunk's, each with the module id)."""
    import jax
    import jax.numpy as jnp

    def body(carry):
        y, i = carry
        return jnp.sin(y) * jnp.exp(y / 3.0) + 0.1, i + 1

    return jax.lax.while_loop(lambda c: c[1] < 8, body, (x, 0))[0]


def _fingerprints(cache_dir, program=_straight) -> list:
    import jax
    import jax.numpy as jnp

    from graphcost.frontend.programs.compile import compile_all, persistent_cache

    def lowered():
        return [jax.jit(program).lower(jnp.ones((64, 96))) for _ in OPTIONS]

    out: list = [None] * len(OPTIONS)
    with persistent_cache(cache_dir):
        compile_all(lowered(), OPTIONS, 2)  # as the collector's driver does, first
        with recording_cache_keys():  # then compiled again: not from memory, each entry's key is seen
            compile_all(lowered(), OPTIONS, 2, keep=False,
                        on_compiled=lambda i, exe: out.__setitem__(i, cached_fingerprint()))
    return out


def test_equal_code_equal_fingerprint_and_a_cache_hit_agrees_with_the_fresh_compile(tmp_path):
    pytest.importorskip("jax")
    fresh = _fingerprints(tmp_path / "cache")
    assert all(isinstance(f, str) and len(f) == 64 for f in fresh)
    assert fresh[0] == fresh[1] and len({fresh[0], fresh[2], fresh[3]}) == 3
    assert _fingerprints(tmp_path / "cache") == fresh  # every compile a cache hit now
    assert executable_ids(fresh).tolist() == [0, 0, 2, 3]


def test_a_loop_program_compiled_twice_under_equal_options_has_one_fingerprint(tmp_path):
    pytest.importorskip("jax")
    looped = _fingerprints(tmp_path / "cache", _looped)
    assert looped[0] == looped[1] != looped[3]  # (fast-math leaves this sin / exp loop as it is: looped[2] may equal)


def test_no_cache_entry_no_fingerprint_and_nothing_pooled():
    assert cached_fingerprint() is None  # no compile recorded in this thread
    assert executable_ids([None, "a", None, "a", "b"]).tolist() == [0, 1, 2, 1, 4]


def test_an_unexpected_serialization_is_hashed_whole():
    a, b = fingerprint(b"\x02\x08\x01not an executable"), fingerprint(b"\x02\x08\x01not an executable!")
    assert a != b and a == fingerprint(b"\x02\x08\x01not an executable") and len(a) == 64
    assert np.array_equal(executable_ids([a, b, a]), [0, 1, 0])



FIRST_COMPILE = """
import tempfile
import jax.numpy as jnp
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.learners.effects import single_option_configs
from graphcost.tuning.space import make_space
from graphcost.tuning.trial import Evaluator

a = jnp.linspace(-1.0, 1.0, 32 * 32).reshape(32, 32)
program = TuneProgram(lambda a, b: jnp.tanh(a @ b.T).sum(axis=0), (a, a + 1.0), "tiny")
space = make_space("flags", program)
with tempfile.TemporaryDirectory() as cache:
    ev = Evaluator(program, space, cache_dir=cache)  # the default: this fresh process's first compile
    ev.compile_many(single_option_configs(space))
    print(sum(fp == ev.fingerprints[space.default()] for fp in ev.fingerprints.values()) - 1)
"""


def test_the_first_compile_of_a_process_is_fingerprinted_like_later_ones():
    """A fresh process's first XLA compile with options serialized to other bytes than its later ones (jaxlib
    0.10.2), so the default, compiled first, shared its executable with none of its single-option neighbours
    that make the same code; the recording warms the compiler up first, and some of them share it."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", FIRST_COMPILE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip().splitlines()[-1]) >= 1
