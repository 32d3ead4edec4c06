"""ONE synthetic layout program measured at many random configurations: a user's own measurement set
shaped like a TpuGraphs layout graph (SYNTHETIC DATA, labelled so everywhere it is used).

    graph = one_program_layout_graph(num_configs=30_000, seed=3)   # 372 nodes, 24 configurable
    write_one_program_layout(path, num_configs=30_000, seed=3)      # the same graph as a TpuGraphs npz

The shape follows a real TPU layout graph a user may bring: a few hundred nodes, twenty or more
configurable nodes (convolutions, dots, reshapes), every configuration drawn at random (TpuGraphs'
``random`` search), and NO default configuration among them, so "moved off the compiler's default"
says little and a model has to read the layouts themselves.

The runtime is a KNOWN, NON-ADDITIVE function of the layouts: the analytical simulator of
`graphcost.data.synth.layout` (its eq. 1), in which each configurable node pays a tile-efficiency
cost for its own layouts AND a copy whenever the layout a producer writes differs from the one its
consumer reads (pairwise terms between nodes), times lognormal measurement noise
exp(σ · N(0, 1)) with σ = `DEFAULT_NOISE`. With the default graph's spread of log runtimes (std 0.33) the
labels rank the configurations at a Kendall τ of 0.85 against the noise-free runtimes, and an independent
repeat at 0.79 against the labels: a noisier set than a real TPU layout graph whose label noise allows
0.86-0.90.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphcost.data.graph import LayoutGraph

__all__ = ["one_program_layout_graph", "write_one_program_layout", "DEFAULT_NOISE"]

DEFAULT_NOISE = 0.08  # lognormal σ of a measurement (module docstring)


def one_program_layout_graph(num_configs: int = 30_000, num_nodes: int = 372, seed: int = 3,
                             config_fraction: float = 0.1, noise: float = DEFAULT_NOISE) -> LayoutGraph:
    """SYNTHETIC: one program (`synth_program` of `num_nodes` nodes, about `config_fraction` of them
    configurable) at `num_configs` random layout configurations, none of them the default; runtimes
    in ns from the layout simulator times lognormal noise of σ `noise`. Deterministic in `seed`."""
    from graphcost.data.synth.programs import node_features, synth_program
    from graphcost.data.synth.layout import LayoutSimulator

    if not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be a finite lognormal sigma >= 0, got {noise}")
    if num_configs < 2:
        raise ValueError(f"num_configs must be at least 2, got {num_configs}")
    program = synth_program(num_nodes, np.random.default_rng([seed, 0]), "xla", config_fraction)
    sim = LayoutSimulator(program)
    if sim.num_config_nodes == 0:
        raise ValueError(f"seed {seed}, {num_nodes} nodes: no configurable node; raise num_nodes or config_fraction")
    rng = np.random.default_rng([seed, 1])
    choice = sim.sample_choices(rng, num_configs, "random", first=False)  # no row is the default
    runtime = sim.runtime(choice) * np.exp(noise * rng.standard_normal(num_configs))
    return LayoutGraph(
        path=None,
        node_feat=node_features(program, 0.0),
        node_opcode=np.array([n.opcode for n in program.nodes], dtype=np.int32),
        edge_index=program.edge_index,
        node_config_ids=sim.config_ids,
        node_config_feat=sim.features(choice),
        config_runtime=np.maximum(1, np.rint(runtime)).astype(np.int64),
        node_splits=program.node_splits.reshape(1, -1),
    )


def write_one_program_layout(path: str | Path, **kwargs) -> Path:
    """`one_program_layout_graph(**kwargs)` written atomically as a TpuGraphs layout npz at `path`."""
    from graphcost.guards.atomic import atomic_write

    g = one_program_layout_graph(**kwargs)
    assert g.node_splits is not None  # (one_program_layout_graph always sets them)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as f:
        np.savez_compressed(f, node_feat=g.node_feat, node_opcode=g.node_opcode, edge_index=g.edge_index,
                            node_config_ids=g.node_config_ids, node_config_feat=g.node_config_feat,
                            config_runtime=g.config_runtime, node_splits=g.node_splits)
    return path
