"""THE root of the errors graphcost diagnoses.

Every error class of graphcost subclasses `GraphcostError` AND the builtin it has always been
(`ValueError`, `FileNotFoundError`, `FileExistsError`, `OSError`, `RuntimeError`), so a caller can
catch everything graphcost diagnosed with ``except GraphcostError`` while ``except ValueError`` and
friends keep working. Its message is one line that names the file, the field and what is wrong.
Not under it: the interrupt signals (`KeyboardInterrupt` subclasses), which are not errors.
"""

from __future__ import annotations


class GraphcostError(Exception):
    """An error graphcost diagnosed; ``str(err)`` is the one-line message a user sees."""


__all__ = ["GraphcostError"]
