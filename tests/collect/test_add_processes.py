"""`graphcost collect --action add-processes`: raise a finished collection (and its repeat) to more measuring
processes without measuring again what it has; labels recomputed over all processes."""

import json

import numpy as np
import pytest

pytest.importorskip("jax")

from typer.testing import CliRunner  # noqa: E402

from graphcost.cli import app  # noqa: E402

NAME = "mlp-d1-w64-b8-fwd"
ARGS = ["collect", "--programs", NAME, "--configs", "3", "--rounds", "1", "--calls", "1", "--warmup", "0",
        "--limit", "1", "--measure-core", "-1", "--max-load", "1000", "--multi-thread"]


def _read(out):
    manifest = json.loads((out / "manifest.json").read_text())
    with np.load(out / manifest["graphs"][NAME]["file"]) as z:
        return manifest, {k: z[k] for k in z.files}


def test_add_processes_appends_the_missing_processes_to_the_label_and_the_repeat(tmp_path):
    from cli_asserts import one_line_error

    out = tmp_path / "col"
    runner = CliRunner()
    base = ARGS + ["--out", str(out)]
    for extra in ([], ["--action", "repeat"]):
        res = runner.invoke(app, base + ["--processes", "1", *extra])
        assert res.exit_code == 0, res.output
    _, before = _read(out)
    # resuming with more processes is refused with the way forward, nothing measured
    line = one_line_error(runner.invoke(app, base + ["--processes", "3"]), "--action add-processes")
    assert "collection.processes' is 1" in line
    res = runner.invoke(app, base + ["--processes", "3", "--action", "add-processes"])
    assert res.exit_code == 0, res.output
    manifest, after = _read(out)
    assert manifest["collection"]["processes"] == 3 and manifest["environment"]["cross_process"]["processes"] == 3
    for key in ("config_runtime_samples", "config_runtime_repeat_samples"):
        assert after[key].shape == (3, 3)
        np.testing.assert_array_equal(after[key][:, :1], before[key])  # what was measured is kept as it was
        assert (after[key][:, 1:] > 0).all()
    assert not np.array_equal(after["config_runtime_samples"][:, 1:], after["config_runtime_repeat_samples"][:, 1:])
    entry = manifest["graphs"][NAME]
    assert len(entry["processes"]) == 3 and ["added_utc" in r for r in entry["processes"]] == [False, True, True]
    assert len(entry["repeat"]["processes"]) == 3
    # the label is recomputed over all three processes (one executable per distinct id, level-median)
    from graphcost.measure.cross_process import combine

    label = combine(after["config_runtime_samples"].astype(np.float64), "level-median", after["config_executable_ids"])
    np.testing.assert_array_equal(after["config_runtime"], np.round(label).astype(np.int64))
    # done: resuming with 3 has nothing to do; going back to fewer is refused
    mtime = (out / entry["file"]).stat().st_mtime_ns
    assert runner.invoke(app, base + ["--processes", "3"]).exit_code == 0
    assert runner.invoke(app, base + ["--processes", "3", "--action", "add-processes"]).exit_code == 0
    assert (out / entry["file"]).stat().st_mtime_ns == mtime
    one_line_error(runner.invoke(app, base + ["--processes", "2", "--action", "add-processes"]), "would remove")


def test_add_processes_needs_a_collection_and_no_other_stage(tmp_path):
    from cli_asserts import one_line_error

    runner = CliRunner()
    one_line_error(runner.invoke(app, ARGS + ["--out", str(tmp_path / "none"), "--action", "add-processes"]),
                   "no collection here to add processes to")
    res = runner.invoke(app, ARGS + ["--out", str(tmp_path / "x"), "--action", "add-processes", "--repeat"])
    assert res.exit_code == 2 and "--repeat and --action add-processes: one action at a time" in res.output
