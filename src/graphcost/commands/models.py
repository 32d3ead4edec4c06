"""CLI: graphcost train / evaluate / rank / predict (issue: cost models)."""

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
