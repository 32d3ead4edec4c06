"""Bounds of every number graphcost takes from a user, and the one typed error of a bad argument.
The CLI declares them where it declares its options (`graphcost.commands.common`); the
Python API (`graphcost.tune`, `TuneConfig`, `compile_with`) runs the same checks.

* Counts that start threads or processes are bounded by this machine: threads by
  `THREADS_PER_CORE` times the cores this process may use, worker processes by the cores.
* Counts that multiply work or memory have a fixed ceiling far above any useful value
  (`TTA_MAX`, `SAMPLES_MAX`, `DIFFUSION_STEPS_MAX`, `PROCESSES_MAX`, `GRAPHS_MAX`, `MEASUREMENTS_MAX`,
  `REPEATS_MAX`): a typo must not run for days.
* Sizes whose memory grows with the value (a synthetic graph's nodes and configurations) are checked
  against this machine's memory (`check_fits_memory`), naming the option, before anything is allocated.
* Seconds to wait (timeouts) are at most `SECONDS_MAX`: a child process's timeout is a poll() in
  milliseconds held in a C int, so 2^31 ms (24.8 days) is the most it takes (`OverflowError: timeout is too
  large`; past about 292 years Python's own clocks overflow too), and a wait of more than three weeks is a typo.
* Seeds are integers from 0 to `SEED_MAX`; every other number must be finite and fit int64.

`ArgumentError` subclasses both ValueError and TypeError, so code catching either sees it; its
message always starts with the argument's name. This module imports nothing of graphcost.
"""

from __future__ import annotations

import math
import os
from numbers import Integral, Real
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from graphcost.errors import GraphcostError

THREADS_PER_CORE = 4  # threads beyond this per core only wait on each other (libgomp crashed at 100,000)
SEED_MAX = 2**32 - 1  # numpy's legacy seeding and every worker seed stay in range
INT_MAX = 2**63 - 1  # every other integer option: what numpy and torch can hold
TTA_MAX = 1000  # test-time augmentation permutations (TGraph uses 10); each is a full pass over the graph
SAMPLES_MAX = 1_000_000  # DAGs one `dag sample` / `dag evaluate` generates
DIFFUSION_STEPS_MAX = 10_000  # T_node = T_edge (LayerDAG: 64 / 16); the schedule and the model grow with it
PROCESSES_MAX = 64  # fresh measuring processes per graph or per final check (the label is their median)
# graphs one `data synth` writes or `dag train --num-graphs` generates (TpuGraphs' largest collection has
# ~7,000); the plan of a run (names, manifest) is held in memory: 441,620,726 took 8+ GB before any file
GRAPHS_MAX = 100_000
# configurations one tune strategy measures (--budget) or measures together (--round-size), or one collected
# program has (--configs); each costs a compile and seconds of timing, so 100,000 is days of work
MEASUREMENTS_MAX = 100_000
REPEATS_MAX = 10_000  # timing rounds, calls per round and warm-up calls of one configuration
SECONDS_MAX = 21 * 24 * 3600  # a timeout or wait (--prepare-timeout, --dist-timeout, --max-wait, --timeout)


class ArgumentError(GraphcostError, ValueError, TypeError):
    """An argument of the CLI or the Python API that graphcost cannot use; the message names it."""


def renamed(message: str, names: Mapping[str, str] | None) -> str:
    """`message`, which starts with an argument's name, with that name as `names` gives it (the longest match):
    a verb's `ArgumentError` names its Python argument, a command passes ``{"budget": "--budget", ...}``."""
    for key in sorted(names or {}, key=len, reverse=True):
        if message.startswith(key) and message[len(key):len(key) + 1] in (" ", ":", ""):
            return (names or {})[key] + message[len(key):]
    return message


def usable_cores() -> int:
    """The cores this process may run on (`os.sched_getaffinity`; the machine's count elsewhere)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def max_threads() -> int:
    """The most threads a --threads (or compile-worker) option may ask for on this machine."""
    return THREADS_PER_CORE * usable_cores()


def max_workers() -> int:
    """The most worker processes that run at once (--loader-workers): one per usable core."""
    return usable_cores()


def memory_bytes() -> int | None:
    """The memory this process may use, in bytes: the machine's physical memory, or the process's address-space
    limit (`ulimit -v`, RLIMIT_AS) where that is lower; None where the OS says neither."""
    limits = []
    try:
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    return min(limits, default=None)


def available_memory_bytes() -> int | None:
    """Memory a process can still take without swapping: Linux's MemAvailable (/proc/meminfo), else the
    physical memory (`memory_bytes`), None where neither is known."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return memory_bytes()


def check_fits_memory(name: str, value: Any, need_bytes: float, what: str) -> None:
    """ArgumentError naming `name` when `what` (for `name` = `value`) needs more than this machine's
    memory; `need_bytes` is the caller's estimate (a lower bound is enough: it only refuses the impossible)."""
    total = memory_bytes()
    if total is not None and need_bytes > total:
        raise ArgumentError(f"{name} {value}: {what} needs about {need_bytes / 1e9:.3g} GB of memory, more than the "
                            f"{total / 1e9:.3g} GB this process may use")


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None, why: str = "") -> int:
    """`value` as an int in [lo, hi] (a bool or a float is not an integer); ArgumentError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ArgumentError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    lo = -INT_MAX if lo is None else lo
    hi = INT_MAX if hi is None else hi
    if not lo <= value <= hi:
        span = f">= {lo}" if hi == INT_MAX else f"<= {hi}" if lo == -INT_MAX else f"from {lo} to {hi}"
        raise ArgumentError(f"{name} must be an integer {span}{why}, got {value}")
    return value


def check_path(name: str, value: Any) -> Path:
    """`value` as a `pathlib.Path` when it is a path (a str or an ``os.PathLike``, not empty); ArgumentError
    naming `name` otherwise (None, a number, a list)."""
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise ArgumentError(f"{name} must be a path (a str or a pathlib.Path), got {value!r} ({type(value).__name__})")
    try:
        return Path(value)
    except TypeError:  # an os.PathLike whose __fspath__ returns bytes
        raise ArgumentError(f"{name} must be a path (a str or a pathlib.Path), got {value!r}") from None


def check_seed(name: str, value: Any) -> int:
    """A seed: an integer from 0 to SEED_MAX."""
    return check_int(name, value, 0, SEED_MAX)


def check_real(name: str, value: Any, lo: float | None = None, hi: float | None = None, *,
               lo_open: bool = False) -> float:
    """`value` as a finite float in [lo, hi] ((lo, hi] with `lo_open`); ArgumentError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ArgumentError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value):
        raise ArgumentError(f"{name} must be a finite number, got {value}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ArgumentError(f"{name} must be {'>' if lo_open else '>='} {lo:g}, got {value:g}")
    if hi is not None and value > hi:
        raise ArgumentError(f"{name} must be <= {hi:g}, got {value:g}")
    return value


def check_threads_count(name: str, value: int) -> int:
    """A thread count: 0 (the library's default) up to `max_threads()`."""
    cap = max_threads()
    return check_int(name, value, 0, cap, f" ({THREADS_PER_CORE} per usable core, {usable_cores()} cores)")


def check_workers(name: str, value: int) -> int:
    """A count of worker processes running at once: 0 up to the usable cores."""
    return check_int(name, value, 0, max_workers(), " (the cores this process may use)")
