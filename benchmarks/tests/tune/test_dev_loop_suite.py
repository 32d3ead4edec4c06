"""The development loop suite (benchmarks/tune/dev_loop_suite.py): five programs, each a loop of small
kernels (its jaxpr has a ``while`` or a ``scan``), float32 throughout, and no name shared with the
held-out suite (benchmarks/tune/holdout_suite.py), the first suite (benchmarks/tune/tune_suite.py) or
a training-zoo family. Only traced (make_jaxpr), never run."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from bench_suites import load_suite, traced

from graphcost.frontend.programs.zoo import FAMILIES


@pytest.fixture(scope="module")
def dev_loop():
    return load_suite("dev_loop_suite")


@pytest.fixture(scope="module")
def jaxprs(dev_loop):
    def check(name, leaves):
        assert leaves and all(isinstance(x, jax.Array) and x.dtype == jnp.float32 for x in leaves), name

    return traced(dev_loop.DEV_LOOP, check)


def test_dev_loop_has_five_documented_programs(dev_loop):
    assert len(dev_loop.DEV_LOOP) == 5
    makers = {name for name in dir(dev_loop) if name.startswith("make_")}
    assert makers == {make.__name__ for make in dev_loop.DEV_LOOP.values()}  # every maker is listed, once
    assert all(make.__doc__ for make in dev_loop.DEV_LOOP.values())


def test_every_dev_loop_program_is_a_loop(jaxprs):
    for name, text in jaxprs.items():
        assert "while" in text or "scan" in text, name


def test_dev_loop_programs_compute_in_float32(jaxprs):
    for name, text in jaxprs.items():
        assert "f64" not in text and "bf16" not in text and "f16" not in text, name


def test_dev_loop_names_collide_with_no_other_suite_nor_zoo(dev_loop):
    names = set(dev_loop.DEV_LOOP)
    makers = {make.__name__ for make in dev_loop.DEV_LOOP.values()}
    for other in (load_suite("holdout_suite").HOLDOUT, load_suite("tune_suite").SUITE):
        assert not names & set(other), names & set(other)
        assert not makers & {make.__name__ for make in other.values()}
    assert not names & set(FAMILIES), names & set(FAMILIES)
