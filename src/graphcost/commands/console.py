"""The CLI's console: the library reports through the `graphcost` logger hierarchy
(`logging.getLogger("graphcost.train.trainer")`, ...) and never prints; a command shows those
INFO lines on stdout, redirected by `tqdm.contrib.logging.logging_redirect_tqdm` so that they
print above a running progress bar, not through it. An application using the library sets up its
own handlers (or none, and the library stays silent) instead."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager


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
