"""collect: a graph with more configurations than one process can hold executables for is refused
up front with the fix, not a segfault after minutes of compiling (vm.max_map_count)."""

import pytest
from typer.testing import CliRunner

pytest.importorskip("jax")

from graphcost.cli import app  # noqa: E402
import graphcost.measure.memory_maps as memory_maps  # noqa: E402


def test_too_many_configurations_for_the_map_count_is_one_line(tmp_path, monkeypatch):
    limit = tmp_path / "max_map_count"
    limit.write_text("65530\n")
    monkeypatch.setattr(memory_maps, "MAP_COUNT_FILE", limit)
    result = CliRunner().invoke(app, ["collect", "--programs", "mlp", "--configs", "1200", "--out", str(tmp_path / "o")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "vm.max_map_count is 65,530" in result.output and "--configs 1200" in result.output
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_the_check_passes_where_the_limit_allows_it(tmp_path, monkeypatch):
    limit = tmp_path / "max_map_count"
    limit.write_text("1048576\n")
    monkeypatch.setattr(memory_maps, "MAP_COUNT_FILE", limit)
    memory_maps.check_executables_fit(1200)
    monkeypatch.setattr(memory_maps, "MAP_COUNT_FILE", tmp_path / "absent")
    memory_maps.check_executables_fit(10**6)  # no such file (not Linux): nothing to check
