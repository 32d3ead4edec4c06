"""What the fuzz suite drives (issue 36): every command of the `graphcost` app, found by walking the
app (a new command or option is fuzzed without a change here), with base arguments that make a
command that accepts a value fail fast on a placeholder input instead of starting real work."""

from __future__ import annotations

import typing
from pathlib import Path

import typer.main

from graphcost.cli import app

# Base arguments per command: placeholder inputs (NOPE) so that an accepted value ends at the input
# check within a second; `collect --list` prints the selection and exits; `data download` gets a file
# as --data-dir (refused before any download). {tmp} is the case's own directory.
BASE: dict[str, list[str]] = {
    "train": ["--data-dir", "{tmp}/NOPE", "--no-progress", "--device", "cpu", "--out", "{tmp}/run"],
    "evaluate": ["{tmp}/NOPE", "--device", "cpu"],
    "rank": ["{tmp}/NOPE", "{tmp}/NOPE.npz", "--device", "cpu"],
    "predict": ["{tmp}/NOPE", "--out", "{tmp}/sub.csv", "--device", "cpu"],
    "collect": ["--list", "--out", "{tmp}/collected"],
    "tune": ["{tmp}/NOPE.py:make", "--out", "{tmp}/tuned"],
    "profile": ["{tmp}/NOPE.py:make"],
    "verify": ["{tmp}/NOPE"],
    "data kernels": ["{tmp}/NOPE", "--out", "{tmp}/kd"],
    "data download": ["-c", "tile:xla", "--data-dir", "{tmp}/A_FILE"],
    "data card": ["{tmp}/NOPE"],
    "data synth": ["-c", "tile:xla", "--out", "{tmp}/A_FILE/x"],
    "data stats": ["{tmp}/NOPE"],
    "data split-configs": ["{tmp}/NOPE.npz", "--out", "{tmp}/split"],
    "data from-proto": ["{tmp}/NOPE.pb", "--out", "{tmp}/proto"],
    "dag train": ["--dataset", "nope", "--out", "{tmp}/dagrun", "--device", "cpu"],
    "dag sample": ["{tmp}/NOPE", "--out", "{tmp}/s.npz", "--device", "cpu"],
    "dag evaluate": ["{tmp}/NOPE", "--device", "cpu"],
}

SPECIAL_VALUES = ["0", "-1", "99999999999999999999999", "1e308", "nan", "inf", "-inf", "x", "", "1.5"]


def commands() -> dict[str, object]:
    """'train', 'data synth', ... -> the click command, by walking the app."""
    found: dict[str, object] = {}

    def walk(group, prefix: str) -> None:
        for name, command in group.commands.items():
            full = f"{prefix}{name}"
            if hasattr(command, "commands"):
                walk(command, full + " ")
            else:
                found[full] = command

    walk(typer.main.get_command(app), "")
    return found


def number_kind(param) -> str | None:
    """'int' / 'float' for a numeric option (typer's own params or click's), else None."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        args = typing.get_args(descriptor.annotation) or (descriptor.annotation,)
        return "int" if int in args and bool not in args else "float" if float in args else None
    name = getattr(getattr(param, "type", None), "name", "")
    return "int" if name.startswith("integer") else "float" if name.startswith("float") else None


def numeric_options() -> list[tuple[str, str, str]]:
    """(command, option, kind) of every numeric option of every command."""
    out = []
    for name, command in commands().items():
        for param in command.params:
            kind = number_kind(param)
            opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
            if kind and opts:
                out.append((name, opts[0], kind))
    return out


def argv(command: str, tmp: Path, *extra: str) -> list[str]:
    """The command line of one case."""
    return [*command.split(), *(a.format(tmp=tmp) for a in BASE[command]), *extra]
