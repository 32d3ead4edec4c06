"""run.json, the description every run directory holds: its name, its error, the checks of its fields,
and where to find it from a run directory, a checkpoint or a fold.

Each kind of run checks its own fields with these: a cost-model run (`graphcost.inference.run_info`,
written by `graphcost train`) and a LayerDAG run (`graphcost.layerdag.dag_run_info`, by `graphcost dag train`).
A hand-edited or damaged run.json gives one error naming the file and the field, never a traceback.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from graphcost.errors import GraphcostError

RUN_INFO = "run.json"


class RunInfoError(GraphcostError, ValueError):
    """A run.json that cannot describe a run; the message names the file and the field."""


def is_int(v: Any) -> bool:
    """An integer, not a bool (JSON's true/false load as bools)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    """A finite int or float, not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_fields(data: dict, fields: dict, path: Path, prefix: str = "", required: bool = True) -> None:
    """RunInfoError naming `path` and the first field of `fields` ({name: (check, what it must be)})
    that `data` lacks (when `required`) or holds a wrong value in."""
    for key, (ok, expected) in fields.items():
        if key not in data:
            if not required:
                continue
            raise RunInfoError(f"{path}: field '{prefix}{key}' is missing")
        if not ok(data[key]):
            got = repr(data[key])
            got = got if len(got) <= 60 else got[:57] + "..."
            raise RunInfoError(f"{path}: field '{prefix}{key}' must be {expected}, got {got}")


def find_run_info_file(path: str | Path) -> Path | None:
    """The run.json of a run directory, of the run owning a checkpoint file, or of a fold's parent
    run (up to three levels up); None when there is none."""
    path = Path(path)
    candidates = [path] if path.is_dir() else []
    candidates += list(path.parents)[:3]
    for directory in candidates:
        info = directory / RUN_INFO
        if info.is_file():
            return info
    return None


def read_run_json(info: Path) -> Any:
    """run.json at `info` parsed; RunInfoError naming the file when it cannot be read or is not JSON."""
    try:
        return json.loads(info.read_text())
    except json.JSONDecodeError as exc:
        raise RunInfoError(f"{info}: invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunInfoError(f"{info}: cannot read ({exc})") from None
    except RecursionError:
        raise RunInfoError(f"{info}: invalid JSON (nested too deeply to be a run description)") from None
