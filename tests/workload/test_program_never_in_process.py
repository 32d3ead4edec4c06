"""`graphcost rank PROGRAM` and `graphcost profile PROGRAM` never load, trace or compile the user's program in
their own process: every `make()` runs in a child, and a program that dies in the costing or describing child
(after its check passed) is one line naming the program and that process, not the end of the command."""

import os
import textwrap

import pytest

pytest.importorskip("jax")

from typer.testing import CliRunner  # noqa: E402

from graphcost.cli import app  # noqa: E402

PIDS = """
import os
import jax.numpy as jnp

def make():
    with open({log!r}, "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
    a = jnp.ones((8, 8))
    return (lambda a: jnp.tanh(a @ a).sum()), (a,)
"""

# make() is fine the first time (the check) and aborts the second (the costing or describing process)
SECOND_MAKE_ABORTS = """
import os
import jax.numpy as jnp

def make():
    if os.path.exists({marker!r}):
        os.abort()
    open({marker!r}, "w").close()
    a = jnp.ones((8, 8))
    return (lambda a: (a @ a).sum()), (a,)
"""


@pytest.mark.parametrize("command", [["rank", "--configs", "3"], ["profile", "--processes", "1"]])
def test_make_runs_only_in_child_processes(command, tmp_path):
    log = tmp_path / "pids.txt"
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(PIDS.format(log=str(log))))
    res = CliRunner().invoke(app, [command[0], f"{prog}:make", *command[1:]])
    assert res.exit_code == 0, res.output
    pids = [int(p) for p in log.read_text().split()]
    assert len(pids) >= 2 and os.getpid() not in pids  # the check, then the costing / describing process
    assert len(set(pids)) == len(pids)  # and each of those processes makes the program once


@pytest.mark.parametrize("command,what", [(["rank", "--configs", "2"], "costing process"),
                                          (["profile", "--processes", "1"], "describing process")])
def test_a_program_that_aborts_after_its_check_is_one_line(command, what, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(SECOND_MAKE_ABORTS.format(marker=str(tmp_path / "made"))))
    res = CliRunner().invoke(app, [command[0], f"{prog}:make", *command[1:]])
    assert res.exit_code == 1, res.output
    error = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert error == [f"error: {prog}:make: {what}: the program aborted (signal 6, SIGABRT: os.abort() or a failed "
                     "check)"], res.output
    assert "Traceback" not in res.output


def test_from_python_the_failure_is_a_graphcost_error(tmp_path):
    from graphcost.errors import GraphcostError
    from graphcost.workload.rank import rank_program

    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(SECOND_MAKE_ABORTS.format(marker=str(tmp_path / "made"))))
    with pytest.raises(GraphcostError, match=r"costing process: the program aborted \(signal 6"):
        rank_program(f"{prog}:make", configs=2)
