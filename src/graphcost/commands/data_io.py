"""CLI: graphcost data download / synth / stats (issue: foundation)."""

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
