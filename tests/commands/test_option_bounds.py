"""Every number the CLI takes is bounded where the option is declared (issue 36): refused up front as a
usage error (exit 2) naming the option, never a crash, a fork bomb or a run without end."""

from __future__ import annotations

import pytest
from cli_asserts import invoke

from graphcost.guards.bounds import ArgumentError, check_int, check_real, check_seed, max_threads, max_workers


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
    ("--prepare-timeout", ["tune", "x.py:make", "--prepare-timeout", "3.954201702454344e+16"]),  # was: OverflowError
    ("--dist-timeout", ["train", "--dist-timeout", "1e12"]),  # past ~292 years Python's clocks overflow
    ("--prepare-timeout", ["tune", "x.py:make", "--prepare-timeout", "2147484"]),  # > 2^31 ms: subprocess's poll()
    ("--max-wait", ["collect", "--max-wait", "1e12"]),
    ("--timeout", ["data", "download", "-c", "tile:xla", "--timeout", "1e12"]),
    ("--timeout", ["data", "download", "-c", "tile:xla", "--timeout", "-1"]),
    ("--budget", ["tune", "x.py:make", "--budget", "1000000000"]),  # was: unbounded (days of measuring)
    ("--round-size", ["tune", "x.py:make", "--round-size", "1000000000"]),
    ("--calls", ["tune", "x.py:make", "--calls", "1000000000"]),
    ("--configs", ["collect", "--configs", "1000000000"]),
    ("--rounds", ["collect", "--rounds", "1000000000"]),
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


SYNTH = ["data", "synth", "-c", "layout:xla:random", "-o", "OUT"]
GENERATORS = [  # (option named, arguments): counts and sizes of generated data, refused before the plan is built
    ("--graphs", [*SYNTH, "--graphs", "441620726"]),  # was: 8+ GB of file names, killed by the OOM killer (fuzz --deep)
    ("--max-nodes", [*SYNTH, "--max-nodes", str(10**12)]),  # one graph of 10**12 nodes: about 1 TB
    ("--min-nodes", [*SYNTH, "--min-nodes", str(10**12)]),  # raises the largest graph too
    ("--max-configs", [*SYNTH, "--max-configs", str(10**13)]),
    ("--num-graphs", ["dag", "train", "--dataset", "lp", "--num-graphs", str(10**12)]),  # was: LP graphs without end
]


@pytest.mark.parametrize("option, args", GENERATORS, ids=[o for o, _ in GENERATORS])
def test_generated_data_is_bounded_before_anything_is_generated(option, args, tmp_path, monkeypatch):
    import graphcost.layerdag.datasets.lp as lp
    import graphcost.data.synth.collection as collection

    def reached(*args, **kwargs):
        raise AssertionError("reached the generator: the count was not bounded up front")

    monkeypatch.setattr(collection, "_split_counts", reached)  # the first step of a synth run's plan
    monkeypatch.setattr(lp, "generate_lp_dataset", reached)
    monkeypatch.chdir(tmp_path)
    usage_error(invoke(*args), option)
    assert list(tmp_path.iterdir()) == []


def test_generated_data_bounds_in_the_python_api(tmp_path):
    from graphcost.guards.bounds import GRAPHS_MAX
    from graphcost.layerdag.datasets import load_dataset
    from graphcost.data.synth.collection import write_synthetic_collection

    with pytest.raises(ArgumentError, match="num_graphs must be an integer from 1 to"):
        write_synthetic_collection(tmp_path, "tile:xla", num_graphs=441620726)
    with pytest.raises(ArgumentError, match="max_nodes 1000000000000: a synthetic graph of"):
        write_synthetic_collection(tmp_path, "tile:xla", num_graphs=3, max_nodes=10**12)
    with pytest.raises(ValueError, match=f"num_graphs must be at most {GRAPHS_MAX}"):
        load_dataset("lp", num_graphs=10**12)
    assert list(tmp_path.iterdir()) == []
