"""Every error class graphcost defines sits under `graphcost.GraphcostError` and keeps its builtin.

Read from the source (no imports, so optional extras do not hide a module): a class is an error
class when a base is a builtin exception or another error class of the tree. The interrupt
signals (`KeyboardInterrupt` subclasses), private classes and the trainer's test seam are not errors
a user diagnoses, and stay outside.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

import graphcost
from graphcost.guards.atomic import OutputExistsError
from graphcost.errors import GraphcostError
from graphcost.runs.run_json import RunInfoError

ROOT = Path(graphcost.__file__).resolve().parent
BUILTIN_EXCEPTIONS = {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}


def error_classes() -> dict[str, tuple[list[str], str]]:
    """Class name -> (base names, file) of every class of the tree with a base that is an exception."""
    classes = {}
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases]
                classes[node.name] = (bases, path.relative_to(ROOT).as_posix())
    errors: dict[str, tuple[list[str], str]] = {}
    grew = True
    while grew:  # a class is an error when a base is a builtin exception or an error already found
        grew = False
        for name, (bases, where) in classes.items():
            if name not in errors and any(b in BUILTIN_EXCEPTIONS or b in errors for b in bases):
                errors[name] = (bases, where)
                grew = True
    return errors


def _rooted(name: str, errors: dict) -> bool:
    bases = errors[name][0]
    return "GraphcostError" in bases or any(b in errors and _rooted(b, errors) for b in bases)


def _interrupt(name: str, errors: dict) -> bool:
    bases = errors[name][0]
    return "KeyboardInterrupt" in bases or any(b in errors and _interrupt(b, errors) for b in bases)


def test_every_error_class_is_under_the_root():
    errors = error_classes()
    assert len(errors) >= 20  # the walk found the tree's errors (a broken walk must not pass)
    loose = [f"{where}: {name}" for name, (_, where) in errors.items()
             if name != "GraphcostError" and not name.startswith("_")
             and not _interrupt(name, errors) and not _rooted(name, errors)]
    assert not loose, f"error classes outside graphcost.GraphcostError: {loose}"


@pytest.mark.parametrize("error, builtin", [(OutputExistsError, FileExistsError), (RunInfoError, ValueError)])
def test_rooted_errors_keep_their_builtin(error, builtin):
    err = error("x.json: field 'seed' must be an integer")
    assert isinstance(err, GraphcostError) and isinstance(err, builtin)
    with pytest.raises(builtin):  # callers that catch the builtin keep working
        raise err
    assert graphcost.GraphcostError is GraphcostError
