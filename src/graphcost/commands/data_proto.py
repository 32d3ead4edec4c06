"""CLI: graphcost data from-proto (issue: HLO frontend)."""

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
