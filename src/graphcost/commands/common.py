"""What the command modules share: the one-line error (`fail`), --device and --threads, and the run helpers
of train / evaluate / rank / predict. The output, lock and bound checks live in the library verbs the
commands call; a command maps their typed errors to `fail`.

Errors are one red line on stderr, ``error: <message>``, and exit code 1 (2 for a missing
optional dependency). The checks run before any work, so a wrong option never costs a minute of
preparation first. Torch is imported inside the functions that need it: `graphcost --help` stays fast.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn, Optional

import typer

from graphcost.commands.choices import value

DEVICE_HELP = "auto (CUDA when present) | cpu | cuda | cuda:N"
THREADS_HELP = ("torch CPU threads: auto = the cores free now (the cores this process may use minus those "
                "busy over the last quarter second; the choice is printed), N, or 0 = torch's default (one per core)")
COLLECTION_HELP = "tile:xla | layout:xla:default | layout:xla:random | layout:nlp:default | layout:nlp:random"
COLLECTION_OPTION = "TpuGraphs collection (default: the one --data-dir holds)"  # the choices are listed by --help
PRECISION_HELP = ("bf16 runs TGraph's per-configuration work in bfloat16 (CPU inference, rankings close "
                  "to fp32), fast only on CPUs with AVX512-BF16 or AMX; auto = bf16 there, fp32 elsewhere")  # fmt: skip


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` in red on stderr and end the command with exit code `code`."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=code)


def option_message(exc: Exception) -> str:
    """A library check's message ("lr_decay must be ...", naming the field) as the option's ("--lr-decay must be ...")."""
    field, _, rest = str(exc).partition(" ")
    return f"--{field.replace('_', '-')} {rest}"


def check_device_option(device: str, resolve: bool = False) -> Any:
    """--device checked before any work: the value (auto, cpu, cuda or cuda:N), or with `resolve` the
    torch.device it means; a one-line error when it is malformed or CUDA is not usable."""
    from graphcost.runs.distributed import check_device, resolve_device

    try:
        return resolve_device(device) if resolve else check_device(device)
    except ValueError as exc:  # "device X: ..." from the library; the option is --device
        fail(f"--{exc}")


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
    from graphcost.commands.numbers import threads_bound

    return str(threads_bound(n))  # at most a few per usable core (libgomp crashed at 100,000)


def threads_option() -> Any:
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


# --- train / evaluate / rank / predict ---------------------------------------------------------


def run_info_of(path: Path) -> dict:
    """The checked run.json behind a run directory or checkpoint ({} when there is none); a broken one
    is a one-line error."""
    from graphcost.inference.run_info import read_run_info
    from graphcost.runs.run_json import RunInfoError

    try:
        return read_run_info(path)
    except RunInfoError as exc:
        fail(str(exc))


def check_collection(collection: Optional[str]) -> Optional[str]:
    """--collection (or the run's): one of the TpuGraphs collections, else a one-line error."""
    from graphcost.metrics import COLLECTIONS

    if collection is not None and collection not in COLLECTIONS:
        fail(f"unknown collection {collection!r}; expected one of {COLLECTION_HELP}")
    return collection


def open_predictor(models: list[Path], tta: int, batch: int, device: str, precision: str = "auto",
                   threads: str | int = 0):
    """`graphcost.inference.ensemble.load_predictor`: its errors one line, its warning printed; then
    --threads is set (after the checks) and the run's blend said."""
    from graphcost.runs.checkpoint import CheckpointError
    from graphcost.inference.ensemble import load_predictor as load

    def warn(message: str) -> None:
        typer.secho(f"warning: {message}", fg=typer.colors.YELLOW, err=True)

    try:
        predictor = load(models, tta, batch, device, value(precision), warn=warn)
    except (FileNotFoundError, CheckpointError, ValueError, KeyError) as exc:
        fail(str(exc))
    set_threads(threads)  # after the checks: an error stays one line
    if predictor.blend is not None:
        from graphcost.inference.blend import describe

        typer.echo(f"scoring with the run's {describe(predictor.blend[0])}", err=True)
    return predictor
