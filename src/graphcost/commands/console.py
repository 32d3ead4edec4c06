"""The CLI's console: the library reports through the `graphcost` logger hierarchy
(`logging.getLogger("graphcost.train")`, ...); a command shows those INFO lines on stdout,
written through tqdm so that they print above a running progress bar, not through it. An
application using the library sets up its own handlers (or none) instead."""

from __future__ import annotations

import logging


class _TqdmHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        from tqdm.auto import tqdm

        try:
            tqdm.write(self.format(record))
        except Exception:  # noqa: BLE001 - logging must never break the command
            self.handleError(record)


def show_library_messages() -> None:
    """Print the `graphcost` loggers' INFO (and higher) messages, once per process."""
    logger = logging.getLogger("graphcost")
    if any(isinstance(h, _TqdmHandler) for h in logger.handlers):
        return
    handler = _TqdmHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # the CLI's lines are not repeated by a root handler
