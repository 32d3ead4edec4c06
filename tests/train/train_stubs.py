"""Helpers for tests/train: tiny in-memory prepared graphs and a tiny stand-in cost model.

A module of its own (not conftest.py) so tests can import it by a name no other test directory uses."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.transforms.compress import compress_layout_config
from graphcost.data.transforms.prepared import PreparedGraph
from graphcost.data.synth.collection import write_synthetic_collection
from graphcost.train.trainer import Trainer

torch.set_num_threads(1)  # tiny tensors: thread hand-offs cost more than they save on 2 shared cores


def make_layout_graph(name: str, seed: int, n_nodes: int = 12, n_cfg_nodes: int = 3, n_configs: int = 40) -> PreparedGraph:
    """A random layout graph whose runtime is a smooth function of its configurations."""
    rng = np.random.default_rng(seed)
    node_feat = rng.normal(size=(n_nodes, 140)).astype(np.float32)
    node_feat[:, 134:] = rng.integers(-1, 6, size=(n_nodes, 6))
    src = np.arange(1, n_nodes)
    dst = rng.integers(0, src)  # every node consumes an earlier one
    edge_index = np.stack([src, dst], axis=1).astype(np.int64)  # row [u, v]: u consumes v
    feat = rng.integers(-1, 6, size=(n_configs, n_cfg_nodes, 18)).astype(np.float32)  # (K, C, 18)
    weights = np.linspace(0.5, 1.5, 18)
    runtime = np.exp(0.02 * (feat * weights).sum(axis=(1, 2))) + rng.uniform(0, 0.01, n_configs)  # rankable
    return PreparedGraph(
        name=name,
        kind="layout",
        node_feat=node_feat,
        node_opcode=rng.integers(0, 120, size=n_nodes).astype(np.int64),
        edge_index=edge_index,
        config_node_index=np.sort(rng.choice(n_nodes, n_cfg_nodes, replace=False)).astype(np.int64),
        runtime=runtime.astype(np.float64),
        config_codes=compress_layout_config(feat),
        config_source_index=np.arange(n_configs, dtype=np.int64),
        num_source_configs=n_configs,
    )


@dataclass
class TinyConfig:
    hidden: int = 8
    order_dependent: bool = False


class TinyModel(nn.Module):
    """Stand-in cost model: pooled node features + mean configuration features -> score.

    With `order_dependent`, each score also depends on its position in the batch (so batch order
    matters, like TGraph's cross-configuration attention).
    """

    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        self.node = nn.Linear(140, config.hidden)
        self.cfg = nn.Linear(18, config.hidden)
        self.norm = nn.LayerNorm(config.hidden)
        self.head = nn.Linear(config.hidden, 1)
        self.drop = nn.Dropout(0.1)

    def forward(self, batch) -> torch.Tensor:
        graph = self.node(batch.node_feat).mean(0)  # (H,)
        cfg = self.cfg(batch.node_config_feat.mean(1))  # (B, H)
        h = self.drop(torch.relu(self.norm(cfg + graph)))
        out = self.head(h).squeeze(-1)  # (B,)
        if self.config.order_dependent:
            out = out + 0.1 * torch.arange(out.shape[0], dtype=out.dtype) + 0.05 * out.mean()
        return out


def build_tiny(name: str, kind: str, **config) -> TinyModel:
    assert kind == "layout"
    return TinyModel(TinyConfig(**config))


class StopTraining(Exception):
    """Raised by a step callback to stop a training run, as a kill would."""


def stub_trainer(**parts) -> type[Trainer]:
    """A `Trainer` subclass that always passes `parts` (build_model, make_batch, sample, loss: the
    Trainer's keyword arguments) unless a call gives its own."""

    class StubTrainer(Trainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**parts, **kwargs})

    return StubTrainer


def write_cli_collections(root, seed: int, max_nodes: int = 30, max_configs: int = 24):
    """Tiny SYNTHETIC layout:xla:random and tile:xla collections (5 graphs each, split 60/20/20)
    under `root`, for the CLI tests; returns root."""
    for collection in ("layout:xla:random", "tile:xla"):
        write_synthetic_collection(root, collection, num_graphs=5, seed=seed, split_fractions=(0.6, 0.2, 0.2),
                                   max_nodes=max_nodes, max_configs=max_configs, progress=False)
    return root


def run_cli(*args) -> str:
    """`graphcost ARGS...` in process; asserts exit code 0 and returns the output."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output
