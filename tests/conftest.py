"""Shared test fixtures: where the real shared data lives."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # shared helpers: from cli_asserts import ...

# ../shared/data beside the checkout, or $GRAPHCOST_SHARED_DATA (the variable the dataset loaders read too)
SHARED_DATA = Path(os.environ.get("GRAPHCOST_SHARED_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data")


def pytest_addoption(parser):
    """`pytest --deep`: the fuzz suite (tests/fuzz) draws 5,000 cases per test instead of its CI budget."""
    parser.addoption("--deep", action="store_true", default=False, help="fuzz suite: up to 5,000 generated cases per test (5,581 in all), address space capped at 8 GB")


def pytest_configure(config):
    if config.getoption("--deep"):
        os.environ["GRAPHCOST_FUZZ_DEEP"] = "1"  # read by tests/fuzz when its modules are imported


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the checkout (present locally and in CI), or $GRAPHCOST_SHARED_DATA."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data not found at {SHARED_DATA}; put the checkout beside ../shared or set GRAPHCOST_SHARED_DATA")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """Commands run in process set torch's intra-op thread count (`--threads auto`): put it back after
    every test, so no test inherits a count an earlier one left (the DDP test once compared a 2-thread
    reference with 1-thread ranks after the fuzz suite had run `dag train`)."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    yield
    if before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)
