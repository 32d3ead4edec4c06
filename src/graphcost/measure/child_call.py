"""One function of graphcost run on a user's program in a fresh process, under a deadline.

A program given by reference is someone else's code, and compiling it is XLA's: either may hang,
abort or crash the interpreter. `graphcost rank` and `graphcost profile` therefore never load, trace
or compile such a program in their own process. After `graphcost.measure.program_check` has checked
it, the work that needs it (costing its configurations, describing their kernels) runs here:

    result = run_in_child("graphcost.workload.rank:cost_job", {"program": ref, ...}, timeout_s, label=ref,
                          what="costing process", deadline_note="scaled from the check's compile")

The child (``python -m graphcost.measure.child_call JOB.json OUT.json``, an internal protocol) imports
the job's function, which must live in graphcost, calls it with the job and writes what it returns
(JSON) to OUT.json atomically. Any failure is one line (`graphcost.measure.cross_process.
run_checked`): the function's own error, a signal that ended the process, XLA's RESOURCE_EXHAUSTED
naming the buffer, or the deadline and how it was chosen.
"""

from __future__ import annotations

import importlib
import json
import sys
import tempfile
from pathlib import Path

from graphcost.guards.atomic import atomic_write_json


def run_in_child(function: str, job: dict, timeout_s: float, label: str, what: str = "child process",
                 deadline_note: str = "") -> dict:
    """``function(job)`` (``"graphcost.module:name"``) in a fresh process killed after `timeout_s` seconds; its
    JSON result. `graphcost.measure.cross_process.ProcessFailed` (a RuntimeError) in one line naming `label` and
    `what` when it fails (module docstring)."""
    from graphcost.measure.cross_process import run_checked

    if not function.startswith("graphcost.") or ":" not in function:
        raise ValueError(f"run_in_child runs a function of graphcost ('graphcost.module:name'), got {function!r}")
    with tempfile.TemporaryDirectory(prefix="graphcost-child-") as tmp:
        job_path, out = Path(tmp) / "job.json", Path(tmp) / "out.json"
        atomic_write_json({"function": function, "job": job, "label": label}, job_path)
        run_checked([sys.executable, "-m", "graphcost.measure.child_call", str(job_path), str(out)], out, timeout_s,
                    None, label, what, deadline_note)
        with open(out, encoding="utf-8") as fh:
            return json.load(fh)


def main(job_path: str, out: str) -> int:
    """The child: call the job's function, write its result; one ``error:`` line on stderr (exit 3) when it
    raises. Exceptions are caught broadly on purpose: the user's code may raise anything."""
    from graphcost.measure.program_check import no_core_files

    no_core_files()
    with open(job_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    module, _, name = spec["function"].partition(":")
    try:
        result = getattr(importlib.import_module(module), name)(spec["job"])
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - one line for the parent, whatever the program raised
        from graphcost.measure.cross_process import labelled, memory_message

        text = " ".join(str(exc).split()) or type(exc).__name__
        print(f"error: {labelled(memory_message(text) or text, spec.get('label', ''))}", file=sys.stderr)
        return 3
    atomic_write_json(result, Path(out))
    return 0


if __name__ == "__main__":  # JOB.json OUT.json
    sys.exit(main(sys.argv[1], sys.argv[2]))
