"""LayerDAG drawing layout: edge crossings in id order vs after the barycenter heuristic
(`graphcost.layerdag.draw.barycenter_layers`), and the time it takes, on real and synthetic DAGs.

    GRAPHCOST_SHARED_DATA=/work/shared/data python benchmarks/layerdag/bench_dag_draw.py [--graphs 30]

Per dataset: the first --graphs training graphs with at most draw.MAX_CROSSING_EDGES edges; prints
a table and writes benchmarks/results/dag_draw.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from graphcost.guards.atomic import atomic_write
from graphcost.layerdag import draw
from graphcost.layerdag.datasets import load_dataset

DATASETS = [("tpu-tile", {}), ("nasbench201", {"num_graphs": 40}), ("lp", {"num_graphs": 40})]


def measure(name: str, kw: dict, graphs: int) -> dict:
    dags = [d for d in load_dataset(name, **kw)["train"] if d.num_edges <= draw.MAX_CROSSING_EDGES][:graphs]
    before = after = 0
    t0 = time.perf_counter()
    for d in dags:
        layers = draw.layers_of(d)
        before += draw.count_crossings(draw.positions(layers, d.num_nodes), d.src, d.dst)
        ordered = draw.barycenter_layers(layers, d.src, d.dst)
        after += draw.count_crossings(draw.positions(ordered, d.num_nodes), d.src, d.dst)
    secs = time.perf_counter() - t0
    return {"dataset": name, "graphs": len(dags), "crossings_id_order": before, "crossings_barycenter": after,
            "ms_per_graph": 1000 * secs / max(1, len(dags))}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=30)
    args = ap.parse_args()
    rows = [measure(name, kw, args.graphs) for name, kw in DATASETS]
    print(f"{'dataset':<12} {'graphs':>6} {'id order':>9} {'barycenter':>10} {'ms/graph':>9}")
    for r in rows:
        print(f"{r['dataset']:<12} {r['graphs']:>6} {r['crossings_id_order']:>9} {r['crossings_barycenter']:>10} "
              f"{r['ms_per_graph']:>9.1f}")  # fmt: skip
    out = Path(__file__).resolve().parents[1] / "results" / "dag_draw.json"
    with atomic_write(out, "w") as handle:
        json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
