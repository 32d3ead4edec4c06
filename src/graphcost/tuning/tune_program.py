"""`tune_program`: `graphcost tune`'s one library verb, a program reference in and its `TuneResult` out.

Every check runs once, before anything in `out` is touched: the reference and its ``inputs``, the output
directory (`tuning_run_dir`), the settings (one `TuneConfig`), the model runs, JAX, the program itself (in a
child process first: an ``os.abort()`` or an endless loop is reported, not suffered), the storage, and the
search's space, models and scorer (`tuner.plan_search`), which the search then uses as built. Errors are
`graphcost.GraphcostError`s (or the builtin errors of the checks they come from) in one line naming the
argument; `names` maps an argument to the name the caller's user knows (``graphcost tune`` passes
``{"budget": "--budget", ...}``), so the Python API's messages name fields and the command's name options.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from graphcost.guards.bounds import ArgumentError, renamed
from graphcost.errors import GraphcostError
from graphcost.tuning.result import TuneResult


class JaxMissing(GraphcostError, ImportError):
    """JAX is not installed: the message says how to install it."""


class LoadInterrupted(KeyboardInterrupt):
    """Ctrl-C while the program was loaded, prepared and its models fitted, before any measurement."""


def tune_program(ref: str, *, inputs: str | Path | None = None, overwrite: bool = False, resume: bool = False,
                 prepare_timeout: float = 600.0, names: Mapping[str, str] | None = None,
                 say: Callable[[str], None] | None = None,
                 searching: Callable[[], AbstractContextManager] | None = None,
                 **fields: Any) -> tuple[str, TuneResult]:
    """Tune the program `ref` (``FILE.py:FUNCTION``, ``MODULE:FUNCTION`` or an XLA module) with the `TuneConfig`
    `fields` (``space``, ``budget``, ``out``, ...; ``name``: the study, default the function's); (the function's
    name, the result).

    inputs: an XLA module's arguments (an npz). overwrite / resume: replace / continue the tuning run in
    ``out`` (`tuning_run_dir`). prepare_timeout: seconds the program's preparation may take. say: where a
    note on what was picked goes (a dump directory's module). searching: a context entered around the search
    alone (``graphcost tune``: SIGTERM as Ctrl-C). A Ctrl-C while the program loads is `LoadInterrupted`,
    during the search `tuner.TuneInterrupted`."""
    from graphcost.frontend.programs import hlo_program
    from graphcost.tuning.tuner import TuneConfig, plan_search, search
    from graphcost.tuning.tuning_run_dir import tuning_run_dir

    def name(key: str) -> str:
        return (names or {}).get(key, key)

    ref = hlo_program.with_inputs(ref, inputs)
    if say is not None and (note := hlo_program.picked(ref)):
        say(note)
    out = fields.get("out")
    run_dir = tuning_run_dir(out, ref, overwrite=overwrite, resume=resume, storage=fields.get("storage"),
                             names=names) if out is not None else None
    try:
        cfg = TuneConfig(program_ref=ref, **fields)
    except ArgumentError as exc:
        raise ArgumentError(renamed(str(exc), names)) from None
    models = cfg.model if isinstance(cfg.model, (list, tuple)) else [] if cfg.model is None else [cfg.model]
    for run in models:
        if not os.path.exists(run):
            raise ArgumentError(f"{name('model')} {run}: no such run directory or checkpoint")
    if cfg.name is not None and not cfg.name.strip():
        raise ArgumentError(f"{name('name')} must be a non-empty name")
    from graphcost.frontend.programs.jax_program import require_jax

    try:
        require_jax()
    except ImportError as exc:
        raise JaxMissing(str(exc)) from None
    from graphcost.frontend.programs.user_program import load_program, prepare_program
    from graphcost.measure.program_check import check_in_child
    from graphcost.tuning.study import open_storage

    try:
        check_in_child(ref, prepare_timeout)  # os.abort(), an endless loop: reported, not suffered
        fn, args, function = load_program(ref, checked=True)  # (check_in_child read the reference)
        program = prepare_program(fn, args, function, ref)
        if cfg.storage is not None:
            open_storage(cfg.storage)
        plan = plan_search(program, cfg, scorer=True)  # every model run loads and fits the space, once
    except KeyboardInterrupt:
        raise LoadInterrupted() from None
    with searching() if searching is not None else nullcontext():
        return function, search(program, cfg, plan, run_dir)
