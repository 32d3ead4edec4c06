"""The second held-out tune suite (benchmarks/tune/holdout_suite.py): at least twelve programs, most of
them loops of small kernels, float32 throughout, and no name shared with the first suite
(benchmarks/tune/tune_suite.py) or with a training-zoo family. Only traced (make_jaxpr), never run."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from bench_suites import load_suite, traced

from graphcost.frontend.programs.zoo import FAMILIES


@pytest.fixture(scope="module")
def holdout():
    return load_suite("holdout_suite")


@pytest.fixture(scope="module")
def jaxprs(holdout):
    def check(name, leaves):
        assert leaves and all(isinstance(x, jax.Array) for x in leaves), name
        assert all(x.dtype in (jnp.float32, jnp.int32) for x in leaves), name
        assert any(x.dtype == jnp.float32 for x in leaves), name

    return traced(holdout.HOLDOUT, check)


def test_holdout_has_at_least_twelve_programs(holdout):
    assert len(holdout.HOLDOUT) >= 12
    makers = {name for name in dir(holdout) if name.startswith("make_")}
    assert makers == {make.__name__ for make in holdout.HOLDOUT.values()}  # every maker is listed, once
    assert all(make.__doc__ for make in holdout.HOLDOUT.values())


def test_most_holdout_programs_are_loops(jaxprs):
    loops = [name for name, text in jaxprs.items() if "while" in text or "scan" in text]
    assert len(loops) >= 7, loops


def test_holdout_programs_compute_in_float32(jaxprs):
    for name, text in jaxprs.items():
        assert "f64" not in text and "bf16" not in text and "f16" not in text, name


def test_holdout_names_collide_with_neither_tune_suite_nor_zoo(holdout):
    suite = load_suite("tune_suite")
    names = set(holdout.HOLDOUT)
    assert not names & set(suite.SUITE), names & set(suite.SUITE)
    assert not names & set(FAMILIES), names & set(FAMILIES)
    assert not {make.__name__ for make in holdout.HOLDOUT.values()} & {f"make_{n}" for n in suite.SUITE}
