"""Which LayerDAG module breaks the LP rules (issue 5): each module sampled teacher-forced on real LP
test graphs (SYNTHETIC data), the others' choices taken from the data.

    python benchmarks/lab/diagnose_layerdag_lp.py RUN_OR_CHECKPOINT [--graphs 3000] [--test 200] [--final-step sample]

For every layer l of every test graph, given the TRUE prefix G(≤l):
- size: one draw of |V(l+1)|; infeasible if outside [Σ_i max(0, n_i − (l+1)), Σ_i n_i + (l+1)] (n_i =
  label counts of layer l; stopping is not judged);
- node attributes: X(l+1) denoised for the TRUE layer size; invalid if a label count leaves its bound;
- edges: E(l+1) denoised for the TRUE new-node labels; per new node: > 2 predecessors, a same-label
  pair, or no predecessor in layer l.
Prints the fraction of graphs with at least one failure per module and the per-node edge outcomes.
`--graphs` must match the run's `--num-graphs` (the split is regenerated from it, seed 0).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from graphcost.layerdag.batch import prepare
from graphcost.layerdag.datasets import load_dataset
from graphcost.layerdag.layer_size import LayerSizePredictor
from graphcost.layerdag.sample import _net, _sample_edges, _sample_nodes, _union
from graphcost.layerdag.train import load_model


def _bounds(g, l: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-label count bounds of 0-based layer l given layer l - 1 (LP rule, 1-based width l + 1)."""
    prev = np.bincount(g.attr[g.off[l - 1] : g.off[l]], minlength=2)
    return np.maximum(0, prev - (l + 1)), prev + (l + 1)


@torch.no_grad()
def diagnose(model, test, final_step: str, seed: int = 0) -> dict:
    c = model.config
    gen = torch.Generator().manual_seed(seed)
    bad = {m: np.zeros(len(test), bool) for m in ("size", "node", "edge")}
    per_node = {"ok": 0, "more_than_2": 0, "same_label_pair": 0, "none_in_previous_layer": 0}
    for l in range(1, max(g.num_layers for g in test)):
        idx = [i for i, g in enumerate(test) if g.num_layers > l]  # graphs that have a layer l (0-based)
        states = [{"attr": test[i].attr[: test[i].off[l]], "depth": test[i].depth[: test[i].off[l]],
                   "src": test[i].src[: test[i].ecum[l]], "dst": test[i].dst[: test[i].ecum[l]]} for i in idx]  # fmt: skip
        A, zero = len(idx), torch.zeros(len(idx), c.dim)
        attr, depth, ei, batch, _, n_now = _union(states, np.arange(A))
        layer = torch.full((A,), l)
        logits = _net(model, model.size_model, attr, depth, ei, batch, A, layer, zero)
        logits = LayerSizePredictor.mask_logits(logits, layer, torch.from_numpy(c.max_nodes - n_now).clamp_min(0))
        size = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen).squeeze(-1).numpy()
        sizes = np.array([int(test[i].off[l + 1] - test[i].off[l]) for i in idx])
        g_ctx = _net(model, model.node_model.graph_context, attr, depth, ei, batch, A, zero)
        x = _sample_nodes(model, {True: g_ctx}, sizes, l, {True: zero}, c.T_node, gen, final_step).numpy()
        true_attr = np.concatenate([test[i].attr[test[i].off[l] : test[i].off[l + 1]] for i in idx])
        edges = _sample_edges(model, states, np.arange(A), true_attr, sizes, l, {True: zero}, c.T_edge, gen, final_step)
        start = 0
        for j, i in enumerate(idx):
            g, k = test[i], sizes[j]
            lo, hi = _bounds(g, l)
            bad["size"][i] |= bool(size[j]) and not lo.sum() <= size[j] <= hi.sum()
            counts = np.bincount(x[start : start + k], minlength=2)
            bad["node"][i] |= bool(np.any(counts < lo) or np.any(counts > hi))
            start += k
            src, dst = edges[j]
            for v in range(int(g.off[l]), int(g.off[l + 1])):
                p = src[dst == v]
                kind = ("more_than_2" if len(p) > 2 else "same_label_pair" if len(p) == 2 and g.attr[p[0]] == g.attr[p[1]]
                        else "none_in_previous_layer" if not np.any(g.depth[p] == l - 1) else "ok")  # fmt: skip
                per_node[kind] += 1
                bad["edge"][i] |= kind != "ok"
    return {"graphs": len(test), **{f"{m}_invalid_graphs": float(b.mean()) for m, b in bad.items()}, "edge_per_node": per_node}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="LayerDAG run directory (best.pt) or checkpoint file, trained on LP")
    p.add_argument("--graphs", type=int, default=3000, help="the run's LP --num-graphs (regenerates its split)")
    p.add_argument("--test", type=int, default=200, help="test graphs to use")
    p.add_argument("--final-step", choices=["sample", "mode"], default="sample")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = load_model(a.run).to(a.device).eval()
    if model.config.num_categories != 2:
        raise SystemExit(f"{a.run}: not an LP model ({model.config.num_categories} attribute values, LP has 2)")
    test = [prepare(d) for d in load_dataset("lp", seed=0, num_graphs=a.graphs)["test"][: a.test]]
    print(json.dumps(diagnose(model, test, a.final_step), indent=1))


if __name__ == "__main__":
    main()
