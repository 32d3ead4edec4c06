"""Data-parallel training with torch.distributed (DDP): gloo on CPU, nccl on GPU.

Launch with ``torchrun --nproc_per_node 2 -m graphcost train ...``. torchrun sets RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; `init_from_env` reads them. Every epoch,
the trainer draws ONE global graph order from (seed, epoch), pads it to a multiple of the world
size by wrapping around, and rank r takes positions r, r + W, r + 2W, ... (`shard`), so the ranks
see disjoint graphs and all take the same number of steps (gradients are all-reduced at every
step, so step counts must match).

Synchronisation is the data-parallel rule of DistributedDataParallel, done explicitly: rank 0's
parameters and buffers are broadcast once (`broadcast_model`), and after every backward the
gradients are averaged over ranks with ONE all-reduce of a flattened buffer (`average_gradients`;
a parameter without a gradient on some rank, e.g. an unused branch, contributes zeros). Clipping
and the optimiser step then see identical gradients, so parameters stay identical on every rank.
We do not wrap the model in `nn.parallel.DistributedDataParallel`: its constructor imports
torch._dynamo (seconds of start-up per process) and needs `find_unused_parameters` for models
whose branches depend on the graph; for one-graph-per-step training its bucketed overlap of
communication with backward buys nothing measurable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from torch import nn


def check_device(device: str) -> str:
    """Validate a --device value up front: auto, cpu, cuda or cuda:N (CUDA must be usable).

    Returns the value unchanged; raises ValueError with a one-line message otherwise.
    """
    import re

    device = str(device).strip()
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise ValueError(f"--device {device!r}: expected auto, cpu, cuda or cuda:N")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(
                f"--device {device}: CUDA is not available (this torch has no CUDA support or no GPU is visible); "
                "use --device cpu"
            )
        if ":" in device and int(device.split(":")[1]) >= torch.cuda.device_count():
            raise ValueError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    return device


def resolve_device(device: str = "auto") -> torch.device:
    """A checked --device value as a torch.device: 'auto' is CUDA when available, else CPU."""
    device = check_device(device)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


@dataclass
class DistContext:
    """Where this process sits in a (possibly single-process) data-parallel job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None  # None: not distributed

    @property
    def enabled(self) -> bool:
        return self.world_size > 1 and dist.is_available() and dist.is_initialized()

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def device(self, requested: str = "auto") -> torch.device:
        """The device this rank trains on (`cuda:<local_rank>` when CUDA is used without an index)."""
        device = resolve_device(requested)
        if device.type == "cuda" and device.index is None:
            return torch.device("cuda", self.local_rank if self.enabled else torch.cuda.current_device())
        return device

    def shard(self, order: np.ndarray) -> np.ndarray:
        """This rank's disjoint slice of a global order (padded by wrap-around to equal length)."""
        order = np.asarray(order)
        if self.world_size <= 1 or len(order) == 0:
            return order
        per_rank = -(-len(order) // self.world_size)
        padded = np.resize(order, per_rank * self.world_size)  # wraps around
        return padded[self.rank :: self.world_size]

    def steps_per_epoch(self, num_items: int) -> int:
        return -(-num_items // max(1, self.world_size)) if num_items else 0

    def broadcast_model(self, model: nn.Module) -> None:
        """Copy rank 0's parameters and buffers to every rank (identical starting point)."""
        if not self.enabled:
            return
        with torch.no_grad():
            for tensor in list(model.parameters()) + list(model.buffers()):
                dist.broadcast(tensor.data, src=0)

    def average_gradients(self, model: nn.Module) -> None:
        """Average gradients over ranks with one all-reduce of a flattened buffer."""
        if not self.enabled:
            return
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            return
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat /= self.world_size
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset : offset + n].view_as(p).clone()
            offset += n

    def all_reduce_mean(self, value: float) -> float:
        """Mean of a scalar over all ranks (identity when not distributed)."""
        if not self.enabled:
            return float(value)
        tensor = torch.tensor([float(value)], dtype=torch.float64)
        if self.backend == "nccl":
            tensor = tensor.to(torch.device("cuda", self.local_rank))
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return float(tensor.item()) / self.world_size

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()


def init_from_env(device: str = "auto") -> DistContext:
    """Initialise the process group when launched by torchrun (WORLD_SIZE > 1), else single process."""
    check_device(device)
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistContext()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
    backend = "nccl" if use_cuda else "gloo"
    if use_cuda:
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=rank, world_size=world_size)
    return DistContext(rank=rank, world_size=world_size, local_rank=local_rank, backend=backend)


def shutdown(ctx: DistContext) -> None:
    """Destroy the process group if this context created one."""
    if ctx.enabled:
        dist.destroy_process_group()


