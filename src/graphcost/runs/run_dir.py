"""Where `graphcost train` writes a run, and whether a run can be resumed.

The policy: `--out DIR` when given (emptied first with --overwrite); with --resume and no --out,
the run `runs/latest` points to; otherwise a fresh `runs/<model>-<time>-<random>`, created at once
so two runs never share it, and `runs/latest` re-pointed to it atomically. Under torchrun every rank
uses rank 0's name. A directory that cannot hold a run raises `RunDirError` (a ValueError), or the
`graphcost.guards.atomic` errors for an existing or unwritable --out; the messages are one line each.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING

from graphcost.guards.atomic import check_run_dir_path, clear_dir
from graphcost.errors import GraphcostError

if TYPE_CHECKING:
    from graphcost.runs.distributed import DistContext

LATEST = Path("runs/latest")

# --out of train, refused before any work (the wording train has always used)
OUT_IS_A_FILE = "{path}: {option} must be a run directory, but this path is a file"
OUT_BELOW_A_FILE = "{path}: {option} cannot be created, {blocker} is a file, not a directory"


class RunDirError(GraphcostError, ValueError):
    """No usable run directory: nothing to resume, or no runs/latest to resume."""


def has_progress(run_dir: str | Path) -> bool:
    """Whether `run_dir` holds something `--resume` can continue: its own checkpoint.pt, or a member's
    checkpoint.pt or done.json (a cross-validation fold, a seed ensemble's member)."""
    run_dir = Path(run_dir)
    members = (f"{member}_*/{name}" for member in ("fold", "seed") for name in ("checkpoint.pt", "done.json"))
    return (run_dir / "checkpoint.pt").is_file() or any(any(run_dir.glob(pattern)) for pattern in members)


def check_resumable(run_dir: Path | None) -> None:
    """--resume needs something to continue: RunDirError for a missing run directory or one without
    a checkpoint. None (no --out and no runs/latest) passes: `choose_run_dir` refuses it."""
    if run_dir is not None and not run_dir.is_dir():
        raise RunDirError(f"--resume: {run_dir} does not exist (nothing to resume); run without --resume to start "
                          "afresh")
    if run_dir is not None and not has_progress(run_dir):
        raise RunDirError(f"--resume: {run_dir} holds no checkpoint.pt (nothing to resume); run without --resume to "
                          "start afresh (with --overwrite to replace that directory)")


def check_out(out: Path, overwrite: bool = False, resume: bool = False, option: str = "--out") -> Path:
    """--out of train (`option`: ``out`` for `graphcost.fit`) must be (or become) a directory: OutputPathError for
    a file or a path below a file; OutputExistsError for an earlier run's directory unless --overwrite (replace
    it) or --resume (continue it)."""
    return check_run_dir_path(out, option, overwrite, resume, is_file=OUT_IS_A_FILE, blocked=OUT_BELOW_A_FILE)


def new_run_name(model: str, root: Path = LATEST.parent) -> str:
    """A fresh `root/<model>-<time>-<random>` directory, created here so two runs never share one; its name."""
    while True:
        name = f"{model}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        try:
            (root / name).mkdir(parents=True)
            return name
        except FileExistsError:  # the same second and the same 24 random bits: draw again
            continue


def choose_run_dir(out: Path | None, model: str, resume: bool, ctx: DistContext, overwrite: bool = False,
                   keep: tuple = ()) -> Path:
    """The run directory (module docstring): --out (checked again, and emptied first with --overwrite
    but for `keep`, e.g. a --cache-dir inside it, just filled), or runs/latest when resuming, or a
    fresh runs/<model>-<time>-<random> that runs/latest points to. `ctx`: where this process sits in a
    data-parallel job (rank 0 decides; the others follow)."""
    if out is not None:
        check_out(out, overwrite, resume)
        if overwrite and ctx.is_main:
            clear_dir(out, keep=keep)
        ctx.barrier()
        return out
    if resume:
        if not LATEST.exists():
            raise RunDirError(f"--resume without --out resumes {LATEST}, which does not exist; pass --out RUN_DIR")
        return LATEST.resolve()
    name: list[str | None] = [new_run_name(model) if ctx.is_main else None]
    if ctx.enabled:  # every rank must use rank 0's name
        import torch.distributed as dist

        dist.broadcast_object_list(name, src=0)
    run = LATEST.parent / str(name[0])
    if ctx.is_main:
        tmp = LATEST.parent / f".latest-{os.getpid()}"
        if tmp.is_symlink():
            tmp.unlink()
        tmp.symlink_to(run.name)
        os.replace(tmp, LATEST)  # atomic re-point of runs/latest
    return run
