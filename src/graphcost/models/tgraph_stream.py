"""TGraph's per-configuration rows without gradients, streamed through node tiles (inference).

`TGraph._dynamic_pool` needs, per configuration b, only Σ_i over the dynamic rows of the last
block's input ε and output GELU(...) (TGraph eq. 3, 7; the static rows are in the reference's
pool_const). Everything after a SAGE layer's matrix products is per node (A_cross per node and
channel, over B), and so is the next block's pair of products, so a block runs tile by tile of
t output nodes, each (t, B, F) tile staying in cache:

    s    = mix[tile] @ [W_l x; W_r x] + const[tile]    one embedding_bag (CSR rows of `mix`)
    η    = A_self(s / ||s||),  c = A_cross(η)          TGraph eq. 2, 5, 6
    out  = ε[tile] + [GELU(η) | GELU(c)]               eq. 3 (ε: static rows broadcast over B)
    next block's [W_l out; W_r out] rows, and Σ_tile out (fp32) if the next block is the last;
    last block: Σ_tile GELU(...) (fp32).

So no (D', B, F) state is ever materialised except the products [W_l x; W_r x] (kept in a
`Workspace` reused by every chunk: fresh multi-MiB tensors cost page faults on CPU), and the
block output only when a later block needs it for its residual (3+ blocks). Same operations as
the dense path, exact in float32 up to summation order; sums accumulate in float32 for any dtype.
`map_chunks` runs the chunks of configurations of one call side by side, one thread each.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, cast
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphcost.models.shared_nodes import SagePlan


class Workspace:
    """Named flat buffers reused across calls (one score_chunked call: every chunk)."""

    def __init__(self) -> None:
        self._bufs: dict[str, Tensor] = {}

    def get(self, name: str, shape: Sequence[int], like: Tensor, dtype: torch.dtype | None = None) -> Tensor:
        """An uninitialised tensor of `shape` (dtype and device of `like` unless dtype given)."""
        dtype = dtype or like.dtype
        n = math.prod(shape)
        buf = self._bufs.get(name)
        if buf is None or buf.numel() < n or buf.dtype != dtype or buf.device != like.device:
            buf = torch.empty(n, dtype=dtype, device=like.device)
            self._bufs[name] = buf
        return buf[:n].view(*shape)


def map_chunks(fn: Callable[[Any, Workspace], Tensor], items: Sequence, threads: int) -> list[Tensor]:
    """[fn(item, workspace) for item in items] (chunks of configurations), on `threads` Python
    threads with one intra-op thread each when there are at least that many items: the chunks
    are independent, and on a CPU whole chunks per core beat splitting every small per-tile
    operation across the cores. Each thread keeps its own Workspace; the calling thread's
    grad/inference mode is repeated in the workers (it is thread-local); the intra-op thread
    count is restored afterwards. Results are in item order."""
    if threads <= 1 or len(items) < threads:
        ws = Workspace()
        return [fn(item, ws) for item in items]
    mode = torch.inference_mode if torch.is_inference_mode_enabled() else torch.no_grad
    local = threading.local()

    def call(item):
        if not hasattr(local, "ws"):
            torch.set_num_threads(1)  # this worker's intra-op threads (OpenMP's setting is per thread)
            local.ws = Workspace()
        with mode():
            return fn(item, local.ws)

    before = torch.get_num_threads()
    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(call, items))
    finally:
        torch.set_num_threads(before)


def project(plan: SagePlan, x: Tensor, out: Tensor) -> Tensor:
    """out (2D, B, F_out) = [W_l x; W_r x] for the plan's input rows x (D, B, F)."""
    d = x.shape[0]
    torch.matmul(x, plan.w_l.T, out=out[:d])
    torch.matmul(x, plan.w_r.T, out=out[d:])
    return out


def mixed_rows(plan: SagePlan, y: Tensor, r0: int, r1: int) -> Tensor:
    """Unnormalised SAGE outputs (t, B, F_out) of output rows r0:r1 given y = [W_l x; W_r x]:
    the CSR rows r0:r1 of `mix` as one weighted embedding-bag sum, plus const (module doc)."""
    crow, col = plan.mix_crow, plan.mix_col
    assert crow is not None and col is not None  # SagePlan.build keeps the CSR arrays
    e0, e1 = int(crow[r0]), int(crow[r1])
    w = plan.mix_weight[e0:e1] if plan.mix_weight is not None else None
    s = F.embedding_bag(col[e0:e1], y.view(y.shape[0], -1), crow[r0:r1] - e0, mode="sum",
                        per_sample_weights=w)  # (t, B * F_out)
    return s.view(r1 - r0, *y.shape[1:]).add_(plan.const[r0:r1].unsqueeze(1))


def attend_into(blk: Any, s: Tensor, g: Tensor) -> Tensor:
    """g (t, B, H) = GELU(concat(η, A_cross(η))) for a tile s (t, B, F) of unnormalised SAGE
    outputs, η = A_self(N_L2(s)) (TGraph eq. 2, 5, 6, 3's GELU); s is overwritten. Both halves
    are written into g, so the GELU and what follows run once over H contiguous channels."""
    f = s.shape[-1]
    n = torch.linalg.vector_norm(s, dim=-1, keepdim=True).clamp_min_(1e-12)  # as F.normalize
    eta = g[..., :f]
    if blk.se is not None:  # eq. 5
        s.div_(n)
        torch.mul(blk.se.gate(s), s, out=eta)
    else:
        torch.div(s, n, out=eta)
    if blk.cross is not None:  # eq. 6: softmax over the configurations (dim 1)
        torch.mul(blk.cross.weights(eta, dim=1), eta, out=g[..., f:])
    return torch._C._nn.gelu_(g)  # type: ignore[attr-defined]  # in-place GELU: not in torch's stubs


def _residual(out: Tensor, g: Tensor, eps_static: Tensor, dyn: Tensor, loc: Tensor) -> None:
    """out (t, B, H) = ε + g (TGraph eq. 3) for a tile whose rows `loc` hold a per-configuration
    ε, dyn (len(loc), B, H), and whose other rows hold eps_static (t, H) in every configuration."""
    if loc.numel() == out.shape[0]:  # loc is sorted and distinct: every row
        torch.add(g, dyn, out=out)
        return
    torch.add(g, eps_static.unsqueeze(1), out=out)
    if loc.numel():
        out.index_copy_(0, loc, dyn + g[loc])


def _add_rows(acc: Tensor, x: Tensor) -> None:
    """acc[:t] += x (float32 accumulator of row sums), in chunks of acc's rows."""
    step = acc.shape[0]
    for r0 in range(0, x.shape[0], step):
        part = x[r0:r0 + step]
        acc[:part.shape[0]] += part


def stream_blocks(blocks: Sequence[nn.Module], plans: Sequence[SagePlan], eps_static: Sequence[Tensor],
                  h: Tensor, ws: Workspace, tile_rows: Callable[[int, int, int], int]) -> Tensor:
    """(B, H) float32: Σ over the last block's dynamic input rows of ε and output rows of
    GELU(concat(η, A_cross(η))), given h (D_0, B, H): the first block's dynamic input rows.

    blocks[k] (a TGraph block: se, cross) runs SAGE plan plans[k]; eps_static[k] (D'_k, H) are
    its input states on its output rows under the reference configuration."""
    b, hidden = h.shape[1], h.shape[2]
    step = tile_rows(b, hidden, h.element_size())  # nodes per tile
    acc = ws.get("acc", (min(step, max(p.idx_out.numel() for p in plans)), b, hidden), h, torch.float32).zero_()
    if len(plans) == 1:
        _add_rows(acc, h)  # the last block's input ε rows = f_in rows
    x, y = h, project(plans[0], h, ws.get("y0", (2 * h.shape[0], b, plans[0].w_l.shape[0]), h))
    gbuf = ws.get("g", acc.shape, h)  # GELU(concat(η, A_cross(η))) of one tile
    for k, (blk, plan) in enumerate(zip(blocks, plans)):
        last, d_out = k + 1 == len(plans), plan.idx_out.numel()
        if not last:
            nxt = plans[k + 1]
            y_next = ws.get(f"y{k + 1}", (2 * d_out, b, nxt.w_l.shape[0]), h)
            keep = ws.get(f"h{k % 2}", (d_out, b, hidden), h) if k + 2 < len(plans) else None
            pos = plan.pos_in.tolist()  # sorted: the rows of x inside each tile are a slice
            tile = ws.get("tile", (min(step, d_out), b, hidden), h) if keep is None else None
        for r0 in range(0, d_out, step):
            r1 = min(r0 + step, d_out)
            g = attend_into(blk, mixed_rows(plan, y, r0, r1), gbuf[:r1 - r0])  # (t, B, H)
            if last:
                acc[:r1 - r0] += g
                continue
            out = keep[r0:r1] if keep is not None else cast(Tensor, tile)[:r1 - r0]  # (t, B, H) block output
            j0, j1 = bisect.bisect_left(pos, r0), bisect.bisect_left(pos, r1)
            _residual(out, g, eps_static[k][r0:r1], x[j0:j1], plan.pos_in[j0:j1] - r0)
            torch.matmul(out, nxt.w_l.T, out=y_next[r0:r1])  # next block's products, row by row
            torch.matmul(out, nxt.w_r.T, out=y_next[d_out + r0:d_out + r1])
            if k + 2 == len(plans):
                acc[:r1 - r0] += out  # the last block's input ε rows
        if not last:
            x, y = cast(Tensor, keep), y_next  # keep is None only before the last block, which reads no x
    return acc.sum(0)
