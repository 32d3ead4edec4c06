"""Synthetic TpuGraphs-schema data (ALWAYS labelled synthetic).

Graphs come from `synth_graph` (layered XLA-like DAGs with real node-feature meanings),
layout runtimes from the analytical simulator in `synth_layout`, tile runtimes from the one in
`synth_tile` (read their docstrings for the exact cost model). Files are named
``synthetic_*.npz``; `write_synthetic_collection` also writes ``SYNTHETIC.md`` and
``manifest.json`` beside them. The npz files themselves hold only the official keys, so every
loader reads them unchanged.

Determinism: graph structure depends on ``(seed, 0)`` and configuration block b on
``(seed, 1, b)``; the block size is a function of the graph only (`gen_block`), so the same seed
gives identical arrays whether a file is built in memory or streamed to disk. Memory while
streaming is O(block x nc x 18) (about 100 MB), independent of the number of configurations.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import numpy as np

from graphcost.guards.atomic import atomic_write_json, atomic_write_text
from graphcost.guards.bounds import GRAPHS_MAX, check_fits_memory, check_int
from graphcost.data.io.discover import COLLECTIONS, SPLITS, check_collection, collection_dir
from graphcost.data.graph import LayoutGraph, TileGraph
from graphcost.data.io.npz_stream import NpzWriter
from graphcost.data.synth.programs import node_features, synth_program
from graphcost.data.synth.layout import LayoutSimulator
from graphcost.data.synth.tile import TileSimulator

__all__ = [
    "synth_layout_graph",
    "synth_tile_graph",
    "write_synthetic_layout_file",
    "write_synthetic_tile_file",
    "write_synthetic_collection",
    "DEFAULT_SIZES",
    "check_synth_sizes",
]

GEN_ELEMENTS = 1 << 20  # RNG block = GEN_ELEMENTS // nc configurations (clipped to [256, 8192])
PREFIX = "synthetic_"
# (min_nodes, max_nodes, min_configs, max_configs) per collection when not given; sizes are drawn
# log-uniformly. Real collections (TpuGraphs Table 1) are larger: raise them with the CLI options.
DEFAULT_SIZES = {
    "tile:xla": (10, 120, 200, 2000),
    "layout:xla:default": (1000, 10000, 1000, 10000),
    "layout:xla:random": (1000, 10000, 1000, 10000),
    "layout:nlp:default": (1000, 8000, 2000, 10000),
    "layout:nlp:random": (1000, 8000, 2000, 10000),
}


def _rng(*key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(k) for k in key]))


def _runtime_ns(t: np.ndarray, rng: np.random.Generator, sigma: float) -> np.ndarray:
    """Measured runtime: model time x lognormal noise, as positive int64 nanoseconds."""
    check_synth_params(noise=sigma)
    return np.maximum(1, np.rint(t * np.exp(sigma * rng.standard_normal(len(t))))).astype(np.int64)


def check_synth_params(config_fraction: float | None = None, noise: float | None = None) -> None:
    """Raise ValueError unless 0 < config_fraction <= 1 and noise (lognormal sigma) is finite and >= 0."""
    if config_fraction is not None and not (0.0 < config_fraction <= 1.0):
        raise ValueError(f"config_fraction must be in (0, 1] (share of configurable nodes), got {config_fraction}")
    if noise is not None and not (np.isfinite(noise) and noise >= 0.0):
        raise ValueError(f"noise must be a finite sigma >= 0 (lognormal measurement noise), got {noise}")


# Memory of one synthetic graph while it is built, a lower bound (measured: 1.3 KB a node for tile, 2.8 KB
# for layout, in the program, its simulator and node_feat; a configuration's float64 runtime is kept
# until the file is closed). Only a graph that cannot fit the machine is refused.
NODE_BYTES = 1000
CONFIG_BYTES = 8


def size_ranges(collection: str, min_nodes: int | None = None, max_nodes: int | None = None,
                min_configs: int | None = None, max_configs: int | None = None) -> tuple[int, int, int, int]:
    """(lo_nodes, hi_nodes, lo_configs, hi_configs) a collection is drawn from: the given bounds, the
    collection's `DEFAULT_SIZES` for the rest (a given minimum above the default maximum raises it)."""
    defaults = DEFAULT_SIZES[collection]
    hi_n = max_nodes or max(defaults[1], min_nodes or 0)
    lo_n = min_nodes or min(defaults[0], hi_n)
    hi_c = max_configs or max(defaults[3], min_configs or 0)
    lo_c = min_configs or min(defaults[2], hi_c)
    return lo_n, hi_n, lo_c, hi_c


def check_synth_sizes(collection: str, num_graphs: int, min_nodes: int | None = None, max_nodes: int | None = None,
                      min_configs: int | None = None, max_configs: int | None = None,
                      names: dict[str, str] | None = None) -> None:
    """ArgumentError (a ValueError) naming the argument (`names` maps num_graphs / min_nodes / ... to
    the CLI's option names) for a count past `GRAPHS_MAX` or a largest graph that cannot fit this
    machine's memory: refused before the plan or any graph is built (441,620,726 graphs
    took 8+ GB for the plan alone; 10**12 nodes would be 1 TB)."""
    name = {"num_graphs": "num_graphs", "min_nodes": "min_nodes", "max_nodes": "max_nodes",
            "min_configs": "min_configs", "max_configs": "max_configs", **(names or {})}  # fmt: skip
    check_int(name["num_graphs"], num_graphs, 1, GRAPHS_MAX)
    _, hi_n, _, hi_c = size_ranges(collection, min_nodes, max_nodes, min_configs, max_configs)
    nodes_by = name["max_nodes"] if max_nodes is not None else name["min_nodes"]
    configs_by = name["max_configs"] if max_configs is not None else name["min_configs"]
    check_fits_memory(nodes_by, hi_n, hi_n * NODE_BYTES, f"a synthetic graph of {hi_n} nodes")
    check_fits_memory(configs_by, hi_c, hi_c * CONFIG_BYTES, f"a synthetic graph of {hi_c} configurations")
    check_fits_memory(nodes_by, hi_n, hi_n * NODE_BYTES + hi_c * CONFIG_BYTES,
                      f"a synthetic graph of {hi_n} nodes and {hi_c} configurations")


def _layout_setup(num_nodes, seed, source, config_fraction, layout_pad):
    check_synth_params(config_fraction=config_fraction)
    if source not in ("xla", "nlp"):
        raise ValueError(f"unknown source {source!r}; expected 'xla' or 'nlp'")
    program = synth_program(num_nodes, _rng(seed, 0), source, config_fraction)
    sim = LayoutSimulator(program)
    if sim.num_config_nodes == 0:
        raise ValueError(f"synthetic graph (seed {seed}, {num_nodes} nodes) has no configurable node; raise num_nodes")
    return program, sim, node_features(program, layout_pad)


def gen_block(num_config_nodes: int) -> int:
    """Configurations per RNG block: depends only on the graph, so output is independent of chunking."""
    return int(np.clip(GEN_ELEMENTS // max(num_config_nodes, 1), 256, 8192))


def _layout_blocks(sim: LayoutSimulator, num_configs, seed, search, noise) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    block = gen_block(sim.num_config_nodes)
    for b, start in enumerate(range(0, num_configs, block)):
        rng = _rng(seed, 1, b)
        k = min(block, num_configs - start)
        choice = sim.sample_choices(rng, k, search, first=(start == 0))
        yield sim.features(choice), _runtime_ns(sim.runtime(choice), rng, noise)


def synth_layout_graph(
    num_nodes: int = 1000,
    num_configs: int = 1000,
    seed: int = 0,
    source: str = "xla",
    search: str = "random",
    config_fraction: float = 0.02,
    noise: float = 0.01,
    layout_pad: float = 0.0,
) -> LayoutGraph:
    """An in-memory synthetic layout graph (``path=None``). Use `write_synthetic_layout_file` for big ones."""
    program, sim, feat = _layout_setup(num_nodes, seed, source, config_fraction, layout_pad)
    blocks = list(_layout_blocks(sim, num_configs, seed, search, noise))
    return LayoutGraph(
        path=None,
        node_feat=feat,
        node_opcode=np.array([n.opcode for n in program.nodes], dtype=np.int32),
        edge_index=program.edge_index,
        node_config_ids=sim.config_ids,
        node_config_feat=np.concatenate([f for f, _ in blocks]),
        config_runtime=np.concatenate([r for _, r in blocks]),
        node_splits=program.node_splits.reshape(1, -1),
    )


def write_synthetic_layout_file(
    path: str | Path,
    num_nodes: int = 1000,
    num_configs: int = 1000,
    seed: int = 0,
    source: str = "xla",
    search: str = "random",
    config_fraction: float = 0.02,
    noise: float = 0.01,
    layout_pad: float = 0.0,
    compressed: bool = True,
    compresslevel: int | None = 1,
) -> Path:
    """Stream a synthetic layout npz to `path` (atomic); memory O(gen_block(nc) x nc x 18)."""
    program, sim, feat = _layout_setup(num_nodes, seed, source, config_fraction, layout_pad)
    runtimes = []
    with NpzWriter(path, compressed=compressed, compresslevel=compresslevel if compressed else None) as w:
        w.write("node_feat", feat)
        w.write("node_opcode", np.array([n.opcode for n in program.nodes], dtype=np.int32))
        w.write("edge_index", program.edge_index)
        w.write("node_config_ids", sim.config_ids)
        w.write("node_splits", program.node_splits.reshape(1, -1))
        with w.stream("node_config_feat", (num_configs, sim.num_config_nodes, 18), np.float32) as s:
            for f, r in _layout_blocks(sim, num_configs, seed, search, noise):
                s.write(f)
                runtimes.append(r)
        w.write("config_runtime", np.concatenate(runtimes))
    return Path(path)


def synth_tile_graph(
    num_nodes: int = 40, num_configs: int = 2000, seed: int = 0, noise: float = 0.01, layout_pad: float = 0.0
) -> TileGraph:
    """A synthetic fused kernel with up to `num_configs` tile configurations (fewer if the space is smaller)."""
    program = synth_program(max(num_nodes, 4), _rng(seed, 0), "xla", config_fraction=0.08)
    sim = TileSimulator(program)
    rng = _rng(seed, 1, 0)
    tiles = sim.options(rng, num_configs)
    default_t = float(sim.runtime(sim.default_tile()[None])[0])
    return TileGraph(
        path=None,
        node_feat=node_features(program, layout_pad),
        node_opcode=np.array([n.opcode for n in program.nodes], dtype=np.int32),
        edge_index=program.edge_index,
        config_feat=sim.features(tiles),
        config_runtime=_runtime_ns(sim.runtime(tiles), rng, noise),
        config_runtime_normalizers=_runtime_ns(np.full(len(tiles), default_t), rng, noise / 2),
    )


def write_synthetic_tile_file(path: str | Path, compressed: bool = True, **kwargs) -> Path:
    """Write `synth_tile_graph(**kwargs)` to `path` atomically."""
    from graphcost.data.io.validate import graph_arrays

    graph = synth_tile_graph(**kwargs)
    with NpzWriter(path, compressed=compressed) as w:
        for key, value in graph_arrays(graph).items():
            w.write(key, value)
    return Path(path)


def _split_counts(n: int, fractions) -> list[int]:
    """Graphs per split: valid and test get round(n * f) but at least one each once n >= 3."""
    valid = max(1, int(round(n * fractions[1]))) if n >= 2 else 0
    test = max(1, int(round(n * fractions[2]))) if n >= 3 else 0
    return [n - valid - test, valid, test]


_README = """# SYNTHETIC DATA - not measured on hardware

Written by `graphcost.data.synth.collection` (`graphcost data synth`) in the official TpuGraphs npz
schema so that code can be exercised without the real dataset. Graphs are synthetic XLA-like
DAGs; runtimes come from a documented analytical simulator (see the docstrings of
`graphcost/data/synth/layout.py` and `graphcost/data/synth/tile.py`) plus seeded noise.
Numbers obtained on these files say nothing about real TPU performance.

Collection: {collection}; seed: {seed}; parameters and files: manifest.json.
"""


def _is_synthetic_tree(base: Path) -> bool:
    """Whether `base` holds only what `write_synthetic_collection` writes (so --overwrite may delete it)."""
    for path in base.rglob("*"):
        rel = path.relative_to(base).parts
        if path.is_dir() and len(rel) == 1 and rel[0] in SPLITS:
            continue
        if len(rel) == 1 and rel[0] in ("manifest.json", "SYNTHETIC.md"):
            continue
        if len(rel) == 2 and rel[0] in SPLITS and path.is_file() and (
            rel[1].startswith(PREFIX) or rel[1].startswith(f".{PREFIX}")  # the files, or a killed write's temp file
        ):
            continue
        if len(rel) == 1 and path.name.startswith(".") and path.name.endswith(".tmp"):
            continue
        return False
    return True


def _prepare_collection_dir(base: Path, manifest: dict, overwrite: bool) -> None:
    """Refuse (OutputExistsError) a collection directory holding other data; empty it for `overwrite`."""
    import shutil

    from graphcost.guards.atomic import OutputExistsError

    if base.exists() and not base.is_dir():
        raise OutputExistsError(f"{base}: is a file, expected the collection directory")
    if not base.is_dir() or not any(base.iterdir()):
        return
    if overwrite:
        if not _is_synthetic_tree(base):
            raise OutputExistsError(f"{base}: holds files that `graphcost data synth` did not write; "
                                    "refusing to delete it with --overwrite (move it away or choose another --out)")  # fmt: skip
        shutil.rmtree(base)
        return
    try:
        old = json.loads((base / "manifest.json").read_text())
    except (OSError, ValueError):
        old = None
    if old != manifest:
        raise OutputExistsError(
            f"{base}: already holds data{' written with other settings' if isinstance(old, dict) else ''}; "
            "pass --overwrite to replace it whole, or choose another --out (adding to it would mix two "
            "datasets' splits)"
        )


def _check_not_a_run(root: Path) -> None:
    """A data root is not a training or tuning run (``data synth -o A_TRAINING_RUN`` wrote its npz
    tree into the run): OutputExistsError naming the file that makes `root` a run."""
    from graphcost.guards.atomic import RUN_MARKERS, TUNE_MARKERS, OutputExistsError

    held = [m for m in (*RUN_MARKERS, *TUNE_MARKERS) if (root / m).exists()]
    if held:
        raise OutputExistsError(f"{root}: holds a run ({held[0]}), not a data root; give another directory")


def write_synthetic_collection(
    root: str | Path,
    collection: str,
    num_graphs: int = 10,
    seed: int = 0,
    split_fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
    min_nodes: int | None = None,
    max_nodes: int | None = None,
    min_configs: int | None = None,
    max_configs: int | None = None,
    config_fraction: float = 0.02,
    noise: float = 0.01,
    compressed: bool = True,
    progress: bool = True,
    layout_pad: float = 0.0,
    overwrite: bool = False,
    option: str = "root",
) -> Path:
    """Write `num_graphs` synthetic files into the official layout under `root`; returns the collection dir.

    Before anything is built, `root` is checked: a file, a device, a virtual or read-only file system is an
    OutputPathError (a ValueError) naming `option` (the CLI passes ``--out``); a training or tuning run is an
    OutputExistsError. A `layout_pad` other than 0 or -1 and a minimum above its maximum are ValueErrors.

    A collection directory that already holds files is continued only when its manifest.json records
    the same settings (an interrupted run: files present are kept); otherwise it is refused
    (`OutputExistsError`), since mixing two runs' splits puts one graph in two splits. With
    `overwrite` it is first deleted whole (only if it holds nothing but synthetic data).
    Sizes are drawn log-uniformly per graph.
    ``layout_pad`` fills node_feat[134:140] beyond a tensor's rank: 0 like the official files, or -1.
    """
    from tqdm import tqdm

    from graphcost.guards.atomic import check_dir_option

    check_collection(collection)
    if layout_pad not in (0.0, -1.0):
        raise ValueError(f"layout_pad must be 0 or -1, got {layout_pad}")
    for low, high, what in ((min_nodes, max_nodes, "nodes"), (min_configs, max_configs, "configs")):
        if low is not None and high is not None and low > high:
            raise ValueError(f"min_{what} {low} is above max_{what} {high}")
    check_synth_params(config_fraction=config_fraction, noise=noise)
    check_synth_sizes(collection, num_graphs, min_nodes, max_nodes, min_configs, max_configs)
    lo_n, hi_n, lo_c, hi_c = size_ranges(collection, min_nodes, max_nodes, min_configs, max_configs)
    if lo_n > hi_n or lo_c > hi_c:
        raise ValueError(f"empty size range: nodes [{lo_n}, {hi_n}], configs [{lo_c}, {hi_c}]")
    check_dir_option(root, option, is_file="{option} {path}: is a file; expected the data root directory to write "
                     "npz/... into", blocked=None)
    _check_not_a_run(Path(root))
    base = collection_dir(root, collection)
    parts = collection.split(":")
    counts = _split_counts(num_graphs, split_fractions)
    files: dict[str, list[str]] = {s: [] for s in SPLITS}
    jobs = []
    i = 0
    for split, count in zip(SPLITS, counts):
        for _ in range(count):
            name = f"{PREFIX}{'_'.join(parts[1:])}_{i:05d}.npz"
            files[split].append(name)
            jobs.append((i, base / split / name))
            i += 1
    manifest = {
        "synthetic": True,
        "generator": "graphcost.data.synth.collection",
        "collection": collection,
        "seed": seed,
        "num_graphs": num_graphs,
        "split_fractions": list(split_fractions),
        "nodes_range": [lo_n, hi_n],
        "configs_range": [lo_c, hi_c],
        "config_fraction": config_fraction,
        "noise": noise,
        "layout_pad": layout_pad,
        "compressed": compressed,
        "files": files,
    }
    _prepare_collection_dir(base, manifest, overwrite)
    # written first, so an interrupted run is recognised (same settings) and continued
    atomic_write_json(manifest, base / "manifest.json")
    for split in SPLITS:
        (base / split).mkdir(parents=True, exist_ok=True)
    with tqdm(jobs, desc=f"synth {collection}", disable=not progress) as bar:  # closed on error too
        for i, path in bar:
            if path.exists():
                continue
            r = _rng(seed, 2, i)
            n = int(round(np.exp(r.uniform(np.log(lo_n), np.log(hi_n)))))
            c = int(round(np.exp(r.uniform(np.log(lo_c), np.log(hi_c)))))
            gseed = int(r.integers(2**31))
            if parts[0] == "tile":
                write_synthetic_tile_file(
                    path, compressed=compressed, num_nodes=n, num_configs=c, seed=gseed, noise=noise,
                    layout_pad=layout_pad,
                )
            else:
                write_synthetic_layout_file(
                    path, num_nodes=n, num_configs=c, seed=gseed, source=parts[1], search=parts[2],
                    config_fraction=config_fraction, noise=noise, compressed=compressed, layout_pad=layout_pad,
                )  # fmt: skip
    atomic_write_text(base / "SYNTHETIC.md", _README.format(collection=collection, seed=seed))
    return base


assert set(DEFAULT_SIZES) == set(COLLECTIONS)
