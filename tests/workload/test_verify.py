"""`graphcost verify RUN`: the kept speedup reproduced as a user times it (issue 67)."""

from __future__ import annotations

import json

import pytest

from cli_asserts import invoke, one_line_error
from graphcost.workload.verify import VerifyProtocol, summarise

PROGRAM = '''
import jax.numpy as jnp

def make():
    a = jnp.linspace(-1.0, 1.0, 32 * 32).reshape(32, 32)
    return (lambda a, b: jnp.tanh(a @ b).sum(axis=0)), (a, a.T)
'''


def _run(tmp_path, claimed=(1.0, 1.0), program=True):
    """A tuning run directory as `graphcost tune` leaves it: best.json (a changed optimisation level) and
    result.json with the claimed speedup and, when `program`, the program's reference."""
    import jax.numpy as jnp

    from graphcost.tuning.result import TunedConfig
    from graphcost.frontend.programs.user_program import TuneProgram
    from graphcost.tuning.space import make_space

    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    space = make_space("flags", TuneProgram(lambda a: a, (jnp.ones(2),)))
    level = next(i for i, d in enumerate(space.dims) if d.name == "backend_optimization_level")
    codes = [0] * len(space.dims)
    codes[level] = 1
    run = tmp_path / "run"
    run.mkdir()
    (run / "best.json").write_text(json.dumps(TunedConfig.of(space, tuple(codes)).to_json()))
    result = {"speedup": sum(claimed) / 2, "speedup_range": list(claimed), "beats_default": True}
    if program:
        from graphcost.frontend.programs.user_program import program_sha256

        result["program"], result["program_sha256"] = f"{prog}:make", program_sha256(f"{prog}:make")
    (run / "result.json").write_text(json.dumps(result))
    return run


def _row(process, jit, tuned, default_exe, kept_exe, jit_min=None, tuned_min=None, jit_again=None):
    return {"process": process, "outputs_differ": "",
            "mean": {"jit": jit, "jit_again": jit_again or jit, "compile_with": tuned, "default_executable": default_exe,
                     "kept_executable": kept_exe},
            "min": {"jit": jit_min or jit, "jit_again": jit_again or jit_min or jit, "compile_with": tuned_min or tuned,
                    "default_executable": default_exe, "kept_executable": kept_exe}}


def test_summary_is_the_median_over_processes_of_plain_over_tuned():
    rows = [_row(0, 120.0, 100.0, 130.0, 100.0, jit_min=110.0), _row(1, 115.0, 100.0, 120.0, 100.0),
            _row(2, 200.0, 100.0, 125.0, 100.0)]
    report = summarise(rows, {"speedup": 1.2, "speedup_range": [1.1, 1.3]}, "p.py:make", 0.02, 3, VerifyProtocol())
    assert report["speedup"] == pytest.approx(1.2) and report["speedup_range"] == pytest.approx([1.15, 2.0])
    assert report["figures"]["user_min"]["per_process"] == pytest.approx([1.1, 1.15, 2.0])
    assert report["figures"]["executables_mean"]["median"] == pytest.approx(1.25)
    assert report["agrees"] and "agrees" in report["message"]
    outside = summarise(rows, {"speedup": 1.5, "speedup_range": [1.4, 1.6]}, "p.py:make", 0.02, 3, VerifyProtocol())
    assert not outside["agrees"] and "DOES NOT agree" in outside["message"]
    edge = summarise(rows, {"speedup": 1.0, "speedup_range": [1.0, 1.18]}, "p.py:make", 0.02, 3, VerifyProtocol())
    assert edge["agrees"]  # 1.2 <= 1.18 x 1.02: inside the tolerance


def test_only_the_timings_own_noise_widens_the_agreement():
    """The null pair (plain jit against a second plain jit) moved by 10% in one process: a 1.2x measurement agrees
    with a claim of 1.3-1.4x only within that margin; nothing else widens the run's range."""
    quiet = [_row(p, 120.0, 100.0, 120.0, 100.0) for p in range(3)]
    claim = {"speedup": 1.35, "speedup_range": [1.3, 1.4]}
    assert not summarise(quiet, claim, "p.py:make", 0.02, 3, VerifyProtocol())["agrees"]
    noisy = quiet[:2] + [_row(2, 120.0, 100.0, 120.0, 100.0, jit_again=132.0)]  # 120 / 132: 10% off
    report = summarise(noisy, claim, "p.py:make", 0.02, 3, VerifyProtocol())
    assert report["noise"] == pytest.approx(1 - 120 / 132) and report["agrees"] and "moved by up to 9.1%" in report["message"]
    busy = quiet[:2] + [_row(2, 120.0, 100.0, 120.0, 100.0, jit_again=400.0)]  # 70% off: nothing to tell
    report = summarise(busy, {"speedup": 1.2, "speedup_range": [1.19, 1.21]}, "p.py:make", 0.02, 3, VerifyProtocol())
    assert not report["conclusive"] and not report["agrees"] and "TOO NOISY to tell" in report["message"]
    # the run's one range is its confirmation's: no other figure of the run (its ablation batch, the final check
    # that chose it) widens it, and the false-alarm bound is stated
    confirmed = {**claim, "selected_speedup": 1.5, "ablation": {"kept_speedup": 1.25, "kept_range": [1.19, 1.3]}}
    report = summarise(quiet, confirmed, "p.py:make", 0.02, 3, VerifyProtocol())
    assert not report["agrees"] and report["claimed"]["speedup_range"] == [1.3, 1.4] and report["claimed"]["confirmed"]
    assert report["false_alarm_at_most"] == 0.25 and "timed after it was chosen" in report["message"]


def test_verify_times_the_run_in_fresh_processes_and_writes_verify_json(tmp_path):
    run = _run(tmp_path, claimed=(50.0, 60.0))  # a claim no optimisation level of a tiny matmul can reach
    res = invoke("verify", run, "--processes", "2", "--rounds", "2", "--visit-ms", "1", "--calls", "4")
    assert res.exit_code == 1, res.output  # does not agree: exit 1, and says so
    assert ("DOES NOT agree" in res.output or "TOO NOISY to tell" in res.output)  # never "agrees" with 50x
    assert "the final check's executables" in res.output
    report = json.loads((run / "verify.json").read_text())
    assert report["processes"] == 2 and len(report["processes_detail"]) == 2 and not report["agrees"]
    assert report["outputs_differ"] == ""  # the tuned outputs match plain jax.jit's
    assert report["protocol"]["calls"] == 4  # exactly as a user's timeit(number=4), whatever --visit-ms says
    for row in report["processes_detail"]:
        assert row["calls_per_visit"] == 4
        assert set(row["mean"]) == {"jit", "jit_again", "compile_with", "default_executable", "kept_executable"}
        assert all(row["min"][k] <= row["mean"][k] * 1.0001 and row["min"][k] > 0 for k in row["mean"])
    assert 0.05 < report["speedup"] < 5.0  # O0 on a tiny matmul: about 0.3x plain jit, lower on a busy machine


def test_a_run_without_its_program_names_the_field_and_the_option(tmp_path):
    run = _run(tmp_path, program=False)
    one_line_error(invoke("verify", run), "result.json", "'program'", "--program")


def test_not_a_run_directory(tmp_path):
    one_line_error(invoke("verify", tmp_path / "nowhere"), "no such tuning run")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "result.json").write_text("{}")
    one_line_error(invoke("verify", tmp_path / "half"), "best.json", "missing")
    (tmp_path / "half" / "best.json").write_text("{}")
    one_line_error(invoke("verify", tmp_path / "half"), "result.json", "'speedup'")


def test_verify_runs_only_the_program_that_was_tuned(tmp_path):
    """A result.json edited to name another program, a program file changed since the tune, or a run with no
    hash of its program: refused in one line before anything runs (issue 81); --program runs the user's choice."""
    run = _run(tmp_path)
    other = tmp_path / "other.py"
    other.write_text(PROGRAM + "\nopen(__file__ + '.ran', 'w').close()\n")
    result = json.loads((run / "result.json").read_text())
    (run / "result.json").write_text(json.dumps({**result, "program": f"{other}:make"}))
    one_line_error(invoke("verify", run), "result.json", str(other), "SHA-256 differs", "--program")
    assert not (tmp_path / "other.py.ran").exists()
    (run / "result.json").write_text(json.dumps({k: v for k, v in result.items() if k != "program_sha256"}))
    one_line_error(invoke("verify", run), "result.json", "'program_sha256' is missing", "--program")
    (tmp_path / "prog.py").write_text(PROGRAM + "\n# edited\n")
    (run / "result.json").write_text(json.dumps(result))
    one_line_error(invoke("verify", run), "result.json", "SHA-256 differs")


def test_a_non_finite_claimed_range_is_refused(tmp_path):
    run = _run(tmp_path)
    result = json.loads((run / "result.json").read_text())
    for bad in ([float("nan"), 1.2], [1.0, float("inf")], [1.2, 1.1], [0.0, 1.0]):
        (run / "result.json").write_text(json.dumps({**result, "speedup_range": bad}))
        one_line_error(invoke("verify", run), "result.json", "'speedup_range'", "finite positive")


def test_a_bad_protocol_from_python_is_refused_naming_its_field(tmp_path):
    """The library call checks the protocol's fields with the bounds the command's options have, before anything
    is read or run."""
    from graphcost.guards.bounds import ArgumentError
    from graphcost.workload.verify import verify_run

    for field, bad in (("calls", -5), ("calls", 10_001), ("rounds", 0), ("visit_ms", float("nan")),
                       ("min_calls", 0), ("warmup", -1)):
        with pytest.raises(ArgumentError, match=rf"^protocol\.{field} must"):
            verify_run(tmp_path, 1, VerifyProtocol(**{field: bad}))
