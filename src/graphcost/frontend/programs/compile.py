"""Compiling a program's configurations, and JAX's persistent compilation cache.

`compile_all` compiles one jax `Lowered` per configuration with a pool of threads (step 1 of the
cross-process protocol, and the compile step of every measuring process); `configure_cache` and
`persistent_cache` send a process's compiles through JAX's persistent cache, so the measuring
processes load what the driver compiled. Used by `collect/` (the driver) and `measure/worker.py`
(the measuring processes of collection and of the tuner's final check).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable


def compile_all(lowered: list, compiler_options: list, workers: int, bar=None, name: str = "",
                keep: bool = True, on_compiled: Callable[[int, Any], None] | None = None) -> list:
    """Compile every `Lowered` (protocol step 1) with `workers` threads (XLA compiles release the GIL).
    keep=False drops each executable once compiled (the persistent cache holds it; see `measure/memory_maps.py`);
    `on_compiled(i, executable)` is called first (e.g. to read what the compiler did)."""
    from concurrent.futures import ThreadPoolExecutor

    from graphcost.frontend.programs.jax_program import compile_lowered

    done = [0]

    def one(i):
        exe = compile_lowered(lowered[i], compiler_options[i])
        if on_compiled is not None:
            on_compiled(i, exe)
        done[0] += 1
        exe = exe if keep else None
        if bar is not None:
            bar.set_postfix_str(f"{name}: compiled {done[0]}/{len(lowered)}")
        return exe

    if workers <= 1:
        return [one(i) for i in range(len(lowered))]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, range(len(lowered))))


def configure_cache(cache_dir: str | None) -> None:
    """Send every compile of this process through JAX's persistent cache in `cache_dir` (None: no cache)."""
    import jax

    jax.config.update("jax_compilation_cache_dir", cache_dir or None)
    if cache_dir:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    try:  # JAX opens its cache once per process: make it re-read the directory
        from jax._src import compilation_cache

        compilation_cache.reset_cache()
    except (ImportError, AttributeError):  # another JAX version: the first directory stays in use
        pass


@contextmanager
def persistent_cache(cache_dir: str | Path):
    """`configure_cache` for the duration of a block, then JAX's previous setting again."""
    import jax

    before = jax.config.jax_compilation_cache_dir
    configure_cache(str(cache_dir))
    try:
        yield
    finally:
        configure_cache(before)
