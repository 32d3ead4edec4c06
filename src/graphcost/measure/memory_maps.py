"""How many compiled executables one process can hold: each XLA:CPU executable loaded into a
process costs about `MAPS_PER_EXECUTABLE` memory mappings (JIT code and data sections), and Linux
refuses more than ``vm.max_map_count`` (65,530 by default) per process. A measuring process of
`graphcost collect` holds all K configurations of a graph at once (they are timed interleaved),
so a large K fails with "LLVM compilation error: Cannot allocate memory" and a crash; measured on
the 2-core VM: a graph of 1,200 configurations crashed at the 679th (≈ 96 maps each)."""

from __future__ import annotations

from pathlib import Path

MAPS_PER_EXECUTABLE = 100
MAP_COUNT_FILE = Path("/proc/sys/vm/max_map_count")


def max_map_count() -> int | None:
    """vm.max_map_count of this machine, or None where there is none (not Linux)."""
    try:
        return int(MAP_COUNT_FILE.read_text().strip())
    except (OSError, ValueError):
        return None


def check_executables_fit(num_configs: int, option: str = "--configs") -> None:
    """ValueError (one line, naming the option and the fix) when `num_configs` executables in one
    process would exceed vm.max_map_count (with room for the process's own mappings)."""
    limit = max_map_count()
    need = num_configs * MAPS_PER_EXECUTABLE + 5000
    if limit is not None and need > limit:
        raise ValueError(
            f"{option} {num_configs}: one measuring process holds every configuration of a graph, about "
            f"{need:,} memory maps, and vm.max_map_count is {limit:,}; raise it (sudo sysctl -w "
            f"vm.max_map_count={max(262144, 2 * need)}) or use at most {(limit - 5000) // MAPS_PER_EXECUTABLE} "
            "configurations")
