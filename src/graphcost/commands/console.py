"""The CLI's console: the library reports through the `graphcost` logger hierarchy
(`logging.getLogger("graphcost.train.trainer")`, ...) and never prints; a command shows those
INFO lines on stdout, redirected by `tqdm.contrib.logging.logging_redirect_tqdm` so that they
print above a running progress bar, not through it. An application using the library sets up its
own handlers (or none, and the library stays silent) instead.

Progress bars redraw with a carriage return several times a second: on a terminal that is one
line, but in a redirected log it is thousands of updates that bury the lines that matter (about 1,200
around `train`'s ``run:`` and ``estimate:`` lines). When stderr is not a terminal, the
bars update at most every `REDIRECTED_INTERVAL_S` seconds (a ``TQDM_MININTERVAL`` the user set is
kept)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

REDIRECTED_INTERVAL_S = 30.0  # seconds between progress-bar updates when stderr is not a terminal


@contextmanager
def library_messages() -> Iterator[logging.Logger]:
    """While the block runs, print the `graphcost` loggers' INFO (and higher) messages on stdout,
    through tqdm; afterwards the logger is as it was (a CLI invocation in a test leaves nothing behind)."""
    from tqdm.contrib.logging import logging_redirect_tqdm

    logger = logging.getLogger("graphcost")
    handler = logging.StreamHandler(sys.stdout)  # the stdout of this invocation (CliRunner swaps it)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # the CLI's lines are not repeated by a root handler
    try:
        with logging_redirect_tqdm(loggers=[logger]):
            yield logger
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


@contextmanager
def sparse_progress_when_redirected() -> Iterator[None]:
    """While the block runs, progress bars update every `REDIRECTED_INTERVAL_S` seconds when stderr is not a
    terminal (module docstring): tqdm's default ``mininterval`` is raised for bars that do not set their own
    (tqdm reads ``TQDM_MININTERVAL`` only when it is imported); tqdm is as it was afterwards."""
    interactive = getattr(sys.stderr, "isatty", lambda: False)()
    if interactive or "TQDM_MININTERVAL" in os.environ:
        yield
        return
    import tqdm.std

    original = tqdm.std.tqdm.__init__

    def sparse(self, *args, **kwargs):
        kwargs.setdefault("mininterval", REDIRECTED_INTERVAL_S)
        original(self, *args, **kwargs)

    tqdm.std.tqdm.__init__ = sparse  # type: ignore[method-assign]
    try:
        yield
    finally:
        tqdm.std.tqdm.__init__ = original  # type: ignore[method-assign]
