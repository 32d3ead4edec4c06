"""`graphcost verify RUN`: reproduce a tuning run's kept speedup as its user would.

Thin: calls `graphcost.workload.verify.verify_run` and prints its figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.guards.bounds import PROCESSES_MAX, REPEATS_MAX
from graphcost.measure.interleaved import CALLS_PER_VISIT_MAX
from graphcost.commands.common import fail


def verify(
    run: Path = typer.Argument(..., metavar="RUN", help="The --out directory of a finished graphcost tune."),
    processes: int = typer.Option(3, "--processes", min=1, max=PROCESSES_MAX, help="Fresh processes, each timing "
                                  "plain jax.jit(fn) against compile_with(fn, RUN/best.json)."),
    rounds: int = typer.Option(9, "--rounds", min=1, max=REPEATS_MAX, help="Interleaved rounds per process."),
    visit_ms: float = typer.Option(100.0, "--visit-ms", min=0.0, max=60_000.0, help="How long the fastest "
                                   "function's visit lasts (back-to-back calls; their mean is the visit's time); "
                                   "every function gets as many calls per visit."),
    calls: int = typer.Option(0, "--calls", min=0, max=CALLS_PER_VISIT_MAX, help="Exactly this many calls per "
                              "visit, as your own timeit(number=CALLS) loop; 0: sized by --visit-ms."),
    program: Optional[str] = typer.Option(None, "--program", help="The program, when RUN/result.json does not "
                                          "name it (FILE.py:FUNCTION, MODULE:FUNCTION or an XLA module)."),
    tolerance: float = typer.Option(0.02, "--tolerance", min=0.0, max=1.0, help="Agreement: the speedup must lie "
                                    "in the run's reported range widened by this share."),
) -> None:
    """Time graphcost.compile_with(fn, RUN/best.json) against plain jax.jit(fn) in fresh processes, as a user
    would (mean wall time of back-to-back calls), and say whether it agrees with the speedup the run kept.
    Beside it, the final check's own executables in the same visits. Writes RUN/verify.json; exits 1 when the
    speedup does not agree with the run's."""
    from graphcost.frontend.programs.jax_program import require_jax
    from graphcost.frontend.programs.user_program import ProgramError
    from graphcost.workload.verify import VerifyProtocol, read_run, verify_run

    try:
        _, ref = read_run(run, program)  # the run's files first: a wrong RUN is refused before JAX is imported
    except ValueError as exc:
        fail(str(exc))
    try:
        require_jax()
    except ImportError as exc:
        fail(str(exc), code=2)
    typer.echo(f"verifying {run}: the program {ref}" + (" (as given by --program)" if program else
               " (the file that was tuned: its SHA-256 matches)") + f", {processes} fresh process(es), {rounds} rounds "
               "each", err=True)
    try:
        report = verify_run(run, processes, VerifyProtocol(rounds=rounds, visit_ms=visit_ms, calls=calls), program,
                            tolerance, progress=lambda p: typer.echo(f"  process {p}/{processes} done", err=True))
    except (ProgramError, ValueError, RuntimeError, OSError) as exc:
        fail(str(exc))
    fig = report["figures"]
    typer.echo(report["message"])
    typer.echo(f"same visits, minimum per call: {fig['user_min']['median']:.3f}x; the final check's executables: "
               f"{fig['executables_mean']['median']:.3f}x (mean) / {fig['executables_min']['median']:.3f}x (minimum)")
    if report["outputs_differ"]:
        typer.echo(f"warning: the tuned outputs differ from plain jax.jit's: {report['outputs_differ']}")
    typer.echo(f"wrote {run / 'verify.json'}")
    if not report["agrees"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `verify` to `app`."""
    app.command("verify")(verify)
