"""The workload tests need JAX (the jax extra)."""

import pytest

jax = pytest.importorskip("jax")
