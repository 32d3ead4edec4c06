"""Tables the commands print (`evaluate`, `data stats`, `rank`): a rich table on a terminal, or the
same rows as JSON or CSV for a program to read (``--format json|csv``), on stdout.

With ``--format json`` or ``csv`` stdout holds only the data; the commands' other lines go to
stderr (`note`).
"""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass
from typing import Any, Callable

import typer

FORMAT_HELP = "a table for people; json or csv for programs (stdout then holds only the data)"


@dataclass(frozen=True)
class Column:
    """One column: the row key, its header, and how the table shows a value (JSON and CSV keep it raw);
    `cell`, when given, builds the shown text from the whole row instead."""

    key: str
    header: str = ""
    show: Callable[[Any], str] = str
    right: bool = True  # numbers right-aligned
    cell: Callable[[dict], str] | None = None

    @property
    def title(self) -> str:
        return self.header or self.key


def note(message: str, fmt: str) -> None:
    """A line for the user: on stdout beside a table, on stderr when stdout holds JSON or CSV."""
    typer.echo(message, err=fmt != "table")


def print_table(rows: list[dict], columns: list[Column], fmt: str, *, data: Any = None,
                footer: dict | None = None, caption: str | None = None, csv_keys: list[str] | None = None,
                whole: bool = False) -> None:
    """Print `rows` as `fmt` (table | json | csv) on stdout.

    Args:
        rows: one dict per row, keyed by the columns' keys (more keys may be present).
        columns: what the table and the CSV show, in order.
        fmt: table, json or csv.
        data: what JSON prints (default: `rows`, plus `footer` as a last row).
        footer: a last row set apart (a mean); CSV writes it as a last row too.
        caption: a line under the table (table format only).
        csv_keys: the CSV's columns (default: the columns' keys).
        whole: every column whole even on a terminal narrower than the table (a table asked for wide).
    """
    every = rows + ([footer] if footer else [])
    if fmt == "json":
        typer.echo(json.dumps(every if data is None else data, indent=1, default=_plain))
        return
    if fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        keys = csv_keys or [c.key for c in columns]
        writer.writerow(keys)
        for row in every:
            writer.writerow(["" if row.get(k) is None else row.get(k) for k in keys])
        return
    from rich import box
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for c in columns:
        table.add_column(c.title, justify="right" if c.right else "left", no_wrap=True)
    for row in rows:
        table.add_row(*(_cell(c, row) for c in columns))
    if footer:
        table.add_section()
        table.add_row(*(_cell(c, footer) for c in columns))
    console = Console(file=sys.stdout, highlight=False)
    if whole or not console.is_terminal:  # a pipe or a file: every column whole, however wide
        wide = Measurement.get(console, console.options.update_width(100_000), table).maximum
        console = Console(file=sys.stdout, highlight=False, width=max(80, wide))
    console.print(table)
    if caption:
        typer.echo(caption)  # one line, not wrapped to the table's width


def _cell(column: Column, row: dict) -> str:
    if column.cell is not None:
        return column.cell(row)
    value = row.get(column.key)
    return "" if value is None else column.show(value)


def _plain(value):
    """JSON for numpy scalars and paths."""
    if hasattr(value, "item"):
        return value.item()
    return str(value)
