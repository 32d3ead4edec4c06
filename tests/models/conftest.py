"""Fixtures for model tests (helpers live in models_testutil.py)."""

from __future__ import annotations

import pytest
import torch

from models_testutil import make_layout_batch, make_tile_batch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny tensors: one intra-op thread is faster than two and avoids stalls on a busy host."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def layout_batch():
    return make_layout_batch()


@pytest.fixture
def tile_batch():
    return make_tile_batch()
