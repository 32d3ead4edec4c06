"""Every run of a user's program has a deadline, in a child process (`graphcost.measure.program_check`).

`rank`, `rank --measure`, `profile` and `verify` prepare the program (import, make(), trace, compile) and call its
default once in a fresh process, each step under a deadline; a make() that hangs, an os.abort(), a segfault, an
endless `while`, an infeed nothing feeds and XLA's RESOURCE_EXHAUSTED are one `error:` line naming the program and
the step, not a hang or the end of the command. The deadlines are short here through GRAPHCOST_PROGRAM_TIMEOUT_S.
"""

import json
import math

import pytest

pytest.importorskip("jax")  # the programs these tests run are JAX programs

from cli_asserts import invoke, one_line_error  # noqa: E402
from graphcost.measure.program_check import ENV, Deadlines, ProgramCheck, check_program, memory_message  # noqa: E402

HOSTILE = '''
import os
import time

import jax
import jax.numpy as jnp


def ok():
    return (lambda a: jnp.sin(a) * 2), (jnp.ones(3),)


def hangs_in_make():
    time.sleep(10**6)


def aborts_in_make():
    os.abort()


def segfaults_in_make():
    import ctypes

    ctypes.string_at(0)


def loops_in_tracing():
    def fn(a):
        while True:
            pass
    return fn, (jnp.ones(3),)


def aborts_when_called():
    def fn(a):
        return jax.pure_callback(lambda x: os.abort(), jax.ShapeDtypeStruct((3,), jnp.float32), a)
    return fn, (jnp.ones(3),)
'''

ENDLESS_WHILE = """HloModule endless

cond {
  p = (s32[], f32[4]) parameter(0)
  ROOT t = pred[] constant(true)
}

body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[4] get-tuple-element(p), index=1
  one = s32[] constant(1)
  n = s32[] add(i, one)
  y = f32[4] sine(x)
  ROOT r = (s32[], f32[4]) tuple(n, y)
}

ENTRY main {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  ROOT y = f32[4] get-tuple-element(w), index=1
}
"""

WAITS_ON_INFEED = """HloModule waits

ENTRY main {
  x = f32[4] parameter(0)
  tok = token[] after-all()
  feed = (f32[4], token[]) infeed(tok)
  d = f32[4] get-tuple-element(feed), index=0
  ROOT r = f32[4] add(x, d)
}
"""

# 4 * 10^14 bytes: more than any machine has, so XLA refuses the buffer everywhere (no machine tries to fill it)
HUGE_BROADCAST = """HloModule huge

ENTRY main {
  x = f32[] parameter(0)
  b = f32[10000000,10000000] broadcast(x), dimensions={}
  ROOT r = f32[10000000,10000000] sine(b)
}
"""


@pytest.fixture()
def hostile(tmp_path, monkeypatch, request):
    """The hostile programs' file, with short deadlines where a test waits for one to pass (3 s) and room
    elsewhere: on a loaded machine importing and tracing the good part of a program took over 3 s."""
    needles = getattr(request.node, "callspec", None) and request.node.callspec.params.get("needles")
    monkeypatch.setenv(ENV, "3" if needles and any(TIMED_OUT in n for n in needles) else "60")
    path = tmp_path / "hostile.py"
    path.write_text(HOSTILE)
    return path


TIMED_OUT = "timed out after 3 s"
ABORTED = "the program aborted (signal 6, SIGABRT"


@pytest.mark.parametrize("command", ["rank", "profile"])
@pytest.mark.parametrize("function, needles", [
    ("hangs_in_make", ["make()", TIMED_OUT, ENV]),
    ("aborts_in_make", [ABORTED, "in make()"]),
    ("segfaults_in_make", ["the program crashed (signal 11, SIGSEGV)", "in make()"]),
    ("loops_in_tracing", ["tracing the function", TIMED_OUT]),
])
def test_a_program_that_hangs_or_dies_is_one_line(hostile, command, function, needles):
    """Was: rank and profile hung forever on a make() or a trace that never returns, and an os.abort() or a
    segfault in make() ended the command with no message."""
    ref = f"{hostile}:{function}"
    one_line_error(invoke(command, ref, *(["--configs", 2] if command == "rank" else ["--processes", 1])), ref,
                   *needles)


@pytest.mark.parametrize("case, needles", [
    ("aborts_when_called", [ABORTED, "one call of the default configuration"]),
    ("endless_while", ["one call of the default configuration", TIMED_OUT, "endless while loop"]),
    ("waits_on_infeed", ["one call of the default configuration", TIMED_OUT, "infeed"]),
    ("huge_broadcast", ["XLA ran out of memory", "363.8 TiB", "400000000000000 bytes"]),
])
def test_rank_measure_of_a_program_that_never_ends_or_dies_is_one_line(hostile, tmp_path, case, needles):
    """Was: `rank --measure` of a module whose while never ends, or that waits on an infeed, hung; an abort in the
    measured function ended the command; a 40 GB broadcast was a JaxRuntimeError traceback."""
    if case == "aborts_when_called":
        ref = f"{hostile}:{case}"
    else:
        ref = str(tmp_path / f"{case}.hlo")
        (tmp_path / f"{case}.hlo").write_text({"endless_while": ENDLESS_WHILE, "waits_on_infeed": WAITS_ON_INFEED,
                                               "huge_broadcast": HUGE_BROADCAST}[case])
    one_line_error(invoke("rank", ref, "--configs", 2, "--measure"), ref, *needles)


def test_profile_of_an_endless_while_is_one_line(hostile, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "3")
    module = tmp_path / "endless.hlo"
    module.write_text(ENDLESS_WHILE)
    one_line_error(invoke("profile", module, "--processes", 1), module, TIMED_OUT, "endless while loop")


def test_verify_checks_the_program_before_its_processes(hostile, tmp_path):
    """`verify RUN --program REF` runs REF: an abort in make() is one line, before any verifying process."""
    from graphcost.tuning.result import TunedConfig
    from graphcost.tuning.space import make_space

    run = tmp_path / "run"
    run.mkdir()
    space = make_space("flags", None)
    (run / "best.json").write_text(json.dumps(TunedConfig.of(space, tuple([0] * len(space.dims))).to_json()))
    (run / "result.json").write_text(json.dumps({"speedup": 1.1, "speedup_range": [1.0, 1.2]}))
    ref = f"{hostile}:aborts_in_make"
    one_line_error(invoke("verify", run, "--program", ref, "--processes", 1), ref, ABORTED)
    assert not (run / "verify.json").exists()


def test_the_check_measures_what_the_later_deadlines_scale_from(hostile):
    check = check_program(f"{hostile}:ok")
    assert check.compile_s > 0 and check.call_s is not None and check.call_s > 0 and check.estimate_s >= 0
    assert check_program(f"{hostile}:ok", run=False).call_s is None
    seconds, why = check.worker_timeout(compiles=2, calls=100)
    assert 120 <= seconds <= 3600 and "scaled from the check" in why
    slow = ProgramCheck("p", prepare_s=100.0, compile_s=200.0, estimate_s=0.0, call_s=1.0)
    assert slow.worker_timeout(4, 10)[0] == pytest.approx(30 + 3 * (100 + 800 + 10))
    assert slow.worker_timeout(100, 10**6)[0] == 3600  # capped


def test_parallel_compiles_fit_the_free_memory_at_the_check_s_compile_footprint(monkeypatch):
    import graphcost.guards.bounds as bounds

    big = ProgramCheck("p", 1.0, 10.0, 0.0, compile_bytes=3 * 2**30)  # a compile that raised the peak by 3 GiB
    monkeypatch.setattr(bounds, "available_memory_bytes", lambda: 7 * 2**30)
    assert big.parallel_compiles(4) == 2
    monkeypatch.setattr(bounds, "available_memory_bytes", lambda: 2**30)
    assert big.parallel_compiles(4) == 1  # never fewer than one
    monkeypatch.setattr(bounds, "available_memory_bytes", lambda: None)
    assert big.parallel_compiles(4) == 4  # nothing known: as asked
    assert ProgramCheck("p", 1.0, 10.0, 0.0).parallel_compiles(2) == 2


def test_deadlines_from_the_environment(monkeypatch):
    from graphcost.errors import GraphcostError

    monkeypatch.delenv(ENV, raising=False)
    default = Deadlines.from_env()
    assert default.make_s == 30 and default.run_s(0.0) == default.run_floor_s
    assert default.run_s(1e9) == default.run_cap_s
    assert default.run_s(1.0) == 50.0  # RUN_SCALE x the estimate between the floor and the cap
    monkeypatch.setenv(ENV, "7")
    assert Deadlines.from_env().make_s == 7 and Deadlines.from_env().run_s(0.0) == 7
    for bad in ("soon", "-1", "0", "nan", "inf", "1e99"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(GraphcostError, match=ENV):
            Deadlines.from_env()
    total = Deadlines.total(5, "--prepare-timeout")
    assert total.total_s == 5 and total.make_s is None and math.isinf(total.run_s(1.0))


def test_memory_message_names_the_buffer():
    text = "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 40000000000 bytes."
    assert memory_message(text) == ("XLA ran out of memory: a buffer of 37.3 GiB (40000000000 bytes) does not fit "
                                    "(RESOURCE_EXHAUSTED)")
    assert memory_message("RESOURCE_EXHAUSTED: something") == "XLA ran out of memory (RESOURCE_EXHAUSTED)"
    assert memory_message("INVALID_ARGUMENT: 12 bytes") is None


@pytest.mark.parametrize("outcome, needles", [
    ("timeout", ["prog.py:make: measuring process 0 timed out after 75 s", "scaled from the check"]),
    (-6, ["prog.py:make: measuring process 0: the program aborted (signal 6, SIGABRT"]),
    (-11, ["the program crashed (signal 11, SIGSEGV)"]),
    (-9, ["the process was killed (signal 9, SIGKILL: out of memory?)"]),
    ("oom", ["prog.py:make: measuring process 0: XLA ran out of memory: a buffer of 37.3 GiB (40000000000 bytes)"]),
])
def test_a_measuring_process_that_runs_past_its_deadline_or_dies_says_so(tmp_path, monkeypatch, outcome, needles):
    """The processes after the check (rank --measure, profile, the final check) name the program, the deadline
    and how it was chosen, or the signal that ended them (was: "JOB.json: measuring process 0 failed (exit -6)")."""
    import subprocess

    from graphcost.measure import cross_process

    def fake_run_child(cmd, timeout_s, env=None):
        if outcome == "timeout":
            raise subprocess.TimeoutExpired(cmd, timeout_s)
        if outcome == "oom":  # a configuration's buffers past memory: XLA's error, as the worker's traceback ends
            return subprocess.CompletedProcess(cmd, 1, "", "Traceback (most recent call last):\n  ...\n"
                                               "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory "
                                               "allocating 40000000000 bytes.\n")
        return subprocess.CompletedProcess(cmd, outcome, "", "")

    monkeypatch.setattr(cross_process, "run_child", fake_run_child)
    why = ProgramCheck("prog.py:make", 1.0, 2.0, 0.0, 0.001).worker_timeout(2, 100)[1]
    with pytest.raises(RuntimeError) as info:
        cross_process.run_worker(tmp_path / "job.json", 0, tmp_path / "out.npz", None, 75.0, label="prog.py:make",
                                 deadline_note=why)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


def test_collect_of_an_endless_while_is_one_line(tmp_path, monkeypatch):
    """Was: `collect --kernels` of a module whose while never ends waited for its measuring process's 30-minute
    deadline; the module is now called once in a child under the program deadlines before anything is measured."""
    monkeypatch.setenv(ENV, "3")
    module = tmp_path / "endless.hlo"
    module.write_text(ENDLESS_WHILE)
    one_line_error(invoke("collect", "--programs", module, "--space", "flags", "--configs", 2, "--kernels",
                          "--out", tmp_path / "out"), "endless", TIMED_OUT, "endless while loop")
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_the_library_collect_checks_a_module_before_measuring(tmp_path, monkeypatch):
    """Was: only the `collect` command checked a module in a child first; `graphcost.collect.collect` from Python
    measured it directly and hung for its measuring process's deadline. A module already collected is not
    called again on a resume."""
    from graphcost.collect.jobs import CollectOptions, select_programs
    from graphcost.collect.local import collect
    from graphcost.frontend.programs.user_program import ProgramError

    monkeypatch.setenv(ENV, "3")
    module = tmp_path / "endless.hlo"
    module.write_text(ENDLESS_WHILE)
    with pytest.raises(ProgramError) as info:
        collect(select_programs(str(module)), tmp_path / "out", CollectOptions(space="flags", configs=2),
                progress=False)
    for needle in ("endless", TIMED_OUT, "endless while loop"):
        assert needle in str(info.value), str(info.value)
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_collect_of_an_unreadable_module_is_one_error_line_not_a_usage_block(tmp_path):
    """Was: a dump directory holding no module got typer's Usage block from `collect` (one `error:` line from
    `tune`); broken module text is one line too."""
    dump = tmp_path / "dump"
    dump.mkdir()
    result = invoke("collect", "--programs", dump, "--space", "flags", "--configs", 2, "--out", tmp_path / "out")
    one_line_error(result, str(dump), "no HLO module")
    assert "Usage:" not in result.output
    module = tmp_path / "broken.hlo"
    module.write_text("HloModule broken\n\nENTRY main {\n  x = f32[ parameter(0)\n}\n")
    result = invoke("collect", "--programs", module, "--space", "flags", "--configs", 2, "--out", tmp_path / "out")
    one_line_error(result, "broken.hlo")
    assert "Usage:" not in result.output
