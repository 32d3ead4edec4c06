"""The development loop suite (benchmarks/tune/dev_loop_suite.py): five programs, each a loop of small
kernels (its jaxpr has a ``while`` or a ``scan``), float32 throughout, and no name shared with the
held-out suite (benchmarks/tune/holdout_suite.py), the first suite (benchmarks/tune/tune_suite.py) or
a training-zoo family. Only traced (make_jaxpr), never run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from graphcost.frontend.programs.zoo import FAMILIES

TUNE = Path(__file__).resolve().parents[2] / "benchmarks" / "tune"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", TUNE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dev_loop():
    return _load("dev_loop_suite")


@pytest.fixture(scope="module")
def jaxprs(dev_loop):
    out = {}
    for name, make in dev_loop.DEV_LOOP.items():
        fn, args = make()
        assert isinstance(args, tuple), name
        leaves = jax.tree_util.tree_leaves(args)
        assert leaves and all(isinstance(x, jax.Array) and x.dtype == jnp.float32 for x in leaves), name
        out[name] = str(jax.make_jaxpr(fn)(*args))
    return out


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
    for other in (_load("holdout_suite").HOLDOUT, _load("tune_suite").SUITE):
        assert not names & set(other), names & set(other)
        assert not makers & {make.__name__ for make in other.values()}
    assert not names & set(FAMILIES), names & set(FAMILIES)
