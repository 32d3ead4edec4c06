"""The tuning tests need JAX (the jax extra) and Optuna (the tune extra)."""

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("optuna")


@pytest.fixture(autouse=True)
def _a_quick_kernel_prior(request, monkeypatch):
    """The default flag prior compiles every single-option configuration (`graphcost.tuning.kernel_prior`); outside
    its own tests, one chunk of them is enough for a test's tune and keeps the suite within CI's time."""
    if request.node.path.name != "test_kernel_prior.py":
        import graphcost.tuning.kernel_prior as kernel_prior

        monkeypatch.setattr(kernel_prior, "PRIOR_SECONDS", 0.0)
