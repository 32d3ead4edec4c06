"""Shared test fixtures: where the real shared data lives."""

import os
import sys
from pathlib import Path

import pytest

# ../shared/data beside the checkout, or $GRAPHCOST_SHARED_DATA (the variable the dataset loaders read too)
SHARED_DATA = Path(os.environ.get("GRAPHCOST_SHARED_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data")


def pytest_addoption(parser):
    """`pytest --deep`: the fuzz suite (tests/fuzz) draws 5,000 cases per test instead of its CI budget."""
    parser.addoption("--deep", action="store_true", default=False, help="fuzz suite: up to 5,000 generated cases per test (55,643 in all), address space capped at 8 GB")


def pytest_configure(config):
    if config.getoption("--deep"):
        os.environ["GRAPHCOST_FUZZ_DEEP"] = "1"  # read by tests/fuzz when its modules are imported


# CI has the shared data and sets this: a test that needs it then fails instead of skipping
REQUIRE_SHARED = "GRAPHCOST_REQUIRE_SHARED_DATA"
SKIP_REASON = (f"needs the project's shared real data, not found at {SHARED_DATA} (a checkout beside ../shared has it; "
               "or point GRAPHCOST_SHARED_DATA at a copy of shared/data)")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the checkout (present locally and in CI), or $GRAPHCOST_SHARED_DATA.
    Absent: the test skips with the reason and the way to get the data; with
    GRAPHCOST_REQUIRE_SHARED_DATA=1 (CI) it fails."""
    if not SHARED_DATA.is_dir():
        if os.environ.get(REQUIRE_SHARED) == "1":
            pytest.fail(f"{REQUIRE_SHARED}=1 but the shared data is not at {SHARED_DATA}")
        pytest.skip(SKIP_REASON)
    return SHARED_DATA


def pytest_collection_modifyitems(items):
    """Every test that uses the shared data (directly or through another fixture) is marked
    ``shared_data``: `.ci/run` runs them in a clone without ../shared, where each must skip."""
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)


def pytest_terminal_summary(terminalreporter):
    """One line that says how many tests skipped for want of the shared data, and how to run them."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if SKIP_REASON in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"{len(skipped)} tests skipped: the shared real data is not at {SHARED_DATA}; "
                                    "set GRAPHCOST_SHARED_DATA=/path/to/shared/data to run them")


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
