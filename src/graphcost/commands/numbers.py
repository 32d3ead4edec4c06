"""Every number the CLI parses is bounded: the rule for all options, and the callbacks
that bound the options which start threads or processes by this machine.

`GuardedGroup` is the group class of the `graphcost` app and its sub-apps. Before a command runs,
every float parameter refuses NaN and infinities, and every integer one a value outside int64, as
a usage error (exit 2) that names the option (checked on the parsed values, so it does not depend
on how a typer version converts them). A fixed ceiling of one
option (`--tta`, `-n`, `--diffusion-steps`, `--processes`, seeds) is declared with the option
(`min=` / `max=`, the numbers of `graphcost.guards.bounds`); one that depends on the machine (threads,
worker processes) is a callback of this module.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import typer
from typer.core import TyperGroup

from graphcost.guards.bounds import INT_MAX, ArgumentError, check_threads_count, check_workers


def _out_of_bounds(value: Any) -> str | None:
    """Why a parsed value cannot be used (a NaN or infinite float, an integer past int64), else None."""
    for item in value if isinstance(value, (list, tuple)) else (value,):
        if isinstance(item, float) and not math.isfinite(item):
            return f"{item} is not a finite number"
        if isinstance(item, int) and not isinstance(item, bool) and not -INT_MAX <= item <= INT_MAX:
            return f"{item} is out of range (at most {INT_MAX} in size)"
    return None


def bound_numbers(command: Any) -> Any:
    """Wrap `command`'s callback (once) so that it refuses, before it runs, a parameter holding a
    non-finite float or an integer outside int64: a usage error (exit 2) naming the option."""
    callback = command.callback
    if callback is None or getattr(callback, "_graphcost_bounded", False):
        return command
    names = {p.name: (getattr(p, "opts", None) or [p.name])[0] for p in command.params}

    @functools.wraps(callback)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        for name, value in kwargs.items():
            why = _out_of_bounds(value)
            if why is not None:
                raise typer.BadParameter(why, param_hint=f"'{names.get(name, name)}'")
        return callback(*args, **kwargs)

    bounded._graphcost_bounded = True  # type: ignore[attr-defined]
    command.callback = bounded
    return command


class GuardedGroup(TyperGroup):
    """The app's group: each subcommand gets `bound_numbers` before it parses its arguments."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and not hasattr(command, "commands"):  # a command, not a group
            bound_numbers(command)
        return name, command, rest


def _bad(exc: ArgumentError) -> typer.BadParameter:
    """The bounds' message without the option name (click prints it)."""
    return typer.BadParameter(str(exc).split(" ", 1)[1] if " " in str(exc) else str(exc))


def threads_bound(value: int) -> int:
    """Callback of a thread-count option: at most `graphcost.guards.bounds.max_threads()`."""
    try:
        return check_threads_count("threads", value)
    except ArgumentError as exc:
        raise _bad(exc) from None


def workers_bound(value: int) -> int:
    """Callback of a worker-process-count option: at most the usable cores."""
    try:
        return check_workers("workers", value)
    except ArgumentError as exc:
        raise _bad(exc) from None
