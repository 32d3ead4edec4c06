"""Tiny hand-built GraphBatch objects for model tests (random DAG, B configurations, runtimes a
simple function of the configuration features so that a model can learn to rank them)."""

from __future__ import annotations

import torch

from graphcost.data.graph import GraphBatch


def random_dag(num_nodes: int, gen: torch.Generator) -> torch.Tensor:
    """(2, E) producer -> consumer edges: node i consumes 1-2 earlier nodes."""
    src, dst = [], []
    for i in range(1, num_nodes):
        for _ in range(int(torch.randint(1, 3, (1,), generator=gen))):
            src.append(int(torch.randint(0, i, (1,), generator=gen)))
            dst.append(i)
    return torch.unique(torch.tensor([src, dst]), dim=1)


def make_layout_batch(num_nodes: int = 12, num_configs: int = 8, num_configurable: int = 3, seed: int = 0) -> GraphBatch:
    gen = torch.Generator().manual_seed(seed)
    node_feat = torch.randn(num_nodes, 140, generator=gen)
    node_feat[:, 134:] = torch.randint(-1, 6, (num_nodes, 6), generator=gen).float()
    config_nodes = torch.randperm(num_nodes, generator=gen)[:num_configurable]
    cfg = torch.randint(-1, 6, (num_configs, num_configurable, 18), generator=gen).float()
    # runtime: a fixed weighting of the layout entries (a learnable, deterministic function)
    w = torch.randn(num_configurable, 18, generator=gen)
    runtime = 10.0 + (cfg * w).sum((1, 2)) * 0.1
    runtime = runtime - runtime.min() + 1.0
    return GraphBatch(
        graph_name=f"layout_{seed}", kind="layout", node_feat=node_feat,
        node_opcode=torch.randint(0, 100, (num_nodes,), generator=gen),
        edge_index=random_dag(num_nodes, gen), runtime=runtime, config_index=torch.arange(num_configs),
        config_node_index=config_nodes, node_config_feat=cfg)


def make_tile_batch(num_nodes: int = 10, num_configs: int = 8, seed: int = 0) -> GraphBatch:
    gen = torch.Generator().manual_seed(seed)
    node_feat = torch.randn(num_nodes, 140, generator=gen)
    node_feat[:, 134:] = torch.randint(-1, 6, (num_nodes, 6), generator=gen).float()
    config_feat = torch.randint(1, 129, (num_configs, 24), generator=gen).float()
    runtime = (config_feat[:, :6].log() - 2.0).abs().sum(1) + 0.5 * config_feat[:, 12:14].log().sum(1)
    return GraphBatch(
        graph_name=f"tile_{seed}", kind="tile", node_feat=node_feat,
        node_opcode=torch.randint(0, 100, (num_nodes,), generator=gen),
        edge_index=random_dag(num_nodes, gen), runtime=runtime, config_index=torch.arange(num_configs),
        config_feat=config_feat)


def permute_configs(batch: GraphBatch, perm: torch.Tensor) -> GraphBatch:
    """The same batch with its configurations reordered by `perm`."""
    fields = dict(batch.__dict__)
    for key in ("runtime", "config_index", "node_config_feat", "config_feat"):
        if fields[key] is not None:
            fields[key] = fields[key][perm]
    return GraphBatch(**fields)


