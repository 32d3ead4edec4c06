"""The output directory of a tuning run, checked before the program is loaded (these checks lived in
`graphcost tune`).

`tuning_run_dir(out, program, overwrite=..., resume=...)` refuses, in one line naming the argument (``out``,
``resume``, ``overwrite`` for the Python API; the command maps them to ``--out``, ``--resume``, ``--overwrite``
through `names`):

* a directory of other files than a tuning run's (the program's own source directory, say), an
  OutputExistsError naming what it holds;
* `resume` without the study it continues (``OUT/study.db``, unless `storage` holds it), a FileNotFoundError;
* `overwrite` of a directory that holds the program file, an OutputPathError;
* everything `graphcost.runs.lifecycle.RunDirectory` refuses: a file or a path below one, a device, a virtual
  or read-only file system, an earlier tuning run without `overwrite` or `resume`.

It returns that `RunDirectory`: ``with tuning_run_dir(...):`` takes the lock and empties the directory on
`overwrite`; `graphcost.tuning.tune` with the same `out` nests in it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from graphcost.guards.atomic import LOCK_NAME, TUNE_MARKERS, OutputExistsError, OutputPathError
from graphcost.runs.lifecycle import RunDirectory

OUT_IS_A_FILE = "{path}: {option} must be a directory, but this path is a file"
OUT_BELOW_A_FILE = "{path}: {option} cannot be created, {blocker} is a file"


def tuning_run_dir(out: str | os.PathLike, program: str | None = None, *, overwrite: bool = False,
                   resume: bool = False, storage: str | None = None,
                   names: Mapping[str, str] | None = None) -> RunDirectory:
    """The checked `RunDirectory` of a tuning run of `program` (a ``FILE.py:FUNCTION`` / HLO reference, or None)
    in `out` (module docstring)."""
    from graphcost.frontend.programs.user_program import program_file

    def name(key: str) -> str:
        return (names or {}).get(key, key)

    out = Path(out)
    try:
        entries = sorted(p.name for p in out.iterdir() if p.name != LOCK_NAME) if out.is_dir() else []
    except OSError:  # unreadable: the output checks that follow say so
        entries = []
    is_run = any((out / marker).exists() for marker in TUNE_MARKERS)
    source = program_file(program) if program is not None else None
    if entries and not is_run:
        if source is not None and source.resolve().parent == out.resolve():
            what = f"the program's source {source.name}"
        else:
            shown = [e for e in entries if e.endswith(".py")][:1] or entries[:1]
            what = f"{len(entries)} other file(s), such as {shown[0]}"
        raise OutputExistsError(f"{name('out')} {out}: not a run directory (none of {', '.join(TUNE_MARKERS)}: no "
                                f"tuning run) but holds {what}; give a new or empty directory")
    db = out / "study.db"
    if resume and storage is None and not db.exists():
        if is_run:
            raise FileNotFoundError(f"{name('resume')}: {db} is missing (deleted?), so the tuning run in {out} cannot "
                                    f"be continued; pass {name('overwrite')} instead to start a new study there")
        raise FileNotFoundError(f"{name('resume')}: {db} does not exist, so there is no study to continue; drop "
                                f"{name('resume')} to start a new one")
    run_dir = RunDirectory(out, name("out"), overwrite=overwrite, resume=resume, markers=TUNE_MARKERS,
                           holds="a tuning run", is_file=OUT_IS_A_FILE, blocked=OUT_BELOW_A_FILE)
    if overwrite and source is not None and source.is_relative_to(out.resolve()):
        raise OutputPathError(f"{program}: the program file lies inside {name('out')} {out}, which "
                              f"{name('overwrite')} would delete; move it out first", out)
    return run_dir
