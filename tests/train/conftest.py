"""Fixtures for tests/train (helpers live in train_stubs.py)."""

from __future__ import annotations

import pytest
import torch

from train_stubs import PreparedGraph, build_tiny, make_layout_graph, stub_trainer

torch.set_num_threads(1)  # tiny tensors: thread hand-offs cost more than they save on 2 shared cores


@pytest.fixture
def layout_graphs() -> list[PreparedGraph]:
    return [make_layout_graph(f"g{i}", seed=i) for i in range(6)]


@pytest.fixture
def tiny_trainer():
    """A `Trainer` class that builds the stand-in model (`train_stubs.build_tiny`)."""
    return stub_trainer(build_model=build_tiny)
