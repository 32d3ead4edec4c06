"""The tuning tests need JAX (the jax extra) and Optuna (the tune extra)."""

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("optuna")
