"""Draw a few DAGs in one PNG: layered layout (row = layer of the LayerDAG partition), node colour
= attribute, edges as arrows. matplotlib is imported inside the function (Agg backend)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphcost.atomic import atomic_write
from graphcost.dag.graph import DAG
from graphcost.dag.tokenise import tokenise


def _layout(dag: DAG) -> np.ndarray:
    """(N, 2) positions: y = -layer, x spread evenly inside each layer."""
    lay = tokenise(dag)
    pos = np.zeros((dag.num_nodes, 2))
    for l, start in enumerate(lay.offsets[:-1]):
        ids = lay.order[start : lay.offsets[l + 1]]
        pos[ids, 0] = np.arange(ids.size) - (ids.size - 1) / 2
        pos[ids, 1] = -l
    return pos


def draw_dags(dags: list[DAG], path: str | Path, max_graphs: int = 6, title: str = "") -> Path:
    """Write up to `max_graphs` DAGs side by side to `path` (PNG, written atomically)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dags = dags[:max_graphs]
    if not dags:
        raise ValueError("no DAGs to draw")
    fig, axes = plt.subplots(1, len(dags), figsize=(3.2 * len(dags), 4.5), squeeze=False)
    cmap = plt.get_cmap("tab20")
    for ax, dag in zip(axes[0], dags):
        pos = _layout(dag)
        for u, v in zip(dag.src.tolist(), dag.dst.tolist()):
            ax.annotate("", xy=pos[v], xytext=pos[u],
                        arrowprops=dict(arrowstyle="->", lw=0.5, color="0.55", shrinkA=3, shrinkB=3))  # fmt: skip
        ax.scatter(pos[:, 0], pos[:, 1], c=[cmap(int(a) % 20) for a in dag.node_attr], s=22, zorder=3, edgecolors="k",
                   linewidths=0.3)  # fmt: skip
        label = "" if dag.label is None else f", y={dag.label:.3g}"
        ax.set_title(f"{dag.num_nodes} nodes, {dag.num_edges} edges{label}", fontsize=8)
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    try:
        with atomic_write(path) as handle:
            fig.savefig(handle, format="png", dpi=110)
    finally:
        plt.close(fig)
    return path
