"""Fixtures for the JAX frontend tests: skip cleanly when the optional JAX extra is absent."""

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")


@pytest.fixture(scope="module")
def tiny_dot_program():
    """A tiny program with two dots, a tanh and a reshape: ``fn(x, w) -> scalar``."""
    import jax.numpy as jnp

    def fn(x, w):
        y = jnp.tanh(x @ w)  # (16, 32)
        z = (y @ w.T).reshape(32, 16)  # (32, 16)
        return z.sum()

    return fn, (jnp.ones((16, 32), jnp.float32), jnp.ones((32, 32), jnp.float32) * 0.01)
