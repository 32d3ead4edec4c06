"""evaluate / data stats / rank tables: a rich table for people (whole columns in a pipe), JSON or CSV
for programs (stdout holds only the data)."""

from __future__ import annotations

import csv
import io
import json
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.commands.tables import Column, print_table
from graphcost.datasets import default_dataset_dir

SHIPPED = default_dataset_dir()  # the shipped real CPU layout dataset
ROWS = [{"graph": "a-very-long-graph-name-" + "x" * 60, "kendall_tau": 0.51234, "n": 3},
        {"graph": "b", "kendall_tau": -0.25, "n": 4}]
COLUMNS = [Column("graph", right=False), Column("kendall_tau", "tau", show=lambda v: f"{v:.3f}"), Column("n")]


def test_table_keeps_every_column_whole_in_a_pipe(capsys):
    print_table(ROWS, COLUMNS, "table", footer={"graph": "MEAN", "kendall_tau": 0.131, "n": 7}, caption="note")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["graph", "tau", "n"]
    assert lines[2].split() == [ROWS[0]["graph"], "0.512", "3"]  # not cut to 80 columns
    assert [line.split()[0] for line in lines[2:] if line.strip() and not set(line.strip()) <= {"─"}][-2:] == [
        "MEAN", "note"]


def test_json_and_csv_hold_the_raw_values(capsys):
    print_table(ROWS, COLUMNS, "json", footer={"graph": "MEAN", "kendall_tau": 0.131, "n": 7})
    assert json.loads(capsys.readouterr().out)[0]["kendall_tau"] == 0.51234
    print_table(ROWS, COLUMNS, "csv")
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[1] == {"graph": "b", "kendall_tau": "-0.25", "n": "4"}


def test_data_stats_formats(tmp_path):
    runner = CliRunner()
    table = runner.invoke(app, ["data", "stats", str(SHIPPED), "--no-validate", "--json", str(tmp_path / "s.json")])
    assert table.exit_code == 0 and "cpu_layout/train" in table.output and "nodes after pruning" in table.output
    rows = json.loads((tmp_path / "s.json").read_text())
    r = runner.invoke(app, ["data", "stats", str(SHIPPED), "--no-validate", "--format", "json"])
    assert json.loads(r.stdout) == rows
    r = runner.invoke(app, ["data", "stats", str(SHIPPED), "--no-validate", "--format", "csv"])
    parsed = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [p["group"] for p in parsed] == [row["group"] for row in rows] and int(parsed[0]["graphs"]) == rows[0]["graphs"]
