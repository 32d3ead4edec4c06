"""`build_model`'s overrides are checked before anything is allocated (issue 65, found by the deep API fuzz):
heads that do not divide dim were torch's AssertionError, and dim=8192 built 23 GB of weights."""

from __future__ import annotations

import numpy as np
import pytest

from graphcost.guards.bounds import ArgumentError
from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.train import build_model


@pytest.fixture(scope="module")
def dags():
    return [DAG(np.array([0, 1, 1]), np.array([0, 0]), np.array([1, 2])) for _ in range(3)]


@pytest.mark.parametrize(("overrides", "named"), [({"heads": 5}, "heads"), ({"dim": 7}, "dim"),
                                                   ({"dim": 100, "heads": 3}, "heads")])
def test_heads_that_do_not_divide_dim_are_refused_naming_the_override(dags, overrides, named):
    with pytest.raises(ArgumentError, match=rf"^{named}: dim \d+ must be a multiple of heads \d+"):
        build_model(dags, **overrides)


def test_a_model_past_this_process_s_memory_is_refused_before_it_is_built(dags, monkeypatch):
    import graphcost.guards.bounds

    monkeypatch.setattr(graphcost.guards.bounds, "memory_bytes", lambda: 2**30)  # 1 GiB to use
    with pytest.raises(ArgumentError, match=r"^dim 2048: a LayerDAG of .* parameters .* more than the 1.07 GB"):
        build_model(dags, dim=2048)  # ~360 M parameters, ~5.7 GB to train: nothing is allocated
    model, _ = build_model(dags, dim=64)  # within memory: built
    assert model.config.dim == 64


def test_memory_bytes_honours_the_address_space_limit():
    """`ulimit -v` below the machine's memory is the memory the process may use."""
    import os
    import resource
    from pathlib import Path

    from graphcost.guards.bounds import memory_bytes

    status = Path("/proc/self/status")
    if not status.is_file():
        pytest.skip("needs Linux's /proc/self/status for the process's address space")
    vm_size = next(int(line.split()[1]) * 1024 for line in status.read_text().splitlines() if line.startswith("VmSize:"))
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    cap = vm_size + 2**30  # room for this test; below the machine's memory on any machine this suite runs on
    if cap >= physical:
        pytest.skip("this process's address space is already near the machine's memory")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and hard < cap:
        pytest.skip("a hard address-space limit below the test's")
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        seen = memory_bytes()
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert seen == cap
