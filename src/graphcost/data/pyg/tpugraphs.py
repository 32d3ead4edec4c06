"""`TpuGraphsDataset`: TpuGraphs as a `torch_geometric.data.Dataset` of `Data` items.

For people who bring their own models. One item = ONE graph x a seeded sample of its
configurations, carrying exactly what `graphcost.data.transforms.batching.make_batch` puts in a
`GraphBatch` (it is built by `make_batch`, then converted by `batch_to_data`):

    x                  (N, 140) float32  node features, [:134] scaled with a fitted FeatureScaler
    node_opcode        (N,)     int64
    edge_index         (2, E)   int64    row 0 producer (source) -> row 1 consumer (target)
    runtime            (B,)     float32  as GraphBatch.runtime
    y                  (B,)     float64  the same runtimes unrounded (the label the ranking losses use)
    config_index       (B,)     int64    indices into the prepared (de-duplicated) configurations
    layout: config_node_index (C,) int64, node_config_feat (B, C, 18) float32
    tile:   config_feat (B, 24) float32
    graph_name, kind   str

raw = the official npz files of one split; processed = the preprocessing cache that
`prepare_graph(..., cache_dir=processed_dir)` writes (pruned, de-duplicated, base-7 compressed
layout codes). Processing streams `node_config_feat` in chunks (`preprocess.iter_config_chunks`),
and items are built from the processed entry, which holds the (K, C, 3) int32 codes, never the
(K, C, 18) float32 features: only the B sampled configurations are decompressed. A worker holds
one prepared graph at a time (layout:nlp: <= ~120 MB of codes, not the 720 MB feature array).

Use it with a plain `torch.utils.data.DataLoader(ds, batch_size=None, num_workers=N)` so that
reading the cache, sampling and decompression run in worker processes while the model trains.

Several graphs per batch. Items are `TpuGraphsData`, which tells PyG how to batch the
configuration fields, so `torch_geometric.loader.DataLoader(ds, batch_size=G)` gives a `Batch` of
G graphs, each with the same number B of sampled configurations:

    x, node_opcode     (sum N, ...)        as usual; `batch` maps nodes to graphs
    edge_index         (2, sum E)          offset by the nodes before each graph
    config_node_index  (sum C,)            offset the same way: indices into the batched x
    node_config_feat   (B, sum C, 18)      concatenated along the configurable nodes
    runtime, y, config_index  (G, B)       one row per graph
    config_feat        (G, B, 24)
    graph_name, kind   lists of G strings

Row b of node_config_feat is configuration b of every graph. A graph with fewer than
`batch_configs` configurations gives all of them, a smaller B, and PyG's collate step then stops
with torch's "Sizes of tensors must match" error: batch such data one graph at a time
(batch_size=None), or choose `batch_configs` no larger than the smallest graph's number of
configurations (`ds.prepared(i).num_configs`).

Processing uses PyG's own protocol: `processed_paths` are the entries of graphcost's preprocessing
cache (one file per raw npz, keyed by its path, size, mtime and options), and `process()` writes
the missing ones. That cache is the one `graphcost train --cache-dir` reads, so the dataset and the
trainer share one processed copy instead of two; it lives in `cache_dir` rather than
`root/processed` because its entries are keyed by the options (dedup on or off), which a single
PyG `processed/` directory per root could not tell apart.

Sampling. `ds[i]` draws the configurations from (seed, epoch, i): repeatable, different per epoch
(`set_epoch`, as with `DistributedSampler`; worker processes copy the dataset when an iteration
starts, so call it before iterating). `ds[SampleKey(i, s)]` draws them from the seed `s`
instead; `graphcost train --loader-workers` uses that to reproduce its in-process sampling.

    from torch.utils.data import DataLoader
    from graphcost.data.pyg.tpugraphs import TpuGraphsDataset

    root = "tpugraphs/npz/layout/xla/default"
    train = TpuGraphsDataset(f"{root}/train", "~/.cache/graphcost", batch_configs=64)
    valid = TpuGraphsDataset(f"{root}/valid", "~/.cache/graphcost", scaler=train.scaler, dedup=False)
    for epoch in range(10):
        train.set_epoch(epoch)
        for data in DataLoader(train, batch_size=None, shuffle=True, num_workers=2):
            scores = my_model(data)  # (B,); rank against data.y

    from torch_geometric.loader import DataLoader as PyGLoader
    for batch in PyGLoader(train, batch_size=4, shuffle=True):
        scores = my_batched_model(batch)  # (4, B); rank each row against batch.y

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, NamedTuple, Sequence

import numpy as np
import torch
from torch_geometric.data import Data, Dataset

from graphcost.data.graph import GraphBatch
from graphcost.data.transforms.batching import make_batch, sample_config_indices
from graphcost.data.transforms.cache import cache_key, cache_path
from graphcost.data.transforms.scaler import FeatureScaler

_TENSOR_FIELDS = ("node_opcode", "edge_index", "runtime", "config_index", "config_node_index",
                  "node_config_feat", "config_feat", "config_compiled")  # fmt: skip
_EPOCH_SALT = 0x7D47  # separates the item sampling stream from every other seeded stream


class SampleKey(NamedTuple):
    """Index of a graph + the seed of its configuration sample (`TpuGraphsDataset[SampleKey(i, s)]`)."""

    index: int
    seed: int


_PER_CONFIG = ("runtime", "y", "config_index", "config_feat", "config_compiled")  # stacked: (G, B, ...) in a Batch


class TpuGraphsData(Data):
    """A `Data` of one graph x B configurations that PyG's `Batch` knows how to batch.

    `config_node_index` holds node indices, so it is offset like `edge_index` (`config_index` is not:
    it indexes the graph's own configurations); `node_config_feat`
    (B, C, 18) is concatenated along its configurable nodes (dim 1); the per-configuration fields
    (`runtime`, `y`, `config_index`, `config_feat`, `config_compiled`) are stacked into one row per graph. Batching
    therefore needs the same B in every graph of a batch (see the module docstring).
    """

    def __inc__(self, key: str, value, *args, **kwargs):
        if key == "config_node_index":
            return self.num_nodes
        if key == "config_index":  # indices into this graph's configurations: never offset
            return 0
        return super().__inc__(key, value, *args, **kwargs)

    def __cat_dim__(self, key: str, value, *args, **kwargs):
        if key == "node_config_feat":
            return 1
        if key in _PER_CONFIG:
            return None
        return super().__cat_dim__(key, value, *args, **kwargs)


def batch_to_data(batch: GraphBatch, runtime: np.ndarray | torch.Tensor | None = None) -> TpuGraphsData:
    """A GraphBatch as a PyG `TpuGraphsData` (node_feat -> x); `runtime` (B,) float64 becomes y."""
    fields = {name: getattr(batch, name) for name in _TENSOR_FIELDS if getattr(batch, name) is not None}
    y = batch.runtime.to(torch.float64) if runtime is None else torch.as_tensor(runtime, dtype=torch.float64)
    return TpuGraphsData(x=batch.node_feat, y=y, graph_name=batch.graph_name, kind=batch.kind, **fields)


def data_to_batch(data: Data) -> GraphBatch:
    """The inverse of `batch_to_data` (y is dropped: read it from `data.y`)."""
    fields = {name: data[name] for name in _TENSOR_FIELDS if name in data}
    return GraphBatch(graph_name=data.graph_name, kind=data.kind, node_feat=data.x, **fields)


def _npz_files(raw: str | Path | Sequence[str | Path]) -> list[Path]:
    """The npz files of `raw`; DataNotFoundError (a FileNotFoundError) naming the path that is missing."""
    from graphcost.data.io.discover import DataNotFoundError

    if isinstance(raw, (str, Path)):
        root = Path(raw).expanduser()
        if not root.is_dir():
            raise DataNotFoundError(f"{root}: no such directory of npz files")
        files = sorted(root.glob("*.npz"))
        if not files:
            raise DataNotFoundError(f"{root}: no *.npz graphs in this directory")
        return files
    files = [Path(f).expanduser() for f in raw]
    for f in files:
        if not f.is_file():
            raise DataNotFoundError(f"{f}: no such graph file")
    return files


class TpuGraphsDataset(Dataset):
    """One split of TpuGraphs-schema npz files as PyG `Data` items (see the module docstring).

    Args:
        raw: a directory of npz files (one split, e.g. ``.../layout/xla/default/train``) or a list
            of npz paths.
        cache_dir: the processed directory: the preprocessing cache (shared with `graphcost
            train --cache-dir`); missing entries are written by `process()` on construction.
        batch_configs: configurations per item (B); all of a graph's when it has fewer.
        seed: seed of the per-item configuration samples.
        scaler: a fitted FeatureScaler (use the TRAINING split's for valid/test), "fit" to fit one
            on this dataset's graphs, or None for unscaled features.
        dedup: keep one (the fastest) copy of identical configurations (TGraph §2.2.2); False keeps
            every configuration of each file (evaluation).
        transform: PyG transform applied to each item.
        log: PyG's processing messages.

    No `force_reload`: cache entries are keyed by the raw file's path, size and mtime, the options
    and the preprocessing format version, so a changed file or preprocessing is re-processed anyway.
    """

    def __init__(
        self,
        raw: str | Path | Sequence[str | Path],
        cache_dir: str | Path,
        *,
        batch_configs: int = 64,
        seed: int = 0,
        scaler: FeatureScaler | str | None = "fit",
        dedup: bool = True,
        transform: Callable[[Data], Data] | None = None,
        log: bool = False,
    ) -> None:
        from graphcost.guards.bounds import ArgumentError, check_int, check_path, check_seed

        check_int("batch_configs", batch_configs, 1)
        check_seed("seed", seed)
        check_path("cache_dir", cache_dir)
        if not (isinstance(raw, (str, Path)) or (isinstance(raw, Sequence) and raw)):
            raise ArgumentError(f"raw must be a directory of npz files or a non-empty list of npz paths, got "
                                f"{raw!r} ({type(raw).__name__})")
        if not isinstance(raw, (str, Path)):
            for i, r in enumerate(raw):
                check_path(f"raw[{i}]", r)
        if not (scaler is None or isinstance(scaler, FeatureScaler) or (isinstance(scaler, str) and scaler == "fit")):
            raise ArgumentError(f"scaler must be a FeatureScaler, 'fit' or None, got {scaler!r}")
        if transform is not None and not callable(transform):
            raise ArgumentError(f"transform must be callable or None, got {type(transform).__name__}")
        self._files = _npz_files(raw)
        self._cache_dir = Path(cache_dir).expanduser()
        from graphcost.guards.outputs import check_outside_inputs

        inputs = [raw] if isinstance(raw, (str, Path)) else list(raw)
        check_outside_inputs(self._cache_dir, "cache_dir", data=[("raw", Path(r).expanduser()) for r in inputs])
        self._options = {"prune": True, "dedup": bool(dedup)}  # the key prepare_graph writes under
        self._graphs: Sequence | None = None  # set by from_prepared: graphs already in memory
        self.batch_configs, self.seed, self.epoch = int(batch_configs), int(seed), 0
        super().__init__(str(self._cache_dir), transform=transform, log=log)
        self.scaler = self._fit_scaler(scaler)

    @classmethod
    def from_prepared(
        cls, graphs: Sequence, scaler: FeatureScaler | None, *, batch_configs: int = 64, seed: int = 0,
        transform: Callable[[Data], Data] | None = None
    ) -> "TpuGraphsDataset":
        """A dataset over PreparedGraphs already loaded (a list, or graphcost.data.transforms.pool.LazyPrepared);
        no raw files, no processing. The trainer's path (`graphcost train --loader-workers`)."""
        if batch_configs < 1:
            raise ValueError(f"batch_configs must be >= 1, got {batch_configs}")
        self = cls.__new__(cls)
        self._files, self._cache_dir, self._options, self._graphs = [], None, {}, graphs
        self.batch_configs, self.seed, self.epoch = int(batch_configs), int(seed), 0
        Dataset.__init__(self, None, transform=transform, log=False)  # no root: PyG skips download/process
        self.scaler = scaler
        return self

    # ---- PyG's raw / processed protocol ----------------------------------------------------
    @property
    def raw_dir(self) -> str:
        return str(self._files[0].parent) if self._files else ""

    @property
    def raw_paths(self) -> list[str]:
        return [str(f) for f in self._files]

    @property
    def raw_file_names(self) -> list[str]:
        return [f.name for f in self._files]

    @property
    def processed_dir(self) -> str:
        return str(self._cache_dir) if self._cache_dir is not None else ""

    @property
    def processed_paths(self) -> list[str]:
        return [str(cache_path(self._cache_dir, f, self._options, cache_key(f, self._options))) for f in self._files]

    @property
    def processed_file_names(self) -> list[str]:
        return [Path(p).name for p in self.processed_paths]

    def _process(self) -> None:
        """PyG's `_process` without its pre_transform.pt / pre_filter.pt files (this dataset takes
        neither: processing is the fixed TGraph preprocessing, its cache entries keyed by their options)."""
        if not all(Path(p).is_file() for p in self.processed_paths):
            self.process()

    def process(self) -> None:
        """Prepare every raw file into the cache (chunked streaming; entries present are hits)."""
        for index in range(len(self._files)):
            self.prepared(index)

    # ---- items -------------------------------------------------------------------------------
    def len(self) -> int:
        return len(self._graphs) if self._graphs is not None else len(self._files)

    def prepared(self, index: int):
        """The PreparedGraph of graph `index` (from memory, or read back from the cache)."""
        if self._graphs is not None:
            return self._graphs[index]
        from graphcost.data.transforms.preprocess import prepare_graph

        return prepare_graph(self._files[index], dedup=self._options["dedup"], cache_dir=self._cache_dir)

    def set_epoch(self, epoch: int) -> None:
        """Draw `ds[i]`'s configurations from (seed, epoch, i) from now on."""
        self.epoch = int(epoch)

    def sample(self, index: int, seed) -> Data:
        """Graph `index` with `batch_configs` configurations drawn by np.random.default_rng(seed)."""
        graph = self.prepared(index)
        idx = sample_config_indices(graph, self.batch_configs, np.random.default_rng(seed))  # (B,)
        return batch_to_data(make_batch(graph, idx, self.scaler), np.asarray(graph.runtime, dtype=np.float64)[idx])

    def get(self, index: int) -> Data:
        return self.sample(index, [self.seed & 0xFFFFFFFF, self.epoch, int(index), _EPOCH_SALT])

    def __getitem__(self, index):
        if isinstance(index, SampleKey):
            data = self.sample(int(self.indices()[index.index]), index.seed)
            return data if self.transform is None else self.transform(data)
        return super().__getitem__(index)

    def _fit_scaler(self, scaler):
        if isinstance(scaler, str):
            if scaler != "fit":
                raise ValueError(f"scaler must be a FeatureScaler, 'fit' or None, got {scaler!r}")
            return FeatureScaler().fit(self.prepared(i) for i in range(self.len()))
        return scaler
