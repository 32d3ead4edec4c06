"""Draw a few DAGs in one PNG: a grid of panels, each a layered layout (row = layer of the LayerDAG
partition, node order inside a layer chosen by the barycenter heuristic to reduce edge crossings),
node colour + marker = categorical attribute with one legend for the figure, edges as arrows.
matplotlib is imported inside `draw_dags` (Agg backend)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from graphcost.guards.atomic import atomic_write
from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.tokenise import layer_index

MARKERS = "os^Dv<>PXph*"  # with tab10: 120 distinct (colour, marker) pairs before any repeats
MAX_CROSSING_EDGES = 1500  # above this many edges the O(E^2) crossing count (0.4 s, ~80 MB at 1500) is skipped


def describe_dataset(name: str | None) -> dict:
    """draw_dags keywords naming a dataset's node categories and label (meaning and unit)."""
    if name == "nasbench201":
        from graphcost.layerdag.datasets.nasbench201 import CATEGORIES

        return {"categories": list(CATEGORIES), "category_kind": "operator",
                "label_name": "latency (ms)"}  # fmt: skip
    if name == "tpu-tile":
        return {"category_kind": "opcode (remapped id)", "label_name": "runtime (normalised, unitless)"}
    if name == "lp":
        return {"category_kind": "LP node label", "label_name": "label"}
    return {}


def layers_of(dag: DAG) -> list[np.ndarray]:
    """L arrays of node ids, layer by layer (the LayerDAG partition), ascending id inside a layer."""
    layer = layer_index(dag.num_nodes, dag.src, dag.dst)  # (N,)
    return [np.flatnonzero(layer == l) for l in range(int(layer.max()) + 1)] if dag.num_nodes else []


def positions(layers: Sequence[np.ndarray], num_nodes: int) -> np.ndarray:
    """(N, 2) positions: y = -layer, x = place inside the layer, centred on 0."""
    pos = np.zeros((num_nodes, 2))
    for l, ids in enumerate(layers):
        pos[ids, 0] = np.arange(ids.size) - (ids.size - 1) / 2
        pos[ids, 1] = -l
    return pos


def count_crossings(pos: np.ndarray, src: np.ndarray, dst: np.ndarray) -> int:
    """Pairs of straight edges (src -> dst drawn at `pos`, (N, 2)) that properly cross; edges
    sharing an end and collinear touches do not count."""
    a, b = pos[src], pos[dst]  # (E, 2) each

    def orient(p, q, r):  # sign of the turn p -> q -> r; shapes broadcast to (E, E)
        dq, dr = q - p, r - p  # (E, E, 2)
        return np.sign(dq[..., 0] * dr[..., 1] - dq[..., 1] * dr[..., 0])

    ai, bi, aj, bj = a[:, None], b[:, None], a[None, :], b[None, :]
    cross = (orient(ai, bi, aj) * orient(ai, bi, bj) < 0) & (orient(aj, bj, ai) * orient(aj, bj, bi) < 0)
    return int(np.triu(cross, 1).sum())


def barycenter_layers(
    layers: Sequence[np.ndarray], src: np.ndarray, dst: np.ndarray, sweeps: int = 8
) -> list[np.ndarray]:
    """Reorder nodes inside each layer to reduce crossings (Sugiyama barycenter heuristic):
    alternate downward sweeps (key = mean x of predecessors) and upward sweeps (mean x of
    successors); a node without such neighbours keeps its x. Returns the ordering with the fewest
    crossings among the input and every sweep (so never worse than the input)."""
    layers = [np.asarray(ids) for ids in layers]
    n = int(sum(ids.size for ids in layers))
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    measure = src.size <= MAX_CROSSING_EDGES
    best = list(layers)
    best_count = count_crossings(positions(best, n), src, dst) if measure else 0
    current = list(layers)
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        seq = range(1, len(current)) if down else range(len(current) - 2, -1, -1)
        mine, other = (dst, src) if down else (src, dst)  # neighbours: predecessors going down
        count = np.bincount(mine, minlength=n)  # (N,)
        x = positions(current, n)[:, 0]  # (N,) updated layer by layer below
        for l in seq:
            total = np.bincount(mine, weights=x[other], minlength=n)  # (N,)
            ids = current[l]
            key = np.where(count[ids] > 0, total[ids] / np.maximum(count[ids], 1), x[ids])
            current[l] = ids[np.argsort(key, kind="stable")]
            x[current[l]] = np.arange(ids.size) - (ids.size - 1) / 2
        if measure:
            c = count_crossings(positions(current, n), src, dst)
            if c < best_count:
                best, best_count = list(current), c
        else:
            best = list(current)
    return best


def layout(dag: DAG) -> np.ndarray:
    """(N, 2) drawing positions: layered, barycenter-ordered."""
    return positions(barycenter_layers(layers_of(dag), dag.src, dag.dst), dag.num_nodes)


def category_styles(categories: Sequence[int]) -> dict[int, tuple]:
    """{category: (colour, marker)}, all pairs distinct: tab10 colours first with circles, then the
    colours again with the next marker, and so on (no colour is reused with the same marker)."""
    import matplotlib

    palette = matplotlib.colormaps["tab10"].colors
    return {int(c): (palette[i % 10], MARKERS[(i // 10) % len(MARKERS)]) for i, c in enumerate(sorted(set(categories)))}


def grid_shape(n: int) -> tuple[int, int]:
    """(rows, cols) of a near-square grid for n panels, at most 3 columns."""
    cols = min(3, max(1, math.ceil(math.sqrt(n))))
    return math.ceil(n / cols), cols


def draw_dags(
    dags: list[DAG], path: str | Path, max_graphs: int = 6, title: str = "", categories: Sequence[str] | None = None,
    category_kind: str = "node category", label_name: str = "label",
) -> Path:
    """Write up to `max_graphs` DAGs in a grid to `path` (PNG, written atomically). `categories`:
    names of the attribute ids (default: the id, under the legend title `category_kind`);
    `label_name`: what a graph's label is, with its unit (e.g. "latency (ms)")."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    dags = dags[:max_graphs]
    if not dags:
        raise ValueError("no DAGs to draw")
    rows, cols = grid_shape(len(dags))
    depth = max(len(layers_of(d)) for d in dags)  # deep graphs (NAS-Bench-201: ~100 layers) get taller rows
    row_height = min(10.0, max(4.0, 1.0 + 0.09 * depth))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols + 2.2, row_height * rows), squeeze=False,
                             layout="constrained")  # fmt: skip
    styles = category_styles(np.concatenate([d.node_attr for d in dags]).tolist())
    for ax in axes.ravel()[len(dags):]:
        ax.set_visible(False)
    for ax, dag in zip(axes.ravel(), dags):
        pos = layout(dag)
        for u, v in zip(dag.src.tolist(), dag.dst.tolist()):
            ax.annotate("", xy=pos[v], xytext=pos[u],
                        arrowprops=dict(arrowstyle="->", lw=0.5, color="0.6", shrinkA=3, shrinkB=3))  # fmt: skip
        for cat, (colour, marker) in styles.items():
            mask = dag.node_attr == cat
            if mask.any():
                ax.scatter(pos[mask, 0], pos[mask, 1], color=colour, marker=marker, s=28, zorder=3, edgecolors="k",
                           linewidths=0.3)  # fmt: skip
        label = "" if dag.label is None else f"\n{label_name} = {dag.label:.4g}"
        layers = len(np.unique(pos[:, 1]))
        ax.set_title(f"{counted(dag.num_nodes, 'node')}, {counted(dag.num_edges, 'edge')}, {counted(layers, 'layer')}"
                     f"{label}", fontsize=8)
        ax.margins(0.08)
        ax.axis("off")
    names = {int(c): (categories[c] if categories is not None and 0 <= c < len(categories) else str(c)) for c in styles}
    handles = [Line2D([], [], ls="", marker=m, color=col, markeredgecolor="k", markeredgewidth=0.3, label=names[c])
               for c, (col, m) in styles.items()]  # fmt: skip
    fig.legend(handles=handles, loc="outside right upper", fontsize=7, title=category_kind, title_fontsize=8,
               ncol=max(1, math.ceil(len(handles) / (12 * rows))))  # fmt: skip
    fig.suptitle((title + "\n" if title else "") + "layered layout: row = layer (sources at the top), "
                 "order inside a layer: barycenter heuristic", fontsize=9)  # fmt: skip
    path = Path(path)
    try:
        with atomic_write(path) as handle:
            fig.savefig(handle, format="png", dpi=120)
    finally:
        plt.close(fig)
    return path


def counted(n: int, noun: str) -> str:
    """``1 node``, ``2 nodes``: a count with its noun in the singular or the plural."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
