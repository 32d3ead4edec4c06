"""`graphcost data synth/stats/download` bad arguments give one-line errors, never tracebacks (QA fixes)."""

import os

import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.synth import collection as synth

runner = CliRunner()
SYNTH = ["data", "synth", "-c", "layout:xla:default", "-n", "2", "--max-nodes", "120", "--max-configs", "5"]


@pytest.mark.parametrize(
    "option,value", [("--noise", "-1"), ("--noise", "nan"), ("--config-fraction", "2"), ("--config-fraction", "0")]
)
def test_synth_refuses_out_of_range_knobs(tmp_path, option, value):
    res = runner.invoke(app, SYNTH + ["-o", str(tmp_path / "out"), option, value])
    assert res.exit_code == 2 and option in res.output, res.output  # a usage error naming the option
    assert not (tmp_path / "out").exists()  # refused before writing anything


@pytest.mark.parametrize("kwargs", [dict(noise=-0.5), dict(config_fraction=0.0), dict(config_fraction=1.5)])
def test_synth_library_refuses_out_of_range_knobs(tmp_path, kwargs):
    with pytest.raises(ValueError, match="noise|config_fraction"):
        synth.write_synthetic_collection(tmp_path, "layout:xla:default", num_graphs=1, progress=False, **kwargs)
    with pytest.raises(ValueError, match="noise|config_fraction"):
        synth.synth_layout_graph(num_nodes=50, num_configs=3, **kwargs)


def test_synth_out_is_a_file(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    for out in (f, f / "sub"):  # the data root itself, or a directory below a file
        res = runner.invoke(app, SYNTH + ["-o", str(out)])
        assert _one_line_error(res) and "afile" in res.output, res.output  # was a NotADirectoryError traceback


def test_stats_json_target_is_a_directory(tmp_path):
    synth.write_synthetic_collection(tmp_path / "root", "tile:xla", num_graphs=1, max_configs=5, progress=False)
    target = tmp_path / "out"
    target.mkdir()
    res = runner.invoke(app, ["data", "stats", str(tmp_path / "root"), "--json", str(target)])
    assert res.exit_code == 1 and "is a directory" in res.output and isinstance(res.exception, SystemExit)
    assert os.listdir(target) == [] and not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no temp files


def test_atomic_write_refuses_a_directory_and_leaves_no_temp_file(tmp_path, monkeypatch):
    from graphcost.guards.atomic import atomic_write_text

    with pytest.raises(IsADirectoryError, match="is a directory, expected a file path"):
        atomic_write_text(tmp_path, "x")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    import graphcost.guards.atomic

    monkeypatch.setattr(graphcost.guards.atomic.os, "replace", broken_replace)  # the shared atomic writer
    with pytest.raises(OSError):
        atomic_write_text(tmp_path / "a.json", "x")
    assert os.listdir(tmp_path) == []


def _one_line_error(res):
    lines = [line for line in res.output.splitlines() if line.strip()]
    return res.exit_code == 1 and isinstance(res.exception, SystemExit) and lines[-1].startswith("error: ")


def test_stats_missing_and_empty_paths(tmp_path, monkeypatch):
    res = runner.invoke(app, ["data", "stats", str(tmp_path / "missing")])
    assert _one_line_error(res) and "missing" in res.output, res.output
    (tmp_path / "empty").mkdir()
    res = runner.invoke(app, ["data", "stats", str(tmp_path / "empty")])
    assert _one_line_error(res) and "no .npz files" in res.output, res.output
    monkeypatch.setenv("GRAPHCOST_DATA_DIR", str(tmp_path / "nowhere"))
    res = runner.invoke(app, ["data", "stats"])
    assert _one_line_error(res) and "graphcost data download" in res.output, res.output


def test_download_offline_is_one_line_error(tmp_path):
    res = runner.invoke(app, ["data", "download", "-c", "tile:xla", "--data-dir", str(tmp_path), "--timeout", "0.001"])
    assert _one_line_error(res) and "npz_tile_xla_train.tar" in res.output, res.output
