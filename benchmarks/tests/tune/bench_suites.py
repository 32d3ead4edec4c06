"""The tune suites of benchmarks/tune/ for the tests: loaded from their files (benchmarks/ is no package), and each
program traced once (make_jaxpr, never run)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable

TUNE = Path(__file__).resolve().parents[2] / "tune"


def load_suite(name: str):
    """The module benchmarks/tune/`name`.py."""
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", TUNE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def traced(programs: dict[str, Callable], check_args: Callable[[str, list], None]) -> dict[str, str]:
    """{name: the jaxpr text of `make()`'s function on its arguments}, after `check_args(name, leaves)` has checked
    the arguments (a tuple; `leaves`: its arrays)."""
    import jax

    out = {}
    for name, make in programs.items():
        fn, args = make()
        assert isinstance(args, tuple), name
        check_args(name, jax.tree_util.tree_leaves(args))
        out[name] = str(jax.make_jaxpr(fn)(*args))
    return out
