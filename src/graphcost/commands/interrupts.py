"""SIGTERM handled like Ctrl-C while a command's work runs.

Python turns SIGINT into `KeyboardInterrupt`, so the library's cleanup (`finally`, `except
BaseException`: a tune releasing its reservations, atomic writes removing their temp files) runs; a
SIGTERM (``kill PID``, a scheduler stopping a job) would end the process at once and skip it.
`terminate_as_interrupt` raises `Terminated` (a KeyboardInterrupt) for SIGTERM instead, and says which
signal came so the command can exit with the conventional status (128 + the signal's number).
"""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would raise KeyboardInterrupt."""


@dataclass
class Interrupt:
    """Which signal interrupted the block: SIGINT unless a SIGTERM came (`terminate_as_interrupt`)."""

    signum: int = signal.SIGINT

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum)


@contextmanager
def terminate_as_interrupt(seen: Interrupt | None = None) -> Iterator[Interrupt]:
    """While the block runs, SIGTERM raises `Terminated` in the main thread (outside it, or off the main
    thread, nothing changes); the previous handler is restored afterwards. `seen` (default a new one) is
    the `Interrupt` it yields, for a caller that enters the block through a library verb."""
    seen = seen if seen is not None else Interrupt()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def on_term(signum, frame):
        seen.signum = signum
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupt_says(message: str) -> Callable[[F], F]:
    """Decorate a command so that a Ctrl-C its own handlers do not catch (while it imports JAX or torch,
    checks its arguments, loads a model) prints `message` on one line and exits 130, instead of
    click's bare "Aborted!"."""

    def wrap(command: F) -> F:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return command(*args, **kwargs)
            except KeyboardInterrupt:
                import typer

                typer.echo(f"\n{message}", err=True)
                raise typer.Exit(130) from None

        return cast(F, run)

    return wrap
