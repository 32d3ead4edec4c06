"""Data-parallel training with torch.distributed (DDP): gloo on CPU, nccl on GPU.

Launch with ``torchrun --nproc_per_node 2 -m graphcost train ...``. torchrun sets RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; `init_from_env` reads them. Every epoch,
the trainer draws ONE global graph order from (seed, epoch), pads it to a multiple of the world
size by wrapping around, and rank r takes positions r, r + W, r + 2W, ... (`shard`), so the ranks
see disjoint graphs and all take the same number of steps (DDP all-reduces gradients at every
backward, so step counts must match). Gradients are averaged by DDP; clipping and the optimiser
step then run on identical gradients, so parameters stay identical on every rank.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from torch import nn


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
        """The device this rank trains on (`cuda:<local_rank>` when CUDA is used)."""
        if requested == "auto":
            requested = "cuda" if torch.cuda.is_available() else "cpu"
        if requested == "cuda":
            return torch.device("cuda", self.local_rank if self.enabled else torch.cuda.current_device())
        return torch.device(requested)

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

    def wrap(self, model: nn.Module, device: torch.device) -> nn.Module:
        """Wrap in DistributedDataParallel when running distributed (inputs are moved by the caller)."""
        if not self.enabled:
            return model
        # find_unused_parameters: a model may skip branches (e.g. no edges in a tiny graph).
        return nn.parallel.DistributedDataParallel(model, device_ids=None, find_unused_parameters=True)

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


def unwrap(model: nn.Module) -> nn.Module:
    """The plain module inside a DDP wrapper (for state_dict / evaluation)."""
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
