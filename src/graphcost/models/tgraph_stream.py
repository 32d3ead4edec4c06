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
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence

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


def project(plan: SagePlan, x: Tensor, out: Tensor) -> Tensor:
    """out (2D, B, F_out) = [W_l x; W_r x] for the plan's input rows x (D, B, F)."""
    d = x.shape[0]
    torch.matmul(x, plan.w_l.T, out=out[:d])
    torch.matmul(x, plan.w_r.T, out=out[d:])
    return out


def mixed_rows(plan: SagePlan, y: Tensor, r0: int, r1: int) -> Tensor:
    """Unnormalised SAGE outputs (t, B, F_out) of output rows r0:r1 given y = [W_l x; W_r x]:
    the CSR rows r0:r1 of `mix` as one weighted embedding-bag sum, plus const (module doc)."""
    crow = plan.mix_crow
    e0, e1 = int(crow[r0]), int(crow[r1])
    w = plan.mix_weight[e0:e1] if plan.mix_weight is not None else None
    s = F.embedding_bag(plan.mix_col[e0:e1], y.view(y.shape[0], -1), crow[r0:r1] - e0, mode="sum",
                        per_sample_weights=w)  # (t, B * F_out)
    return s.view(r1 - r0, *y.shape[1:]).add_(plan.const[r0:r1].unsqueeze(1))


def attend_in_place(blk: nn.Module, s: Tensor) -> tuple[Tensor, Tensor | None]:
    """GELU(η), GELU(A_cross(η)) for a tile s (t, B, F) of unnormalised SAGE outputs, with
    η = A_self(N_L2(s)) (TGraph eq. 2, 5, 6); s is overwritten."""
    s.div_(torch.linalg.vector_norm(s, dim=-1, keepdim=True).clamp_min_(1e-12))  # = F.normalize
    eta = blk.se(s) if blk.se is not None else s  # eq. 5, in place without gradients
    cross = None
    if blk.cross is not None:  # eq. 6: softmax over the configurations (dim 1)
        cross = torch.softmax(eta / blk.cross.temperature, dim=1).mul_(eta)
        torch._C._nn.gelu_(cross)
    return torch._C._nn.gelu_(eta), cross


def _residual(out: Tensor, eta: Tensor, cross: Tensor | None, eps: Tensor,
              into: tuple[Tensor, Tensor] | None = None) -> None:
    """out (t, B, H) = eps + concat(GELU(η), GELU(c)) (TGraph eq. 3), one pass per half; eps
    (t, B or 1, H). `into` (dest, rows): then copy out into dest's rows."""
    f = eta.shape[-1]
    torch.add(eta, eps[..., :f], out=out[..., :f])
    if cross is not None:
        torch.add(cross, eps[..., f:], out=out[..., f:])
    if into is not None:
        into[0].index_copy_(0, into[1], out)


def _add_rows(acc: Tensor, x: Tensor) -> None:
    """acc[:t] += x (float32 accumulator of row sums), in chunks of acc's rows."""
    step = acc.shape[0]
    for r0 in range(0, x.shape[0], step):
        part = x[r0:r0 + step]
        acc[:part.shape[0]] += part


def stream_blocks(blocks: Sequence[nn.Module], plans: Sequence[SagePlan], eps_static: Sequence[Tensor],
                  h: Tensor, ws: Workspace, tile_rows: Callable[[int, int], int]) -> Tensor:
    """(B, H) float32: Σ over the last block's dynamic input rows of ε and output rows of
    GELU(concat(η, A_cross(η))), given h (D_0, B, H): the first block's dynamic input rows.

    blocks[k] (a TGraph block: se, cross) runs SAGE plan plans[k]; eps_static[k] (D'_k, H) are
    its input states on its output rows under the reference configuration."""
    b, hidden = h.shape[1], h.shape[2]
    step = tile_rows(b, hidden)
    acc = ws.get("acc", (min(step, max(p.idx_out.numel() for p in plans)), b, hidden), h, torch.float32).zero_()
    if len(plans) == 1:
        _add_rows(acc, h)  # the last block's input ε rows = f_in rows
    x, y = h, project(plans[0], h, ws.get("y0", (2 * h.shape[0], b, plans[0].w_l.shape[0]), h))
    for k, (blk, plan) in enumerate(zip(blocks, plans)):
        last, d_out, f_out = k + 1 == len(plans), plan.idx_out.numel(), plan.w_l.shape[0]
        if not last:
            nxt = plans[k + 1]
            y_next = ws.get(f"y{k + 1}", (2 * d_out, b, nxt.w_l.shape[0]), h)
            keep = ws.get(f"h{k % 2}", (d_out, b, hidden), h) if k + 2 < len(plans) else None
            pos = plan.pos_in.tolist()  # sorted: the rows of x inside each tile are a slice
            tile = ws.get("tile", (min(step, d_out), b, hidden), h) if keep is None else None
        for r0 in range(0, d_out, step):
            r1 = min(r0 + step, d_out)
            eta, cross = attend_in_place(blk, mixed_rows(plan, y, r0, r1))  # (t, B, F_out) each
            if last:
                acc[:r1 - r0, :, :f_out] += eta
                if cross is not None:
                    acc[:r1 - r0, :, f_out:] += cross
                continue
            out = keep[r0:r1] if keep is not None else tile[:r1 - r0]  # (t, B, H) block output
            j0, j1 = bisect.bisect_left(pos, r0), bisect.bisect_left(pos, r1)
            dense = j1 - j0 == r1 - r0  # every row of the tile has a per-configuration ε
            _residual(out, eta, cross, x[j0:j1] if dense else eps_static[k][r0:r1].unsqueeze(1))
            if j1 > j0 and not dense:  # the rows with a per-configuration ε
                loc = plan.pos_in[j0:j1] - r0
                _residual(out.new_empty(j1 - j0, *out.shape[1:]), eta[loc],
                          None if cross is None else cross[loc], x[j0:j1], into=(out, loc))
            torch.matmul(out, nxt.w_l.T, out=y_next[r0:r1])  # next block's products, row by row
            torch.matmul(out, nxt.w_r.T, out=y_next[d_out + r0:d_out + r1])
            if k + 2 == len(plans):
                acc[:r1 - r0] += out  # the last block's input ε rows
        if not last:
            x, y = keep, y_next
    return acc.sum(0)
