"""The prepared-graph pool of a training run: the npz files of a split turned into `PreparedGraph`s
(`load_prepared`), held in memory or, when they would not fit, read back from the preprocessing
cache on access (`LazyPrepared`), plus the helpers that see a pool's names, kinds and configuration
counts without loading it.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Sequence


class LazyPrepared(Sequence):
    """Prepared graphs read back from the preprocessing cache on access (at most `keep` in memory).

    Used when a split's prepared graphs would not fit in memory (layout:nlp: up to 120 MB of
    codes per graph). Indexing returns a `PreparedGraph`; `names` / `kinds` are known without
    loading anything; `subset(indices)` is a lazy view (cross-validation folds).
    """

    def __init__(self, files: Sequence[Path], cache_dir: str | Path, dedup: bool, names, kinds, keep: int = 4,
                 counts=None):
        self.files, self.cache_dir, self.dedup = list(files), Path(cache_dir), dedup
        self.names, self.kinds, self.keep = list(names), list(kinds), keep
        self.counts = None if counts is None else [int(c) for c in counts]  # configurations per graph
        self._lru: OrderedDict[int, object] = OrderedDict()

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.subset(range(*index.indices(len(self))))
        from graphcost.data.transforms.preprocess import prepare_graph

        index = int(index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"graph index {index} out of range for {len(self)} graphs")
        index %= len(self)
        if index in self._lru:
            self._lru.move_to_end(index)
            return self._lru[index]
        graph = prepare_graph(self.files[index], dedup=self.dedup, cache_dir=self.cache_dir)  # a cache hit
        self._lru[index] = graph
        while len(self._lru) > self.keep:
            self._lru.popitem(last=False)
        return graph

    def subset(self, indices) -> "LazyPrepared":
        idx = [int(i) for i in indices]
        counts = None if self.counts is None else [self.counts[i] for i in idx]
        return LazyPrepared([self.files[i] for i in idx], self.cache_dir, self.dedup,
                            [self.names[i] for i in idx], [self.kinds[i] for i in idx], self.keep, counts)  # fmt: skip

    def __add__(self, other):
        if isinstance(other, LazyPrepared) and other.cache_dir == self.cache_dir and other.dedup == self.dedup:
            counts = None if self.counts is None or other.counts is None else self.counts + other.counts
            return LazyPrepared(self.files + other.files, self.cache_dir, self.dedup, self.names + other.names,
                                self.kinds + other.kinds, self.keep, counts)  # fmt: skip
        return list(self) + list(other)


def graph_names(graphs: Sequence) -> list[str]:
    """Names of a list of PreparedGraph or a LazyPrepared (without loading the latter)."""
    return list(graphs.names) if isinstance(graphs, LazyPrepared) else [str(g.name) for g in graphs]


def graph_kinds(graphs: Sequence) -> list[str]:
    return list(graphs.kinds) if isinstance(graphs, LazyPrepared) else [g.kind for g in graphs]


def graph_config_counts(graphs: Sequence) -> list[int]:
    """Configurations of each graph (a LazyPrepared knows them without loading the graphs)."""
    if isinstance(graphs, LazyPrepared) and graphs.counts is not None:
        return list(graphs.counts)
    return [int(g.num_configs) for g in graphs]


def subset(graphs: Sequence, indices) -> Sequence:
    """graphs[indices] as a list, or as a lazy view for a LazyPrepared."""
    if isinstance(graphs, LazyPrepared):
        return graphs.subset(indices)
    return [graphs[int(i)] for i in indices]


def load_prepared(
    files: Sequence[Path],
    cache_dir: str | Path | None = None,
    progress: bool = True,
    desc: str = "prepare",
    dedup: bool = True,
    max_memory_gb: float | None = None,
):
    """`prepare_graph` on every file (pruned; de-duplicated unless `dedup` is False; cached when
    `cache_dir` is given). Training uses de-duplicated graphs (TGraph §2.2.2); validation on the
    official split keeps every configuration so metrics match the file's full list.

    Returns a list of PreparedGraph, or — when `cache_dir` is given and the prepared graphs
    exceed `max_memory_gb` — a `LazyPrepared` that reads them back from the cache on demand.
    """
    from tqdm.auto import tqdm

    from graphcost.data.transforms.preprocess import prepare_graph

    limit = None if max_memory_gb is None or cache_dir is None else max_memory_gb * 2**30
    graphs, names, kinds, counts, total, lazy = [], [], [], [], 0, False
    for f in tqdm(list(files), desc=desc, unit="graph", disable=not progress or not files, leave=False):
        graph = prepare_graph(f, dedup=dedup, cache_dir=cache_dir)
        names.append(graph.name)
        kinds.append(graph.kind)
        counts.append(graph.num_configs)
        if not lazy:
            graphs.append(graph)
            total += graph.nbytes()
            if limit is not None and total > limit:  # too big: from now on rely on the cache
                lazy, graphs = True, []
    if lazy:
        return LazyPrepared(files, cache_dir, dedup, names, kinds, counts=counts)
    return graphs
