"""Apply a tuned configuration to a program: `compile_with(fn, best)`.

The returned function compiles ``fn`` for each new argument signature with the tuned XLA
options and layout constraints, then runs the executable; graphcost is needed only to
re-create the layout constraints (flags alone are plain ``jax.jit(fn, compiler_options=...)``,
which `TunedConfig.compiler_options` carries as data).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from graphcost.guards.bounds import ArgumentError
from graphcost.tuning.arguments import check_fn, check_tuned
from graphcost.tuning.result import TunedConfig, check_best, load_best


def _as_config(best) -> TunedConfig:
    if isinstance(best, TunedConfig):
        return best
    if isinstance(best, (str, Path)):
        return load_best(best)
    if isinstance(best, dict):
        return check_best(best, "the tuned configuration", defaults=True)
    raise ArgumentError(f"best must be a TunedConfig, a best.json path or its dict, got {type(best).__name__}")


def layout_codes(space, layouts: list[dict[str, Any]]) -> tuple[int, ...]:
    """The `LayoutSpace` codes of the moved tensors `layouts` (best.json's ``layouts``)."""
    index = {d.name: i for i, d in enumerate(space.dims)}
    codes = [0] * len(space.dims)
    for entry in layouts:
        name = f"site{entry['site']}.{entry['primitive']}.{entry['tensor']}"
        if name not in index:
            raise ValueError(f"the tuned layouts do not fit this program: it has no configurable tensor {name}")
        dim = space.dims[index[name]]
        perm = tuple(int(x) for x in entry["minor_to_major"])
        if perm not in dim.choices:
            raise ValueError(f"the tuned layouts do not fit this program: {perm} is not a layout of {name}")
        codes[index[name]] = dim.choices.index(perm)
    return tuple(codes)


def compile_for(fn: Callable, args: tuple, best) -> Callable:
    """The executable of ``fn`` at example `args` under `best`: it takes the FLATTENED arguments
    and returns ``fn``'s output pytree."""
    import jax

    from graphcost.frontend.programs.jax_program import compile_lowered
    from graphcost.frontend.programs.user_program import TuneProgram
    from graphcost.tuning.space import LayoutSpace

    cfg = _as_config(best)
    program = TuneProgram(fn, args)
    if not cfg.layouts:
        return compile_lowered(program.lower(None), dict(cfg.compiler_options))
    space = LayoutSpace(program)
    exe = compile_lowered(space.lower(program, layout_codes(space, cfg.layouts)), dict(cfg.compiler_options))
    out_tree = jax.tree_util.tree_structure(jax.eval_shape(fn, *args))  # the layout program returns flat outputs

    def run(*flat):
        return jax.tree_util.tree_unflatten(out_tree, exe(*flat))

    run.as_text = exe.as_text
    return run


def check_options(options: dict, where: str | Path) -> None:
    """Compile a trivial program with the XLA `options`, so an option XLA does not know (or a value it
    refuses) is a ValueError naming `where` when the configuration is applied, not at the first call."""
    if not options:
        return
    import jax
    import jax.numpy as jnp

    from graphcost.frontend.programs.jax_program import compile_lowered

    try:
        compile_lowered(jax.jit(lambda x: x + 1).lower(jnp.zeros(1)), dict(options))
    except Exception as exc:  # noqa: BLE001 - XLA's error, in one line
        text = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise ValueError(f"{where}: field 'compiler_options': XLA refuses them ({text})") from None


def compile_with(fn: Callable, best: TunedConfig | str | Path | dict) -> Callable:
    """`fn` compiled with a tuned configuration.

    Args:
        fn: the JAX function that was tuned.
        best: a `TunedConfig` (`TuneResult.best`), the path of a best.json written by `graphcost tune`,
            or its dict.

    Returns:
        A function with `fn`'s signature that runs the tuned executable (compiled once per argument
        shapes and dtypes); its `config` attribute is the `TunedConfig` applied. Without layouts it is
        ``jax.jit(fn, compiler_options=...)`` itself: a call costs what a call of plain ``jax.jit(fn)`` costs
        (a Python wrapper that flattened the arguments on every call made a tuned 2-layer MLP
        time 1.05x where the run measured 1.20x). With layouts it runs the layout program's executable,
        kept per argument signature in its `executables` attribute.

    Raises:
        ValueError: `best` is malformed (naming the file and field), or XLA refuses its options;
            `graphcost.guards.bounds.ArgumentError` (also a TypeError) for an `fn` that is not callable,
            a `best` of another type, an unknown space, codes outside the flag space, unknown flag
            names or compiler_options that contradict the codes.

    Example:
        ```python
        fast = compile_with(fn, result.best)   # or "tuned/best.json"
        out = fast(*args)                      # the same outputs as fn(*args), the tuned executable
        ```
    """
    import jax

    check_fn(fn)
    cfg = _as_config(best)
    where = best if isinstance(best, (str, Path)) else "the tuned configuration"
    check_tuned(cfg, where)  # a known space, codes in range, known flags, options that agree with the codes
    check_options(cfg.compiler_options, where)
    if not cfg.layouts:  # flags only: jax.jit itself, so a call dispatches as fast as plain jax.jit(fn) does
        jitted = jax.jit(fn, compiler_options=dict(cfg.compiler_options) or None)
        jitted.config = cfg  # type: ignore[attr-defined]
        return jitted
    cache: dict = {}

    def run(*args):
        leaves, tree = jax.tree_util.tree_flatten(args)
        key = (tree, tuple((np.shape(x), str(getattr(x, 'dtype', None) or np.result_type(x))) for x in leaves))
        if key not in cache:
            cache[key] = compile_for(fn, args, cfg)
        return cache[key](*leaves)

    run.config = cfg
    run.executables = cache
    return run
