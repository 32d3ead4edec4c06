"""`graphcost profile`: where a program's time goes, kernel by kernel (cross-process), beside a tuned configuration.

Thin: calls `graphcost.workload.profile.profile_program`, which checks --json and --plot before the program is
loaded and writes them once it is profiled, and prints the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.guards.bounds import PROCESSES_MAX
from graphcost.commands.common import fail

# the names of `graphcost.workload.profile.profile_program`'s arguments in this command's messages
NAMES = {"json_out": "--json", "plot": "--plot", "best": "--config"}


def profile(
    program: str = typer.Argument(..., metavar="PROGRAM", help="FILE.py:FUNCTION or MODULE:FUNCTION: a function "
                                  "that takes no arguments and returns (fn, example_args); or an XLA module "
                                  "(MODULE.pb, MODULE.hlo, a dump directory) with generated arguments."),
    config: Optional[Path] = typer.Option(None, "--config", help="A tuned configuration (best.json of graphcost "
                                          "tune): profiled beside the default, kernel by kernel."),
    processes: int = typer.Option(3, "--processes", min=1, max=PROCESSES_MAX, help="Fresh processes timing the "
                                  "program (the per-kernel times are their level-median)."),
    top: int = typer.Option(15, "--top", min=1, max=10_000, help="Kernels shown."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write every kernel's time, share, kind and "
                                            "source lines here."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Draw the top kernels' shares here (PNG)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing --json / --plot files."),
) -> None:
    """Per-kernel times of PROGRAM on this machine: each kernel's share of the call (loops resolved: a
    loop's time is what it adds to its body) and its time in the call shown, what it is (fusion kind,
    library call, copy, loop), how many times it runs and the source lines and op names it came from;
    then what the listed kernels add up to. With --config, the tuned configuration beside the default."""
    from graphcost.guards.atomic import OutputExistsError
    from graphcost.workload.profile import profile_program, profile_table
    from graphcost.frontend.programs.user_program import ProgramError

    try:  # --json and --plot are checked by the library before the program is loaded; written after it is timed
        result = profile_program(program, best=config, processes=processes, json_out=json_out, plot=plot, top=top,
                                 overwrite=overwrite, names=NAMES)
    except (ProgramError, ValueError, RuntimeError, OutputExistsError) as exc:
        fail(str(exc))
    for line in profile_table(result, top):
        typer.echo(line)
    for written in (json_out, plot):
        if written is not None:
            typer.echo(f"wrote {written}")


def register(app: typer.Typer) -> None:
    """Add `profile` to `app`."""
    app.command("profile")(profile)
