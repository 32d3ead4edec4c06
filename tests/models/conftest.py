"""Fixtures for model tests (helpers live in models_testutil.py)."""

from __future__ import annotations

import pytest

from models_testutil import make_layout_batch, make_tile_batch


@pytest.fixture
def layout_batch():
    return make_layout_batch()


@pytest.fixture
def tile_batch():
    return make_tile_batch()
