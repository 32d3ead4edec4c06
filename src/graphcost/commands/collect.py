"""CLI: graphcost collect (issue: HLO frontend / local collection)."""

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
