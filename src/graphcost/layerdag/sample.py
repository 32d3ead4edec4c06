"""Layerwise autoregressive sampling from a trained LayerDAG (§III-B, §III-C, §III-E).

For l = 0, 1, ... (l = layers generated so far), for every unfinished graph:
1. |V(l+1)| ~ p(·|G(≤l)); 0 ends the graph (not allowed at l = 0; sizes are capped so a graph
   never exceeds the training set's largest node count; at most `max_layers` layers).
2. X(l+1): x_T ~ m, then the strided reverse chain over `time_grid(T(l), T_node)`.
3. E(l+1) (l ≥ 1): e_T ~ Bernoulli(ρ) per candidate in V(≤l) × V(l+1), reverse chain over
   `time_grid(T_E(l), T_edge)` with T_E(l) = max(1, round(T(l) · T_edge / T_node)) (the node
   schedule rescaled to the edge chain). Finally, every new node without a predecessor in layer l
   (the previous layer — true of every real layered DAG) gets its most probable such edge, so each
   new node has a predecessor and the generated layering is the DAG's own layerwise partition.
T(l) comes from a schedule (`graphcost.layerdag.denoising_schedule`): eq. 1 or constant; default constant T_node.
With a guidance weight w > 0 (a model trained with label dropout, `graphcost.layerdag.model`), every
network call of steps 1-3 is made twice, with the label and with the null label, and the logits
are combined as ℓ(y) + w (ℓ(y) − ℓ(∅)) (classifier-free guidance).
The networks run on the model's device; the bookkeeping and every random draw stay on CPU with
one CPU generator, so a seed gives the same DAGs on any device up to float rounding.
"""

from __future__ import annotations

import numpy as np
import torch
from tqdm import tqdm

from graphcost.guards.bounds import SAMPLES_MAX, ArgumentError, check_int, check_real, check_seed
from graphcost.layerdag.denoising_schedule import ConstantSchedule, time_grid
from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.layer_size import LayerSizePredictor
from graphcost.layerdag.model import LayerDAG


def _union(states, idx):
    """Disjoint union of the current graphs `idx`: attr, depth, edge_index, batch, bases."""
    attr = [states[i]["attr"] for i in idx]
    depth = [states[i]["depth"] for i in idx]
    sizes = np.array([a.shape[0] for a in attr], dtype=np.int64)
    bases = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    src = np.concatenate([states[i]["src"] + b for i, b in zip(idx, bases)])
    dst = np.concatenate([states[i]["dst"] + b for i, b in zip(idx, bases)])
    t = lambda x: torch.from_numpy(np.ascontiguousarray(x, dtype=np.int64))  # noqa: E731
    batch = np.repeat(np.arange(len(idx)), sizes)
    return t(np.concatenate(attr)), t(np.concatenate(depth)), torch.stack([t(src), t(dst)]), t(batch), bases, sizes


def _net(model: LayerDAG, fn, *args) -> torch.Tensor:
    """fn(*args) (one of `model`'s networks) with the tensor arguments on the model's device;
    the result comes back to CPU."""
    dev = model.device
    if dev.type == "cpu":
        return fn(*args)
    return fn(*(a.to(dev) if isinstance(a, torch.Tensor) else a for a in args)).cpu()


def _guided(model: LayerDAG, w: float, fn, args: tuple, null_args: tuple) -> torch.Tensor:
    """Classifier-free guidance of logits: ℓ(y) + w (ℓ(y) − ℓ(∅)) with ℓ(y) = fn(*args) (label
    embeddings) and ℓ(∅) = fn(*null_args) (null label). w = 0 makes one call, the plain conditional logits."""
    logits = _net(model, fn, *args)
    return logits if w == 0 else logits + w * (logits - _net(model, fn, *null_args))


def _final(diff, x, probs, s, t, gen, final_step):
    """One reverse step t -> s; the last one (s = 0) draws from p̂(x_0) or, with final_step='mode',
    takes its most probable value (removes the independent low-probability draws of the last step)."""
    if s == 0 and final_step == "mode":
        return probs.argmax(-1)
    return diff.reverse_sample(x, probs, int(s), int(t), gen)


def _sample_nodes(model, g_ctx, sizes, l, cond, steps, gen, final_step="sample", w=0.0):
    """X(l+1) for S sets of sizes `sizes` (S,) by the strided reverse chain; returns (sum sizes,).
    `g_ctx` / `cond`: {True: with the label, False: with the null label (only for w > 0)}, each (S, d)."""
    diff = model.node_diffusion
    S, M = len(sizes), int(sizes.max())
    set_idx = torch.from_numpy(np.repeat(np.arange(S), sizes))
    pos = torch.from_numpy(np.concatenate([np.arange(s) for s in sizes]))
    pad = torch.ones(S, M, dtype=torch.bool)
    pad[set_idx, pos] = False
    x = diff.prior_sample(int(sizes.sum()), gen)
    layer = torch.full((S,), l, dtype=torch.long)
    grid = time_grid(steps, diff.T)
    for t, s in zip(grid[:-1], grid[1:]):
        x_pad = torch.zeros(S, M, dtype=torch.long)
        x_pad[set_idx, pos] = x
        rest = (x_pad, pad, torch.full((S,), int(t)), layer)
        logits = _guided(model, w, model.node_model, (g_ctx[True], *rest, cond[True]),
                         (g_ctx.get(False), *rest, cond.get(False)))  # (S, M, C)  # fmt: skip
        p0 = torch.softmax(logits[set_idx, pos], -1)
        x = _final(diff, x, p0, s, t, gen, final_step)
    return x


def _sample_edges(model, states, grow, new_attr, sizes, l, cond, steps, gen, final_step="sample", w=0.0):
    """E(l+1) for the graphs `grow` given their new nodes; returns per-graph (src, dst) arrays.
    `cond`: {True: label embeddings, False: null ones (only for w > 0)}, each (len(grow), d)."""
    diff = model.edge_diffusion
    parts, base = [], 0
    c_src, c_dst, c_ex, c_prev = [], [], [], []
    attr_l, depth_l, flag_l, src_l, dst_l, batch_l = [], [], [], [], [], []
    start = 0
    for j, i in enumerate(grow):
        st, k = states[i], int(sizes[j])
        n_prev = st["attr"].shape[0]
        attr_l.append(np.concatenate([st["attr"], new_attr[start : start + k]]))
        start += k
        depth_l.append(np.concatenate([st["depth"], np.full(k, l)]))
        flag_l.append(np.concatenate([np.zeros(n_prev, np.int64), np.ones(k, np.int64)]))
        src_l.append(st["src"] + base)
        dst_l.append(st["dst"] + base)
        batch_l.append(np.full(n_prev + k, j))
        u, v = np.meshgrid(np.arange(n_prev), np.arange(n_prev, n_prev + k), indexing="ij")
        c_src.append(u.ravel() + base)
        c_dst.append(v.ravel() + base)
        c_ex.append(np.full(u.size, j))
        c_prev.append(st["depth"][u.ravel()] == l - 1)
        parts.append((base, n_prev))
        base += n_prev + k
    T = lambda xs: torch.from_numpy(np.concatenate(xs).astype(np.int64))  # noqa: E731
    attr, depth, flag, batch = T(attr_l), T(depth_l), T(flag_l), T(batch_l)
    fixed = torch.stack([T(src_l), T(dst_l)])
    cs, cd, cx = T(c_src), T(c_dst), T(c_ex)
    prev = torch.from_numpy(np.concatenate(c_prev))
    G = len(grow)
    e = diff.prior_sample(cs.shape[0], gen)
    grid = time_grid(steps, diff.T)
    p1 = torch.zeros(cs.shape[0])
    for t, s in zip(grid[:-1], grid[1:]):
        on = e.bool()
        ei = torch.cat([fixed, torch.stack([cs[on], cd[on]])], 1)
        head, tail = (attr, depth, flag, ei, batch, G, torch.full((G,), int(t))), (cs, cd, cx, e)
        logits = _guided(model, w, model.edge_model, (*head, cond[True], *tail), (*head, cond.get(False), *tail))
        p1 = torch.sigmoid(logits)
        e = _final(diff, e, torch.stack([1 - p1, p1], -1), s, t, gen, final_step)
    chosen = e.bool()
    # every new node needs a predecessor in the previous layer: add its most probable one
    score = torch.where(prev, p1, torch.full_like(p1, -1.0))
    has = torch.zeros(base, dtype=torch.bool).index_put_((cd[chosen & prev],), torch.tensor(True))
    best = torch.full((base,), -2.0).scatter_reduce(0, cd, score, reduce="amax", include_self=True)
    need = ~has[cd] & prev & (score == best[cd])
    need_idx = torch.nonzero(need).squeeze(-1)
    if need_idx.numel():  # one edge per node even if probabilities tie
        _, first = np.unique(cd[need_idx].numpy(), return_index=True)
        chosen[need_idx[torch.from_numpy(first)]] = True
    out = []
    for j, (b, n_prev) in enumerate(parts):
        sel = chosen & (cx == j)
        out.append(((cs[sel] - b).numpy(), (cd[sel] - b).numpy()))
    return out


@torch.no_grad()
def _sample_batch(model: LayerDAG, B: int, labels, schedule, gen, max_layers: int, final_step: str, w: float) -> list[DAG]:
    c = model.config
    lab_t = None if labels is None else torch.from_numpy(labels).to(torch.float32)
    cond_all = {m: model.cond(lab_t, B, m).cpu() for m in ("size", "node", "edge")}  # each (B, d)
    null = torch.zeros(B, c.dim)  # the null label's embedding (classifier-free guidance)
    labelled = (True, False) if w else (True,)
    states = [{"attr": np.zeros(0, np.int64), "depth": np.zeros(0, np.int64),
               "src": np.zeros(0, np.int64), "dst": np.zeros(0, np.int64)} for _ in range(B)]  # fmt: skip
    active = np.arange(B)
    for l in range(max_layers):
        if active.size == 0:
            break
        attr, depth, ei, batch, _, n_now = _union(states, active)
        A = active.size
        act = torch.from_numpy(active)
        layer_idx = torch.full((A,), l, dtype=torch.long)
        prefix = (attr, depth, ei, batch, A, layer_idx)
        logits = _guided(model, w, model.size_model, (*prefix, cond_all["size"][act]), (*prefix, null[:A]))
        room = torch.from_numpy(c.max_nodes - n_now).clamp_min(0)
        logits = LayerSizePredictor.mask_logits(logits, layer_idx, room)
        size = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen).squeeze(-1).numpy()
        keep = size > 0
        if not keep.any():
            break
        grow, sizes = active[keep], size[keep]
        steps = schedule.steps(l)
        grow_t, kept = torch.from_numpy(grow), torch.from_numpy(np.flatnonzero(keep))
        node_cond = {True: cond_all["node"][grow_t], False: null[: grow.size]}
        g_ctx = {y: _net(model, model.node_model.graph_context, attr, depth, ei, batch, A,
                         cond_all["node"][act] if y else null[:A])[kept] for y in labelled}  # fmt: skip
        new_attr = _sample_nodes(model, g_ctx, sizes, l, node_cond, steps, gen, final_step, w).numpy()
        edges = None
        if l >= 1:
            e_steps = min(c.T_edge, max(1, round(steps * c.T_edge / c.T_node)))
            edge_cond = {True: cond_all["edge"][grow_t], False: null[: grow.size]}
            edges = _sample_edges(model, states, grow, new_attr, sizes, l, edge_cond, e_steps, gen, final_step, w)
        start = 0
        for j, i in enumerate(grow):
            st, k = states[i], int(sizes[j])
            st["attr"] = np.concatenate([st["attr"], new_attr[start : start + k]])
            st["depth"] = np.concatenate([st["depth"], np.full(k, l)])
            if edges is not None:
                st["src"] = np.concatenate([st["src"], edges[j][0]])
                st["dst"] = np.concatenate([st["dst"], edges[j][1]])
            start += k
        active = grow
    out = []
    for i, st in enumerate(states):
        label = None if labels is None else float(labels[i])
        order = np.lexsort((st["dst"], st["src"]))
        out.append(DAG(st["attr"].astype(np.int64), st["src"][order].astype(np.int64), st["dst"][order].astype(np.int64), label))
    return out


def check_guidance(config, guidance: float) -> None:
    """Refuse a guidance weight the model cannot honour (a ValueError naming the fix)."""
    if not guidance >= 0:  # also NaN
        raise ValueError(f"guidance must be >= 0, got {guidance}")
    if guidance and not config.conditional:
        raise ValueError("guidance needs a conditional LayerDAG (trained on labelled graphs)")
    if guidance and not config.label_dropout > 0:
        raise ValueError("this LayerDAG was trained without label dropout, so it has no null-label model to guide "
                         "against: retrain with `graphcost dag train --label-dropout 0.1` or sample with guidance 0")


def sample_dags(
    model: LayerDAG,
    num: int,
    labels: np.ndarray | list[float] | None = None,
    schedule=None,
    batch_size: int = 64,
    seed: int = 0,
    max_layers: int | None = None,
    progress: bool = True,
    final_step: str = "sample",
    guidance: float = 0.0,
) -> list[DAG]:
    """Sample `num` DAGs; `labels` (num,) conditions a conditional model (required for one).

    `schedule` has `.steps(l)` (LinearSchedule / ConstantSchedule); default: all T_node steps.
    `final_step`: 'sample' draws the last reverse step from p̂(x_0) like every other step (D3PM);
    'mode' takes the most probable x_0 there (node attributes and edges). Deterministic given `seed`.
    `guidance` w ≥ 0: classifier-free guidance weight (needs a conditional model trained with
    label dropout); 0 samples from the plain conditional model.
    """
    if not isinstance(model, LayerDAG):
        raise ArgumentError(f"model must be a LayerDAG (graphcost.layerdag.train.load_model), got {type(model).__name__}")
    check_int("num", num, 1, SAMPLES_MAX)
    check_int("batch_size", batch_size, 1, SAMPLES_MAX)
    check_seed("seed", seed)
    if max_layers is not None:
        check_int("max_layers", max_layers, 1, SAMPLES_MAX)
    if final_step not in ("sample", "mode"):
        raise ArgumentError(f"final_step must be 'sample' or 'mode', got {final_step!r}")
    c = model.config
    check_guidance(c, check_real("guidance", guidance, 0.0))
    if c.conditional and labels is None:
        raise ValueError("this LayerDAG is conditional: pass a target label per graph (--label)")
    if not c.conditional and labels is not None:
        raise ValueError("this LayerDAG is unconditional: it cannot follow labels (pass labels=None)")
    if labels is not None:
        try:
            labels = np.asarray(labels, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise ArgumentError(f"labels must be numbers, one per graph or one for all, got {labels!r:.80}") from None
        if not np.isfinite(labels).all():
            raise ArgumentError("labels must be finite numbers")
        if labels.shape[0] == 1 and num > 1:
            labels = np.repeat(labels, num)
        if labels.shape[0] != num:
            raise ValueError(f"got {labels.shape[0]} labels for {num} graphs")
    schedule = schedule or ConstantSchedule(c.T_node)
    max_layers = max_layers or 2 * c.max_layers
    gen = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    out: list[DAG] = []
    with tqdm(total=num, desc="sampling DAGs", unit="graph", disable=not progress) as bar:
        for start in range(0, num, batch_size):
            B = min(batch_size, num - start)
            lab = None if labels is None else labels[start : start + B]
            out.extend(_sample_batch(model, B, lab, schedule, gen, max_layers, final_step, float(guidance)))
            bar.update(B)
    model.train(was_training)
    return out
