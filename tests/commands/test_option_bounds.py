"""Every number the CLI takes is bounded where the option is declared (issue 36): refused up front as a
usage error (exit 2) naming the option, never a crash, a fork bomb or a run without end."""

from __future__ import annotations

import pytest
from cli_asserts import invoke

from graphcost.bounds import ArgumentError, check_int, check_real, check_seed, max_threads, max_workers


def usage_error(result, option: str) -> str:
    """Exit code 2, the option named, no traceback, no exception but the exit."""
    assert result.exit_code == 2, (result.exit_code, result.output, repr(result.exception))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and option in result.output, result.output
    return result.output


CASES = [  # (option named, arguments): each refused before any file is read or any work starts
    ("--threads", ["evaluate", "RUN", "--threads", "100000"]),  # was: a segfault in libgomp
    ("--loader-workers", ["train", "--loader-workers", "100000"]),  # was: 1,600+ processes forked
    ("--tta", ["rank", "M", "G", "--tta", "100000"]),  # was: unbounded
    ("--tta", ["evaluate", "RUN", "--tta", "100000"]),
    ("--eval-tta", ["train", "--eval-tta", "100000"]),
    ("--processes", ["collect", "--processes", "100000"]),  # was: unbounded
    ("--compile-workers", ["collect", "--compile-workers", "100000"]),
    ("--processes", ["tune", "x.py:make", "--processes", "100000"]),
    ("--diffusion-steps", ["dag", "train", "--dataset", "lp", "--diffusion-steps", "1000000000"]),  # was: 24 GB
    ("--num-samples", ["dag", "evaluate", "RUN", "--num-samples", "1000000000000"]),  # was: unbounded
    ("-n", ["dag", "sample", "RUN", "--out", "s.npz", "-n", "1000000000000"]),
    ("--seed", ["tune", "x.py:make", "--seed", "-1"]),  # was: an error naming no option after 5 s
    ("--seed", ["data", "synth", "-c", "tile:xla", "-o", "OUT", "--seed", "-5"]),  # was: an error naming no option
    ("--seed", ["collect", "--seed", "-1"]),
    ("--seed", ["dag", "train", "--dataset", "lp", "--seed", "-1"]),
    ("--seed", ["data", "split-configs", "G", "--out", "O", "--seed", "-1"]),
    ("--min-nodes", ["data", "synth", "-c", "tile:xla", "-o", "OUT", "--min-nodes", "50", "--max-nodes", "10"]),
    ("--min-configs", ["data", "synth", "-c", "tile:xla", "-o", "OUT", "--min-configs", "50", "--max-configs", "10"]),
    ("--rtol", ["tune", "x.py:make", "--rtol", "nan"]),  # NaN slipped through min=0.0
    ("--min-gain", ["tune", "x.py:make", "--min-gain", "inf"]),
    ("--dist-timeout", ["train", "--dist-timeout", "inf"]),
    ("--label-balance", ["dag", "train", "--dataset", "lp", "--label-balance", "nan"]),
    ("--label", ["dag", "sample", "RUN", "--out", "s.npz", "--label", "nan"]),
    ("--max-wait", ["collect", "--max-wait", "inf"]),
    ("--timeout", ["data", "download", "-c", "tile:xla", "--timeout", "nan"]),
    ("--epochs", ["train", "--epochs", str(10**30)]),  # past int64: was an OverflowError deep inside
]


@pytest.mark.parametrize("option, args", CASES, ids=[f"{a[0]}-{o}-{a[-1][:8]}" for o, a in CASES])
def test_numbers_out_of_bounds_are_usage_errors_naming_the_option(option, args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative placeholders (RUN, OUT) never touch the checkout
    usage_error(invoke(*args), option)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_machine_bounds_follow_the_cores():
    assert max_workers() >= 1 and max_threads() == 4 * max_workers()
    assert "--threads" in usage_error(invoke("rank", "M", "G", "--threads", str(max_threads() + 1)), "--threads")


def test_checks_name_the_argument():
    assert check_int("budget", 3, 1) == 3 and check_seed("seed", 0) == 0 and check_real("rtol", 0.5, 0) == 0.5
    for call, needle in [(lambda: check_int("budget", True), "budget must be an integer"),
                         (lambda: check_int("budget", 2.0), "budget must be an integer"),
                         (lambda: check_seed("seed", -1), "seed must be an integer from 0"),
                         (lambda: check_seed("seed", "a"), "seed must be an integer"),
                         (lambda: check_real("rtol", "x"), "rtol must be a number"),
                         (lambda: check_real("rtol", float("nan")), "rtol must be a finite number"),
                         (lambda: check_real("min_gain", -1, 0), "min_gain must be >= 0")]:  # fmt: skip
        with pytest.raises(ArgumentError, match=needle) as caught:
            call()
        assert isinstance(caught.value, ValueError) and isinstance(caught.value, TypeError)
