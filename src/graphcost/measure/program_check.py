"""A user's program prepared and run once in a child process, each step under a deadline.

A program given by reference (``prog.py:make``, an XLA module) is someone else's code: its ``make()``
may never return, its tracing may loop, it may call ``os.abort()`` or crash the interpreter, and an
XLA module may loop forever in a ``while`` or wait on an ``infeed`` nothing feeds. None of that can be
reported by the process it happens in. So every command that runs such a program (`graphcost tune`,
`rank`, `profile`, `verify`) first has `check_program` prepare it in a fresh process:

    import the file and call make()   (``make``:    `Deadlines.make_s`)
    trace the function                (``trace``:   `Deadlines.trace_s`)
    compile the default               (``compile``: `Deadlines.compile_s`)
    call it once (optional)           (``run``:     scaled from the compile's cost estimate)

The child reports each step as it starts on a private pipe; the parent holds each step to its own
deadline and kills the child's whole process group when one passes. What went wrong becomes ONE
line naming the program and the step: "make() ... timed out after 30 s", "the program aborted (signal 6,
SIGABRT: ...) in make()", "XLA ran out of memory: a buffer of 37.3 GiB". The deadline of the call is
`RUN_SCALE` times the compile's cost estimate (XLA's flops and bytes at deliberately slow rates), kept
between a floor and a cap: XLA counts a ``while`` body once, so an endless loop gets the floor.

What the check measured (`ProgramCheck`: the preparation's, the compile's and the call's seconds)
scales the deadlines of the measuring processes that follow (`ProgramCheck.worker_timeout`): a
process that compiles a few configurations and calls each a few dozen times gets a multiple of
that, at least `WORKER_FLOOR_S` and at most `WORKER_CAP_S`.

``GRAPHCOST_PROGRAM_TIMEOUT_S`` (seconds) sets the make and trace deadlines and the call's floor: a
larger value for a program whose ``make()`` legitimately takes minutes, a small one in tests.

The child is ``python -m graphcost.measure.program_check REF RUN`` (an internal protocol).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass

from graphcost.measure.cross_process import describe_signal, memory_message
from graphcost.frontend.programs.user_program import ProgramError, _why, check_reference

ENV = "GRAPHCOST_PROGRAM_TIMEOUT_S"
CHANNEL_ENV = "GRAPHCOST_CHECK_CHANNEL_FD"  # the child's end of the step pipe
RUN_SCALE = 50.0  # the call's deadline: this many times the compile's cost estimate
FLOPS_PER_S = 1e9  # the cost estimate's rates: slower than any CPU XLA targets, so the estimate is an upper end
BYTES_PER_S = 1e9
WORKER_FLOOR_S = 120.0  # a measuring process imports JAX and rebuilds the program first: slow on a loaded machine
WORKER_CAP_S = 3600.0
STEPS = {"start": "starting the process (importing JAX)", "make": "make() (importing the program and building it)",
         "trace": "tracing the function", "compile": "compiling the default configuration",
         "run": "one call of the default configuration"}


@dataclass(frozen=True)
class Deadlines:
    """Seconds each step of `check_program` may take (None: no limit of its own); `total_s`, when set, bounds
    all of them together and is named `total_name` in its message (`graphcost tune --prepare-timeout`)."""

    make_s: float | None = 30.0  # a make() past half a minute is rare; the message says how to allow more
    trace_s: float | None = 30.0
    compile_s: float | None = 600.0
    run_floor_s: float = 20.0
    run_cap_s: float = 600.0
    start_s: float | None = 300.0  # importing JAX and graphcost in a fresh process (slow on a loaded machine)
    total_s: float | None = None
    total_name: str = ""

    @classmethod
    def from_env(cls) -> "Deadlines":
        """The defaults, with ``GRAPHCOST_PROGRAM_TIMEOUT_S`` (when set) as the make and trace deadlines and the
        call's floor; ArgumentError naming the variable when it is not a positive number of seconds."""
        text = os.environ.get(ENV, "").strip()
        if not text:
            return cls()
        from graphcost.guards.bounds import SECONDS_MAX, ArgumentError

        try:
            seconds = float(text)
        except ValueError:
            seconds = math.nan
        if not 0 < seconds <= SECONDS_MAX:
            raise ArgumentError(f"{ENV}={text!r}: expected a number of seconds in (0, {SECONDS_MAX}]")
        return cls(make_s=seconds, trace_s=seconds, run_floor_s=seconds, run_cap_s=max(seconds, cls.run_cap_s))

    @classmethod
    def total(cls, seconds: float, name: str) -> "Deadlines":
        """One deadline for every step together (the steps have none of their own)."""
        return cls(None, None, None, math.inf, math.inf, None, float(seconds), name)

    def run_s(self, estimate_s: float) -> float:
        """The call's deadline: `RUN_SCALE` x the cost estimate, within [run_floor_s, run_cap_s]."""
        return min(self.run_cap_s, max(self.run_floor_s, RUN_SCALE * max(estimate_s, 0.0)))

    def step_s(self, step: str, estimate_s: float = 0.0) -> float | None:
        return {"start": self.start_s, "make": self.make_s, "trace": self.trace_s, "compile": self.compile_s,
                "run": self.run_s(estimate_s)}[step]


def worker_deadline(prepare_s: float, compile_s: float, call_s: float, compiles: int, calls: int,
                    wall_s: float = 0.0, source: str = "the check's") -> tuple[float, str]:
    """``(seconds, why)``: the deadline of a process that rebuilds the program (`prepare_s`), compiles `compiles`
    configurations (`compile_s` each), makes `calls` calls (`call_s` each) and spends `wall_s` more seconds timing
    (visits of a fixed length): three times that, plus the start of a process, within [`WORKER_FLOOR_S`,
    `WORKER_CAP_S`]; `why` says so in words, the figures being `source`."""
    need = 30.0 + 3.0 * (prepare_s + compiles * compile_s + calls * call_s + wall_s)
    seconds = min(WORKER_CAP_S, max(WORKER_FLOOR_S, need))
    why = (f"its deadline, scaled from {source} {prepare_s:.2g} s to prepare, {compile_s:.2g} s to "
           f"compile and {_seconds(call_s)} per call: 3x {compiles} compile(s) and {calls} call(s)"
           + (f" and {wall_s:.3g} s of timed visits" if wall_s else "")
           + f", at least {WORKER_FLOOR_S:g} s, at most {WORKER_CAP_S:g} s")
    return seconds, why


@dataclass(frozen=True)
class ProgramCheck:
    """What the check measured, in seconds (`call_s` None when it did not call the program)."""

    ref: str
    prepare_s: float  # make() and tracing
    compile_s: float
    estimate_s: float  # the compile's cost estimate of one call
    call_s: float | None = None
    compile_bytes: int = 0  # how much the compile raised the process's peak resident set (0: not known)

    def worker_timeout(self, compiles: int, calls: int, wall_s: float = 0.0) -> tuple[float, str]:
        """`worker_deadline` from the check's figures (its cost estimate per call when it made no call)."""
        call = self.call_s if self.call_s is not None else self.estimate_s
        return worker_deadline(self.prepare_s, self.compile_s, call, compiles, calls, wall_s)

    def parallel_compiles(self, most: int) -> int:
        """How many compiles of this program may run at once, at most `most`: as many as the memory the machine
        has free takes at `compile_bytes` each (at least 1)."""
        from graphcost.guards.bounds import available_memory_bytes

        free = available_memory_bytes()
        if self.compile_bytes <= 0 or free is None:
            return most
        return max(1, min(most, free // self.compile_bytes))

    def to_json(self) -> dict:
        return asdict(self)


def check_program(ref: str, run: bool = True, deadlines: Deadlines | None = None) -> ProgramCheck:
    """Prepare the program `ref` in a fresh process (module docstring) and, with `run`, call its default once.

    Raises ProgramError in one line naming `ref` and the step when the program raises, exits, is killed by a
    signal (``os.abort()``, a crash), runs out of memory, or a step runs past its deadline (`deadlines`,
    default `Deadlines.from_env`)."""
    deadlines = deadlines or Deadlines.from_env()
    check_reference(ref)  # a mistyped reference is refused here, before a process is started
    cmd = [sys.executable, "-m", "graphcost.measure.program_check", ref, "1" if run else "0"]
    read_end, write_end = os.pipe()
    with tempfile.TemporaryFile() as log:
        try:
            with warnings.catch_warnings():  # see `graphcost.measure.cross_process.run_child`
                warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
                from graphcost.measure.cross_process import die_with_parent

                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(write_end,),
                                        env={**os.environ, CHANNEL_ENV: str(write_end)}, start_new_session=True,
                                        preexec_fn=die_with_parent())
        finally:
            os.close(write_end)
        try:
            outcome = _follow(proc, read_end, deadlines)
        finally:
            os.close(read_end)
            if proc.poll() is None:  # a deadline passed, or this process is being interrupted
                _kill(proc)
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - 4000))
        tail = log.read().decode("utf-8", "replace")
    return _result(ref, proc.returncode, outcome, tail, deadlines)


def check_in_child(ref: str, timeout_s: float) -> ProgramCheck:
    """`check_program` with one deadline of `timeout_s` seconds for every step together, named
    ``--prepare-timeout`` in its message: `graphcost tune`'s check of its program before the search."""
    return check_program(ref, run=True, deadlines=Deadlines.total(timeout_s, "--prepare-timeout"))


def _follow(proc: subprocess.Popen, fd: int, deadlines: Deadlines) -> dict:
    """Read the child's step reports until it finishes or a deadline passes: the last step, its start and
    deadline, and the child's "done" or "error" report (``timed_out`` True when a deadline passed)."""
    import select

    state: dict = {"step": "start", "estimate_s": 0.0, "timed_out": False}
    started = step_started = time.monotonic()
    buffer = b""
    while True:
        step_s = deadlines.step_s(state["step"], state["estimate_s"])
        limits = [step_started + step_s] if step_s is not None and math.isfinite(step_s) else []
        if deadlines.total_s is not None:
            limits.append(started + deadlines.total_s)
        until = min(limits) if limits else None
        wait = None if until is None else max(0.0, until - time.monotonic())
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            state["timed_out"] = True
            return state
        chunk = os.read(fd, 65536)
        if not chunk:  # the child closed its end: it has ended (or is ending)
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "step" in msg:
                state.update(step=msg["step"], estimate_s=float(msg.get("estimate_s", 0.0)))
                step_started = time.monotonic()
            else:
                state.update(msg)
        if "done" in state or "error" in state:  # its last word (a process it forked may hold the pipe open)
            break
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # closed its report pipe yet went on running
        state["timed_out"] = True
    return state


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group (it runs in a session of its own: whatever the program started)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):  # gone already, or a platform without process groups
        proc.kill()
    proc.wait()


def _result(ref: str, returncode: int | None, outcome: dict, tail: str, deadlines: Deadlines) -> ProgramCheck:
    step = outcome["step"]
    where = STEPS.get(step, step)
    if outcome.get("timed_out"):
        if deadlines.total_s is not None:
            raise ProgramError(f"{ref}: preparing the program (import, make(), tracing, compiling and one call of the "
                               f"default) took longer than {deadlines.total_name or 'its timeout'} "
                               f"{deadlines.total_s:g} s, in {where}; an endless loop?")
        seconds = deadlines.step_s(step, outcome["estimate_s"]) or 0.0
        if step == "run":
            why = (f"{RUN_SCALE:g}x the compile's cost estimate of {_seconds(outcome['estimate_s'])}, at least "
                   f"{deadlines.run_floor_s:g} s, at most {deadlines.run_cap_s:g} s; an endless while loop, or an "
                   "infeed nothing feeds?")
        elif step in ("make", "trace"):
            why = f"an endless loop? {ENV}=SECONDS sets this deadline"
        else:
            why = "a machine too loaded to go on?"
        raise ProgramError(f"{ref}: {where} timed out after {seconds:g} s ({why})")
    if "error" in outcome:
        raise ProgramError(str(outcome["error"]))
    if "done" in outcome and returncode == 0:
        return ProgramCheck(ref, **outcome["done"])
    if returncode is not None and returncode < 0:
        raise ProgramError(f"{ref}: {describe_signal(-returncode)} in {where}")
    last = (tail.strip().splitlines() or ["no output"])[-1]
    raise ProgramError(f"{ref}: preparing the program ended its process with exit status {returncode} (os._exit()?) "
                       f"in {where}: {_clip(last)}")


def _seconds(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cost_estimate(compiled) -> float:
    """Seconds one call of `compiled` should take at most, from XLA's cost analysis (flops and bytes accessed at
    `FLOPS_PER_S` / `BYTES_PER_S`); 0 when XLA gives none."""
    try:
        costs = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - a backend without cost analysis: no estimate, the floor applies
        return 0.0
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else {}
    if not isinstance(costs, dict):
        return 0.0
    flops, moved = float(costs.get("flops", 0.0) or 0.0), float(costs.get("bytes accessed", 0.0) or 0.0)
    estimate = max(flops, 0.0) / FLOPS_PER_S + max(moved, 0.0) / BYTES_PER_S
    return estimate if math.isfinite(estimate) else 0.0


def no_core_files() -> None:
    """In a child that runs the user's code: an ``os.abort()`` or a crash there leaves no core file (where the OS
    lets a process say so)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass


def _peak_rss() -> int:
    """This process's peak resident set in bytes so far (0 where the OS does not say)."""
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * (1 if sys.platform == "darwin" else 1024)
    except (ImportError, OSError, ValueError):
        return 0


def _child(ref: str, run: bool) -> int:
    """The child of `check_program`: reports each step on the pipe `CHANNEL_ENV` names, then "done" with its
    figures (exit 0) or "error" with one line (exit 3)."""
    fd = int(os.environ.pop(CHANNEL_ENV))
    os.set_inheritable(fd, False)  # not passed on to a process the program starts
    channel = os.fdopen(fd, "w", buffering=1)

    def say(**msg) -> None:
        channel.write(json.dumps(msg) + "\n")
        channel.flush()

    no_core_files()
    import jax

    from graphcost.frontend.programs.user_program import load_program, prepare_program

    step = "make"
    try:
        say(step=step)
        t0 = time.perf_counter()
        fn, args, name = load_program(ref)
        say(step=(step := "trace"))
        program = prepare_program(fn, args, name, ref)
        prepare_s = time.perf_counter() - t0
        say(step=(step := "compile"))
        peak = _peak_rss()
        t0 = time.perf_counter()
        compiled = program.lower().compile()
        compile_s = time.perf_counter() - t0
        compile_bytes = max(0, _peak_rss() - peak)
        estimate = cost_estimate(compiled)
        call_s = None
        if run:
            say(step=(step := "run"), estimate_s=estimate)
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(*program.flat_args))
            call_s = time.perf_counter() - t0
    except ProgramError as exc:
        say(error=str(exc))
        return 3
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - compiling or running the default failed
        oom = memory_message(str(exc))
        say(error=f"{ref}: " + (f"{oom}, in {STEPS[step]}" if oom else
                                f"compiling or running the default configuration failed: {_why(exc)}"))
        return 3
    say(done={"prepare_s": round(prepare_s, 4), "compile_s": round(compile_s, 4), "estimate_s": estimate,
              "call_s": None if call_s is None else round(call_s, 6), "compile_bytes": compile_bytes})
    channel.close()
    return 0


if __name__ == "__main__":  # REF RUN (0 or 1)
    sys.exit(_child(sys.argv[1], sys.argv[2] == "1"))
