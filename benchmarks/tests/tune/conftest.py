"""The tests of benchmarks/tune need JAX (the jax extra) and Optuna (the tune extra), as the tuner's tests do."""

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("optuna")
