"""Thin CLI command modules; each exposes `register(app)` which adds its commands to a typer app."""

from __future__ import annotations

import os

import typer

DEVICE_HELP = "auto (CUDA when present) | cpu | cuda | cuda:N"
THREADS_HELP = ("torch CPU threads: auto = the cores free now (the cores this process may use minus those "
                "busy over the last quarter second; the choice is printed), N, or 0 = torch's default (one per core)")


def check_threads(value: str) -> str:
    """--threads callback: 'auto' or an integer >= 0."""
    if value == "auto":
        return value
    try:
        n = int(value)
    except ValueError:
        raise typer.BadParameter(f"expected auto or a number of threads >= 0, got {value!r}") from None
    if n < 0:
        raise typer.BadParameter(f"expected auto or a number of threads >= 0, got {value!r}")
    return str(n)


def threads_option() -> str:
    """The --threads option of every torch command (default auto)."""
    return typer.Option("auto", "--threads", metavar="auto|N", help=THREADS_HELP, callback=check_threads)


def set_threads(value: str | int) -> None:
    """--threads: torch intra-op threads for this process. auto: `graphcost.threads.auto_threads`
    (unless OMP_NUM_THREADS says otherwise), printed on stderr; 0 keeps torch's default."""
    import torch

    if value == "auto":
        if os.environ.get("OMP_NUM_THREADS", "").strip():
            choice = f"threads: {torch.get_num_threads()} (OMP_NUM_THREADS; --threads N to override)"
        else:
            from graphcost.threads import auto_threads

            picked = auto_threads()
            torch.set_num_threads(picked.threads)
            choice = picked.describe()
        if os.environ.get("RANK", "0") == "0":  # one line under torchrun
            typer.echo(choice, err=True)
    elif int(value) > 0:
        torch.set_num_threads(int(value))
