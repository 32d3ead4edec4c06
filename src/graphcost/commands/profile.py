"""`graphcost profile`: where a program's time goes, kernel by kernel (cross-process), beside a tuned configuration.

Thin: calls `graphcost.tuning.profile.profile_program`, which checks --json and --plot before the program is
loaded and writes them once it is profiled, and prints the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.bounds import PROCESSES_MAX
from graphcost.commands.common import fail

# the names of `graphcost.tuning.profile.profile_program`'s arguments in this command's messages
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
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write every kernel's time, share and kind here."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Draw the top kernels' shares here (PNG)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing --json / --plot files."),
) -> None:
    """Per-kernel times of PROGRAM on this machine: each kernel's self time per call (loops resolved: a
    loop's time is what it adds to its body), its share of the call, what it is (fusion kind, library
    call, copy, loop) and how many times it runs; coverage = the share of the call inside kernels.
    With --config, the tuned configuration beside the default."""
    from graphcost.atomic import OutputExistsError
    from graphcost.tuning.kernel_times import compare
    from graphcost.tuning.profile import profile_program
    from graphcost.tuning.program import ProgramError

    try:  # --json and --plot are checked by the library before the program is loaded; written after it is timed
        result = profile_program(program, best=config, processes=processes, json_out=json_out, plot=plot, top=top,
                                 overwrite=overwrite, names=NAMES)
    except (ProgramError, ValueError, RuntimeError, OutputExistsError) as exc:
        fail(str(exc))
    base = result.configs[0]
    typer.echo(f"{program}: {base.runtime_ns / 1e3:.1f} µs per call (default, median of {processes} processes); "
               f"{len(base.kernels)} kernels cover {base.coverage:.0%} of a profiled call")
    if len(result.configs) == 1:
        typer.echo(f"{'kernel':40s} {'kind':22s} {'share':>6s} {'µs/call':>9s} {'runs':>5s}")
        for k in base.kernels[:top]:
            typer.echo(f"{k.name[:40]:40s} {k.kind[:22]:22s} {base.share(k):6.1%} {k.self_ns / 1e3:9.1f} "
                       f"{k.executions:5d}")
    else:
        tuned = result.configs[1]
        typer.echo(f"tuned: {tuned.runtime_ns / 1e3:.1f} µs per call ({base.runtime_ns / tuned.runtime_ns:.3f}x); "
                   f"{len(tuned.kernels)} kernels cover {tuned.coverage:.0%}")
        typer.echo(f"{'kernel (default)':36s} {'kind':18s} {'default µs':>10s} {'tuned µs':>9s} {'tuned kernel':28s}")
        for d, t in compare(base, tuned)[:top]:
            kind = (d.kind if d is not None else t.kind if t is not None else "?")
            typer.echo(f"{(d.name if d else '-')[:36]:36s} {kind[:18]:18s} "
                       f"{(f'{d.self_ns / 1e3:10.1f}' if d else '         -')} "
                       f"{(f'{t.self_ns / 1e3:9.1f}' if t else '        -')} {(t.name if t else '-')[:28]}")
    for written in (json_out, plot):
        if written is not None:
            typer.echo(f"wrote {written}")


def register(app: typer.Typer) -> None:
    """Add `profile` to `app`."""
    app.command("profile")(profile)
