"""Load a script of benchmarks/ as a module for its tests (shared helper: `from bench_modules import ...`)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1]


def load_benchmark(script: str) -> Iterator[ModuleType]:
    """Yield benchmarks/`script` (e.g. "tune/bench_tune.py") imported under a name of its own (a module-scoped
    fixture's body), with its folder on sys.path while it is in use (as when it runs: it imports its siblings)."""
    folder = str((BENCHMARKS / script).parent)
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(f"{Path(script).stem}_under_test", BENCHMARKS / script)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(folder)
