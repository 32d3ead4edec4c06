"""NAS-Bench-201 architectures expanded into full operator DAGs, labelled with measured latency.

Data (real): DATA/nasbench201/archs.txt (15,625 cell strings) and latency_ms.npz (latency per
device key, index-aligned), DATA found by `locate.dag_data_dir`. The macro skeleton of NAS-Bench-201 is fixed:

    input -> stem 3x3 conv -> [5 cells @16ch] -> reduction block -> [5 cells @32ch]
          -> reduction block -> [5 cells @64ch] -> global average pool -> linear

A cell has 4 nodes; `op~j` inside the i-th `+`-group is an edge from cell node j to cell node i+1
carrying operator `op`. Expansion: every non-`none` operator becomes an operator node; cell nodes
1..3 become `cell_sum` nodes (sum of incoming operators; a cell node with no incoming operator is
a constant zero source); cell node 0 is the previous cell's output. A reduction block is a
ResNet basic block: conv3x3 stride 2 -> conv3x3 on one branch, avg-pool -> conv1x1 on the
shortcut, joined by an add. Operators whose result never reaches the classifier (dead code) are
removed, as a compiler would. Result: ~50-150 nodes per architecture, 14 operator categories.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphcost.layerdag.datasets.locate import dag_data_dir, missing
from graphcost.layerdag.datasets.splits import split_graphs
from graphcost.layerdag.dag_record import DAG

CATEGORIES = (
    "input", "stem_conv3x3", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3", "skip_connect", "cell_sum",
    "res_conv3x3_s2", "res_conv3x3", "res_shortcut_pool", "res_shortcut_conv1x1", "res_add",
    "global_avg_pool", "linear",
)  # fmt: skip
CELL_OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
CAT = {name: i for i, name in enumerate(CATEGORIES)}


def parse_cell(arch: str) -> list[tuple[int, int, str]]:
    """`|op~0|+|op~0|op~1|+|...|` -> edges (from_node, to_node, op) of the 4-node cell."""
    groups = [g for g in arch.strip().split("+")]
    if len(groups) != 3:
        raise ValueError(f"architecture string must have 3 '+'-separated groups: {arch!r}")
    edges = []
    for to_node, group in enumerate(groups, start=1):
        for token in filter(None, group.strip("|").split("|")):
            op, _, src = token.partition("~")
            if op not in CELL_OPS or not src.isdigit() or int(src) >= to_node:
                raise ValueError(f"bad cell edge {token!r} in {arch!r}")
            edges.append((int(src), to_node, op))
    return edges


class _Builder:
    def __init__(self):
        self.cats: list[int] = []
        self.src: list[int] = []
        self.dst: list[int] = []

    def node(self, cat: str, *preds: int) -> int:
        v = len(self.cats)
        self.cats.append(CAT[cat])
        for u in preds:
            self.src.append(u)
            self.dst.append(v)
        return v


def expand_architecture(arch: str, label: float | None = None) -> DAG:
    """The full operator DAG of one NAS-Bench-201 architecture (see module docstring)."""
    cell_edges = parse_cell(arch)
    b = _Builder()
    x = b.node("stem_conv3x3", b.node("input"))
    for stage in range(3):
        if stage > 0:
            main = b.node("res_conv3x3", b.node("res_conv3x3_s2", x))
            short = b.node("res_shortcut_conv1x1", b.node("res_shortcut_pool", x))
            x = b.node("res_add", main, short)
        for _ in range(5):
            cell_nodes = [x]
            for j in (1, 2, 3):
                ops = [b.node(op, cell_nodes[i]) for i, to, op in cell_edges if to == j and op != "none"]
                cell_nodes.append(b.node("cell_sum", *ops))
            x = cell_nodes[3]
    out = b.node("linear", b.node("global_avg_pool", x))
    return _remove_dead(b, out, label)


def _remove_dead(b: _Builder, out: int, label: float | None) -> DAG:
    """Keep only nodes from which the output is reachable, renumbered in creation (topological) order."""
    n = len(b.cats)
    preds: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(b.src, b.dst):
        preds[v].append(u)
    alive = np.zeros(n, dtype=bool)
    stack = [out]
    while stack:
        v = stack.pop()
        if not alive[v]:
            alive[v] = True
            stack.extend(preds[v])
    new_id = np.cumsum(alive) - 1
    keep_edge = alive[b.src] & alive[b.dst]
    src = new_id[np.array(b.src)[keep_edge]]
    dst = new_id[np.array(b.dst)[keep_edge]]
    return DAG(np.array(b.cats, np.int64)[alive], src.astype(np.int64), dst.astype(np.int64), label)


def default_dir(data_dir: str | Path | None = None) -> Path | None:
    """DATA/nasbench201 for the data directory `locate.dag_data_dir` finds (None: none found)."""
    base = dag_data_dir(data_dir)
    return None if base is None else base / "nasbench201"


def load_nasbench201(
    data_dir: str | Path | None = None,
    device: str = "pixel3",
    num_graphs: int | None = 2000,
    seed: int = 0,
    fold: tuple[int, int] | None = None,
) -> dict[str, list[DAG]]:
    """Expanded NAS-Bench-201 DAGs labelled with latency (ms) on `device`, split by graph (80/10/10,
    or `fold` = (f, k): fold f of a k-fold cross-validation).

    `num_graphs` architectures are drawn without replacement (seeded; None = all 15,625); the
    default 2,000 matches the size of LayerDAG's NA-Edge set. `device` is a key of latency_ms.npz
    (default pixel3, a mobile CPU as in NA-Edge). `data_dir` is the directory holding nasbench201/
    (default: `locate.dag_data_dir`); a missing file is a FileNotFoundError saying where to get it.
    """
    given = data_dir
    data_dir = default_dir(data_dir)
    if data_dir is None:
        raise missing("nasbench201", None)
    arch_path, lat_path = data_dir / "archs.txt", data_dir / "latency_ms.npz"
    for p in (arch_path, lat_path):
        if not p.is_file():
            raise missing("nasbench201", p, given)
    archs = arch_path.read_text().split()
    with np.load(lat_path, allow_pickle=False) as lat:
        if device not in lat.files:
            raise ValueError(f"{lat_path}: no device '{device}'; available: {', '.join(sorted(lat.files))}")
        latency = lat[device]
    if latency.shape != (len(archs),):
        raise ValueError(f"{lat_path}: key '{device}': {latency.shape[0]} latencies for {len(archs)} architectures")
    idx = np.arange(len(archs))
    if num_graphs is not None and num_graphs < len(archs):
        idx = np.sort(np.random.default_rng(seed).choice(len(archs), size=num_graphs, replace=False))
    dags = [expand_architecture(archs[i], float(latency[i])) for i in idx]
    return split_graphs(dags, seed=seed, fold=fold)
