"""The fuzz suite (issue 36): every command and the public API driven with generated bad values.

Each case must end within `LIMIT_S` with either exit 0, exactly one `error:` line and exit 1, or a
usage error (exit 2) — naming the option when the value itself is unusable (NaN, an infinity, a
number past int64, a word) — and with no traceback, no exception escaping, no input file changed.
The process surviving is the check against a signal death (LightGBM's abort, libgomp's segfault).

Hypothesis draws the cases with a fixed seed (`derandomize`) and a small budget; `pytest --deep`
(or GRAPHCOST_FUZZ_DEEP=1) draws 5,000 per test (5,581 cases in all: the file and output tests stop
when their finite spaces are exhausted, 504 and 77 cases; about 5 minutes on one core, benchmarks/history/fuzz-2026-11-26.md).
A deep run caps its own address space (`deep.DEEP_ADDRESS_SPACE_GB`, GRAPHCOST_FUZZ_MAX_AS_GB): a case that
allocates without bound then fails as that case with a MemoryError instead of the whole run being
OOM-killed (it was, once, at 20.7 GB: `data synth --graphs=441620726`, now bounded).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from cases import BASE, SPECIAL_VALUES, argv, commands, numeric_options
from cli_asserts import invoke
from deep import DEEP, cap_address_space, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LIMIT_S = 30.0
EXAMPLES = examples(60)
if DEEP:
    cap_address_space()
    pytestmark = pytest.mark.timeout(0)  # a deep test runs for minutes: no per-test limit (pyproject `timeout`)
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))  # fmt: skip

OPTIONS = numeric_options()


def unusable(kind: str, value: str) -> bool:
    """Whether `value` can never be a `kind` option's value (a word, NaN, an infinity, past int64):
    such a value must be refused by the option itself."""
    import math

    try:
        number = float(value)
    except ValueError:
        return True
    if not math.isfinite(number):
        return True
    if kind == "float":
        return False
    try:
        return abs(int(value)) > 2**63 - 1
    except ValueError:  # '1.0' for an integer: newer typer reads it as 1, older refuses it; either is fine
        return not number.is_integer()


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def _workspace(tmp: Path) -> Path:
    """A fresh directory with the files the base arguments name."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "A_FILE").write_text("not a directory")
    return tmp


def check_case(result, elapsed: float, option: str | None = None, refuse: bool = False) -> None:
    """The contract of every case (module docstring)."""
    assert elapsed < LIMIT_S, (elapsed, result.output)
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    if result.exit_code == 1:
        errors = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, result.output
    if refuse:
        assert result.exit_code == 2 and option in result.output, (option, result.output)


def test_every_command_has_base_arguments():
    assert set(commands()) == set(BASE), "a new command needs base arguments in tests/fuzz/cases.py"
    assert len(OPTIONS) > 40  # the walk found the numeric options


values = st.one_of(st.sampled_from(SPECIAL_VALUES), st.integers(-(2**70), 2**70).map(str),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                           max_size=6))  # fmt: skip


@FUZZ
@given(case=st.sampled_from(OPTIONS), value=values)
def test_every_numeric_option_with_generated_values(tmp_path_factory, case, value):
    command, option, kind = case
    tmp = _workspace(tmp_path_factory.mktemp("case"))
    before = _snapshot(tmp)
    cwd = os.getcwd()
    os.chdir(tmp)  # a command writing a default path writes it here
    try:
        started = time.monotonic()
        result = invoke(*argv(command, tmp, f"{option}={value}" if option.startswith("--") else option, *(
            [] if option.startswith("--") else [value])))
        elapsed = time.monotonic() - started
    finally:
        os.chdir(cwd)
    check_case(result, elapsed, option, unusable(kind, value))
    after = _snapshot(tmp)
    assert {k: v for k, v in after.items() if k in before} == before  # no input changed


def _bad_file(tmp: Path, kind: str) -> Path:
    """An input file of one bad kind."""
    path = tmp / f"input-{kind}"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "truncated-zip":
        path.write_bytes(b"PK\x03\x04" + b"\x00" * 20)
    elif kind == "json-ish":
        path.write_text('{"config": {"epochs": ')
    elif kind == "directory":
        path.mkdir()
        (path / "x.npz").write_bytes(b"PK")
    elif kind == "symlink-loop":
        path.symlink_to(path)
    elif kind == "dangling":
        path.symlink_to(tmp / "nowhere")
    return path


FILE_KINDS = ["empty", "garbage", "truncated-zip", "json-ish", "directory", "symlink-loop", "dangling"]
FILE_INPUTS = [  # (command line with {f} for the bad file, suffix the file should carry)
    ["rank", "{f}"], ["rank", "{f}", "{f}"], ["evaluate", "{f}", "--device", "cpu"],
    ["predict", "{f}", "--out", "{tmp}/o.csv", "--device", "cpu"], ["data", "stats", "{f}"],
    ["data", "from-proto", "{f}", "--out", "{tmp}/p"], ["data", "split-configs", "{f}", "--out", "{tmp}/s"],
    ["data", "card", "{f}"], ["dag", "sample", "{f}", "--out", "{tmp}/s.npz", "--device", "cpu"],
    ["dag", "evaluate", "{f}", "--device", "cpu"], ["train", "--data-dir", "{f}", "--out", "{tmp}/r", "--device", "cpu"],
    ["predict", "{f}", "{f}", "--combine", "--out", "{tmp}/c.csv"],
]  # fmt: skip


@FUZZ
@given(line=st.sampled_from(FILE_INPUTS), kind=st.sampled_from(FILE_KINDS), suffix=st.sampled_from(["", ".npz",
       ".pt", ".json", ".pb", ".csv"]))  # fmt: skip
def test_every_file_input_of_a_bad_kind(tmp_path_factory, line, kind, suffix):
    tmp = _workspace(tmp_path_factory.mktemp("file"))
    bad = _bad_file(tmp, kind)
    if suffix and not bad.is_symlink():
        bad = bad.rename(bad.with_name(bad.name + suffix))
    before = _snapshot(tmp)
    started = time.monotonic()
    result = invoke(*(a.format(f=bad, tmp=tmp) for a in line))
    check_case(result, time.monotonic() - started)
    assert result.exit_code != 0, result.output
    assert {k: v for k, v in _snapshot(tmp).items() if k in before} == before


OUTPUTS = [  # (command line with {o} for the output, the option)
    (["evaluate", "{tmp}/NOPE", "--json", "{o}", "--overwrite"], "--json"),
    (["predict", "{tmp}/NOPE", "--out", "{o}", "--overwrite"], "--out"),
    (["data", "stats", "{tmp}", "--json", "{o}", "--overwrite"], "--json"),
    (["dag", "sample", "{tmp}/NOPE", "--out", "{o}", "--overwrite"], "--out"),
    (["dag", "evaluate", "{tmp}/NOPE", "--json", "{o}", "--overwrite"], "--json"),
    (["train", "--data-dir", "{tmp}/data", "--out", "{o}", "--overwrite"], "--out"),
    (["train", "--data-dir", "{tmp}/data", "--cache-dir", "{o}"], "--cache-dir"),
    (["tune", "{tmp}/NOPE.py:make", "--out", "{o}", "--overwrite"], "--out"),
    (["collect", "--list", "--out", "{o}"], "--out"),
    (["data", "synth", "-c", "tile:xla", "--out", "{o}", "-n", "2", "--max-nodes", "12", "--max-configs", "4"], "--out"),
    (["data", "download", "-c", "tile:xla", "--data-dir", "{o}"], "--data-dir"),
]  # fmt: skip
OUTPUT_KINDS = ["/dev/full", "/dev/null", "/proc/graphcost-fuzz", "/sys/graphcost-fuzz", "inside-data", "existing",
                "read-only"]  # fmt: skip


@FUZZ
@given(line=st.sampled_from(OUTPUTS), kind=st.sampled_from(OUTPUT_KINDS))
def test_every_output_of_a_bad_kind(tmp_path_factory, line, kind):
    args, option = line
    tmp = _workspace(tmp_path_factory.mktemp("out"))
    (tmp / "data" / "train").mkdir(parents=True)
    (tmp / "data" / "train" / "g.npz").write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty zip: a graph stand-in
    if kind.startswith("/"):
        target = Path(kind)
    elif kind == "inside-data":
        target = tmp / "data" / "train" / "out"
    elif kind == "existing":
        target = tmp / "existing"
        target.write_text("keep")
    else:
        (tmp / "ro").mkdir()
        target = tmp / "ro" / "out"
        os.chmod(tmp / "ro", 0o555)
    devices = {d: os.stat(d).st_mode for d in ("/dev/full", "/dev/null")}
    before = _snapshot(tmp)
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        started = time.monotonic()
        result = invoke(*(a.format(o=target, tmp=tmp) for a in args))
        elapsed = time.monotonic() - started
    finally:
        os.chdir(cwd)
        os.chmod(tmp / "ro", 0o755) if (tmp / "ro").exists() else None
    check_case(result, elapsed)
    assert {d: os.stat(d).st_mode for d in devices} == devices and all(stat.S_ISCHR(m) for m in devices.values())
    reads_data = "{tmp}/data" in args  # inside-data is inside an input only where the data is one
    if kind in ("/dev/full", "/dev/null", "/proc/graphcost-fuzz", "/sys/graphcost-fuzz") or (
            kind == "inside-data" and reads_data):
        assert result.exit_code == 1 and option in result.output, result.output  # refused by the guard, naming it
    assert {k: v for k, v in _snapshot(tmp).items() if k in before} == before
