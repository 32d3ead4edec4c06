"""Interrupted work is accounted for (issue 36): an interrupted or SIGTERM'd tune releases every
reservation it made, a resumed run measures exactly the remaining budget and says what it found, and
`--out` / `--resume` refuse a directory that is no tuning run or has lost its study."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.tuning.space import FlagSpace
from graphcost.tuning.study import Study
from graphcost.tuning.tuner import run_strategy
from tune_fakes import FakeEvaluator

BUDGET = 12


def _running(url: str, name: str) -> list:
    import optuna

    return Study(url, name, FlagSpace()).study.get_trials(states=(optuna.trial.TrialState.RUNNING,))


def _interrupt_on_call(monkeypatch, method: str, call: int, after: bool = False) -> None:
    """Ctrl-C arriving on the `call`-th call of `Study.method` (just before it, or just after it returned)."""
    real, calls = getattr(Study, method), [0]

    def interrupted(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == call and not after:
            raise KeyboardInterrupt
        out = real(self, *args, **kwargs)
        if calls[0] == call:
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(Study, method, interrupted)


@pytest.mark.parametrize("strategy, method, call, after", [
    ("random", "tell", 6, False),     # between two results of the second round: 5 recorded, 3 reserved
    ("random", "reserve", 2, True),   # right after the second round was reserved
    ("tpe", "ask", 7, True),          # right after the sampler's 7th proposal was reserved
])
def test_an_interrupted_run_releases_every_reservation_and_resume_fills_the_budget(
        tmp_path, monkeypatch, caplog, strategy, method, call, after):
    """issue 36: the reservations of the interrupted round stayed RUNNING (counted against the budget
    while the lease ran), so the resumed study ended with fewer measurements than its budget."""
    url, name = f"sqlite:///{tmp_path / 'study.db'}", f"prog:flags:{strategy}"
    with monkeypatch.context() as patch:
        _interrupt_on_call(patch, method, call, after)
        with pytest.raises(KeyboardInterrupt):
            run_strategy(strategy, FlagSpace(), FakeEvaluator(FlagSpace()), BUDGET, url, "prog:flags", round_size=4)
    assert not _running(url, name)  # nothing left reserved
    done = Study(url, name, FlagSpace()).trials()
    assert 0 < len(done) < BUDGET

    again = FakeEvaluator(FlagSpace())
    with caplog.at_level(logging.INFO, logger="graphcost.tuning.tuner"):
        trials = run_strategy(strategy, FlagSpace(), again, BUDGET, url, "prog:flags", round_size=4)
    assert len(trials) == BUDGET and len(again.measured) == BUDGET - len(done)
    assert [t.codes for t in trials[: len(done)]] == [t.codes for t in done]
    assert len({t.codes for t in trials}) == BUDGET
    assert len(Study(url, name, FlagSpace()).used()) == BUDGET
    said = [r.getMessage() for r in caplog.records if "found" in r.getMessage()]
    assert len(said) == 1, said
    assert f"found {len(done)} configuration(s) measured" in said[0]
    assert f"measuring {BUDGET - len(done)} more for the budget of {BUDGET}" in said[0]
    if strategy == "random":
        assert "reservation(s) of interrupted runs released" in said[0]


DRIVER = '''
import os, signal, sys, time
from tune_fakes import FakeEvaluator
from graphcost.tuning import tuner


class Terminated(FakeEvaluator):
    def evaluate(self, batch, again=()):
        if self.batches == 2:  # the third round: `kill PID` while it measures
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(60)
        return super().evaluate(batch, again)


tuner.Evaluator = lambda program, space, *a, **k: Terminated(space)
from graphcost.cli import app
app(sys.argv[1:], prog_name="graphcost")
'''
PROGRAM = '''
import jax.numpy as jnp

def make():
    a = jnp.linspace(-1.0, 1.0, 16 * 32).reshape(16, 32)
    return (lambda a, b: jnp.tanh(a @ b).sum(axis=0)), (a, a.T)
'''
FAST = ["--rounds", "1", "--calls", "1", "--processes", "1", "--round-size", "2", "--no-kernels", "--no-ablation"]


@pytest.fixture()
def prog(tmp_path):
    path = tmp_path / "src" / "user_prog.py"
    path.parent.mkdir()
    path.write_text(PROGRAM)
    return path


def test_sigterm_releases_the_reservations_and_resume_measures_exactly_the_rest(tmp_path, prog, monkeypatch):
    """issue 36: a SIGTERM'd `graphcost tune` died at once, its reservation left RUNNING; now it exits
    143 saying what is saved, nothing stays reserved, and --resume measures the remaining budget,
    saying what it found, so the study ends with exactly --budget measurements."""
    from graphcost.tuning import tuner

    out, driver = tmp_path / "tuned", tmp_path / "driver.py"
    driver.write_text(DRIVER)
    args = ["tune", f"{prog}:make", "--budget", str(BUDGET), "--strategy", "random", "--out", str(out), *FAST]
    proc = subprocess.run([sys.executable, str(driver), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])})  # tune_fakes
    assert proc.returncode == 143, (proc.returncode, proc.stderr[-3000:])
    assert "interrupted by SIGTERM: the 4 configuration(s) this run measured are saved" in proc.stderr
    assert "Traceback" not in proc.stderr
    url, name = f"sqlite:///{out / 'study.db'}", "user_prog:flags:random"
    assert not _running(url, name)
    assert len(Study(url, name, FlagSpace()).trials()) == 4

    monkeypatch.setattr(tuner, "Evaluator", lambda program, space, *a, **k: FakeEvaluator(space))
    res = CliRunner().invoke(app, [*args, "--resume"])
    assert res.exit_code == 0, res.output
    found = [line for line in res.output.splitlines() if "found" in line]
    assert len(found) == 1 and "found 4 configuration(s) measured" in found[0], res.output
    assert "2 reservation(s) of interrupted runs released" in found[0]
    assert f"measuring {BUDGET - 4} more for the budget of {BUDGET}" in found[0]
    after = Study(url, name, FlagSpace())
    assert len(after.trials()) == BUDGET == len(after.used())


def test_resume_without_its_study_db_is_refused(tmp_path, prog):
    """issue 36: `tune --resume` after study.db was deleted started a new study without a word."""
    from cli_asserts import one_line_error

    out = tmp_path / "tuned"
    out.mkdir()
    (out / "result.json").write_text("{}")
    (out / "trials.csv").write_text("strategy\n")
    one_line_error(CliRunner().invoke(app, ["tune", f"{prog}:make", "--out", str(out), "--resume", *FAST]),
                   f"--resume: {out / 'study.db'} is missing", "--overwrite")
    assert sorted(p.name for p in out.iterdir()) == ["result.json", "trials.csv"]
    one_line_error(CliRunner().invoke(app, ["tune", f"{prog}:make", "--out", str(tmp_path / "new"), "--resume",
                                            *FAST]), "study.db does not exist", "drop --resume")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("extra", [[], ["--resume"]])
def test_out_in_the_programs_source_directory_is_refused(prog, extra):
    """issue 36: `tune --out <the program's directory>` said it "already holds a tuning run" (and with
    --resume wrote the study among the user's sources)."""
    from cli_asserts import one_line_error

    src = prog.parent
    one_line_error(CliRunner().invoke(app, ["tune", f"{prog}:make", "--out", str(src), *extra, *FAST]),
                   f"--out {src}: not a run directory", "the program's source user_prog.py", "new or empty directory")
    assert sorted(p.name for p in src.iterdir()) == ["user_prog.py"]


def test_a_signal_during_a_storage_write_is_handled_after_it():
    """A reservation is made and recorded with SIGINT / SIGTERM held: the signal waits for the write."""
    import signal
    import time

    from graphcost.tuning.study import signals_held

    written = []
    runner = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in `graphcost tune` (xdist workers ignore it)
    try:
        with pytest.raises(KeyboardInterrupt):
            with signals_held():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the signal arrives meanwhile
                written.append("reservation")
        assert written == ["reservation"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    finally:
        signal.signal(signal.SIGINT, runner)
