"""The fuzz suite's deep mode (`pytest --deep`, or GRAPHCOST_FUZZ_DEEP=1): 5,000 generated cases per test,
no per-test time limit, and the process's address space capped so that a case allocating without bound fails
as that case (a MemoryError) instead of the whole run being OOM-killed (benchmarks/history/fuzz-2026-11-26.md, "Before (the OOM kill)")."""

from __future__ import annotations

import os

DEEP = os.environ.get("GRAPHCOST_FUZZ_DEEP") == "1"
DEEP_EXAMPLES = 5000
# both suites in one deep run peak at 882 MiB resident (2026-12-05); a case past the cap fails as itself
DEEP_ADDRESS_SPACE_GB = 8


def cap_address_space() -> None:
    """Lower this process's RLIMIT_AS soft limit to the deep cap, GRAPHCOST_FUZZ_MAX_AS_GB (never raise it)."""
    import resource

    cap = int(float(os.environ.get("GRAPHCOST_FUZZ_MAX_AS_GB", DEEP_ADDRESS_SPACE_GB)) * 2**30)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def examples(ci_budget: int) -> int:
    """Cases per test: the deep budget in deep mode, else the suite's CI budget."""
    return DEEP_EXAMPLES if DEEP else ci_budget
