"""Data-parallel training with torch.distributed: DistributedDataParallel, gloo on CPU, nccl on GPU.

Launch with ``torchrun --nproc_per_node 2 -m graphcost train ...``. torchrun sets RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; `init_from_env` reads them and opens the
process group with an explicit timeout (`--dist-timeout`, default `DEFAULT_TIMEOUT_S`): a rank
that dies or hangs makes the others fail with an error after that long instead of waiting forever.

Training. Every epoch the trainer draws ONE global graph order from (seed, epoch), pads it to a
multiple of the world size by wrapping around, and rank r takes positions r, r + W, r + 2W, ...
(`shard`), so the ranks see disjoint graphs and all take the same number of steps. The model is
wrapped in `torch.nn.parallel.DistributedDataParallel` (`wrap`): its constructor broadcasts
rank 0's parameters and buffers, and every backward averages the gradients over ranks, so
clipping and the optimiser step see identical gradients and the parameters stay identical on
every rank. `find_unused_parameters=True`, as the old hand-written all-reduce did: some models
leave parameters without a gradient (TGraph on tile graphs: its cross-configuration temperatures),
which DDP without the flag stops on; the price is one autograd-graph traversal per step, and torch
says so once per rank ("find_unused_parameters=True was specified ...") for the models that do not.

Validation. Each rank scores its share of the validation graphs (`shard_items`: r, r + W, ...)
and the per-graph results are gathered on every rank (`all_gather_object`) and put back in the
single-process order, so the selection metric is the one a single process computes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

DEFAULT_TIMEOUT_S = 1800.0  # seconds a collective may wait for the other ranks (torch's gloo default)


def check_device(device: str) -> str:
    """Validate a device value up front: auto, cpu, cuda or cuda:N (CUDA must be usable).

    Returns the value unchanged; raises ValueError with a one-line message starting "device ..."
    otherwise (the commands put "--" before it: their option is --device).
    """
    import re

    device = str(device).strip()
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise ValueError(f"device {device!r}: expected auto, cpu, cuda or cuda:N")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(
                f"device {device}: CUDA is not available (this torch has no CUDA support or no GPU is visible); "
                "use cpu"
            )
        if ":" in device and int(device.split(":")[1]) >= torch.cuda.device_count():
            raise ValueError(f"device {device}: only {torch.cuda.device_count()} CUDA device(s) are visible")
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

    def shard_items(self, count: int) -> list[int]:
        """This rank's positions among `count` items, r, r + W, ... (unpadded: for validation)."""
        return list(range(self.rank, count, max(1, self.world_size)))

    def wrap(self, model: nn.Module) -> nn.Module:
        """`model` in DistributedDataParallel (which broadcasts rank 0's parameters and buffers
        and averages gradients at every backward); `model` itself when not distributed."""
        if not self.enabled:
            return model
        from torch.nn.parallel import DistributedDataParallel

        on_cuda = next(model.parameters()).device.type == "cuda"
        return DistributedDataParallel(
            model, device_ids=[self.local_rank] if on_cuda else None, find_unused_parameters=True
        )

    def all_gather_object(self, obj: Any) -> list:
        """Every rank's `obj` (picklable), in rank order; `[obj]` when not distributed."""
        if not self.enabled:
            return [obj]
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, obj)
        return gathered

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


def env_int(name: str, default: int | None, low: int, high: int | None = None) -> int:
    """The integer environment variable `name` (torchrun sets WORLD_SIZE, RANK and LOCAL_RANK); ValueError
    naming the variable when it is missing (no `default`), not an integer or outside [low, high]."""
    text = os.environ.get(name)
    if text is None:
        if default is None:
            raise ValueError(f"environment variable {name} is not set (WORLD_SIZE > 1 needs RANK: launch with torchrun)")
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {text!r}") from None
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"environment variable {name} must be {bound}, got {value}")
    return value


def init_from_env(device: str = "auto", timeout_s: float = DEFAULT_TIMEOUT_S) -> DistContext:
    """Initialise the process group when launched by torchrun (WORLD_SIZE > 1), else single process.

    `timeout_s`: how long a collective (gradient all-reduce, gather, barrier) waits for the other
    ranks before it fails with an error.
    """
    check_device(device)
    if not (timeout_s > 0 and timeout_s < float("inf")):
        raise ValueError(f"timeout_s {timeout_s}: expected a positive number of seconds")
    world_size = env_int("WORLD_SIZE", 1, 1)
    if world_size <= 1:
        return DistContext()
    rank = env_int("RANK", None, 0, world_size - 1)
    local_rank = env_int("LOCAL_RANK", rank, 0)
    use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
    backend = "nccl" if use_cuda else "gloo"
    if use_cuda:
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group(
            backend=backend, rank=rank, world_size=world_size, timeout=timedelta(seconds=timeout_s)
        )
    return DistContext(rank=rank, world_size=world_size, local_rank=local_rank, backend=backend)


def collective_failure(exc: BaseException) -> str | None:
    """The first line of `exc` when it is a torch.distributed failure (a collective timed out, a
    peer process went away), else None: what `graphcost train` turns into a one-line error."""
    if not isinstance(exc, RuntimeError):
        return None
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    markers = ("timed out", "connection closed", "connection reset", "gloo", "nccl", "broken pipe")
    if isinstance(exc, dist.DistError) or any(m in line.lower() for m in markers):
        return line
    return None


def shutdown(ctx: DistContext) -> None:
    """Destroy the process group if this context created one."""
    if ctx.enabled:
        dist.destroy_process_group()


