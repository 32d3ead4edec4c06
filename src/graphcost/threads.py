"""How many torch intra-op threads to use: the cores that are free (`--threads auto`).

torch uses one intra-op thread per core by default. When other processes already keep those cores
busy, its threads wait on each other at every parallel region and throughput collapses (on a
shared 2-core machine at load 5, the README's main job ran 10x slower than quiet). `auto_threads`
picks instead the cores this process may run on (`os.sched_getaffinity`, bounded by a cgroup CPU
quota) minus the ones other work keeps busy, rounded, at least 1. "Busy" is the larger of two figures,
and the line it prints says which decided: the machine's CPU time over a quarter of a second
(`/proc/stat`), which sees a job that has just started, and the 1-minute load average, which sees work
that comes in bursts (a quarter of a second between two bursts read 0.04 while `uptime` said 2.36). A
job that has just ended still counts in the average for a minute: fewer threads then cost less than
too many.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # cgroup v2: "QUOTA PERIOD" or "max PERIOD"
PROC_STAT = Path("/proc/stat")
WINDOW_S = 0.25  # how long `busy_cores` watches the CPU counters


@dataclass(frozen=True)
class ThreadChoice:
    """The number of threads chosen and what it was chosen from."""

    threads: int
    cores: int  # cores this process may run on
    load: float | None  # cores of the machine busy (`busy_cores`; None where the OS tells nothing)
    machine_cores: int  # cores of the machine (what the load average is spread over)
    source: str = ""  # which figure the load is: "1-minute load average" or "busy over the last 0.25 s"

    def describe(self) -> str:
        """One line for the user: ``threads: 1 (auto: 2 cores, load 1.30 on 2 cores, the 1-minute load average)``."""
        load = ("no load figure" if self.load is None else f"load {self.load:.2f} on {self.machine_cores} cores"
                + (f", {self.source}" if self.source else ""))
        return f"threads: {self.threads} (auto: {self.cores} cores for this process, {load}; --threads N to override)"


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity, bounded by a cgroup v2 CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat's "cpu" line (idle = idle + iowait)."""
    try:
        fields = [int(x) for x in PROC_STAT.read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError, IndexError):
        return None
    if len(fields) < 5:
        return None
    total = sum(fields)
    return total - fields[3] - fields[4], total


def busy_cores(window_s: float = WINDOW_S, machine_cores: int | None = None) -> float | None:
    """Cores of the machine busy over the next `window_s` seconds (/proc/stat; this process sleeps
    meanwhile), None where there is no /proc/stat."""
    import time

    first = _cpu_times()
    if first is not None:
        time.sleep(window_s)
        second = _cpu_times()
        if second is not None and second[1] > first[1]:
            share = (second[0] - first[0]) / (second[1] - first[1])
            return share * (machine_cores or os.cpu_count() or 1)
    return None


def load_average() -> float | None:
    """The 1-minute load average, None where the OS tells none."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def machine_load(window_s: float = WINDOW_S, machine_cores: int | None = None) -> tuple[float | None, str]:
    """(cores busy, which figure): the larger of `busy_cores` and `load_average` (module docstring)."""
    figures = [(v, name) for v, name in ((busy_cores(window_s, machine_cores), f"busy over the last {window_s:g} s"),
                                         (load_average(), "the 1-minute load average")) if v is not None]
    return max(figures) if figures else (None, "")


def auto_threads(cores: int | None = None, load: float | None = None, machine_cores: int | None = None) -> ThreadChoice:
    """The intra-op threads for the cores free now (module docstring); arguments default to this machine's.

    Args:
        cores: cores this process may use (`usable_cores`).
        load: cores of the machine busy (default: `machine_load`, the larger of the busy share over a
            quarter of a second and the 1-minute load average; where the OS tells nothing, idle).
        machine_cores: cores the load is spread over (`os.cpu_count`), at least `cores`.

    Returns:
        ThreadChoice: `threads` = round(cores - load x cores / machine_cores), between 1 and `cores`.
    """
    cores = usable_cores() if cores is None else max(1, int(cores))
    machine = max(cores, int(machine_cores or os.cpu_count() or cores))
    source = "given"
    if load is None:
        load, source = machine_load(machine_cores=machine)
    busy = 0.0 if load is None else max(0.0, float(load)) * cores / machine  # this process's share of the load
    threads = min(cores, max(1, math.floor(cores - busy + 0.5)))
    return ThreadChoice(threads, cores, load, machine, source)
