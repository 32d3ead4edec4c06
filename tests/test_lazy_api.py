"""graphcost.tune / compile_with / TuneResult / TunedConfig / GraphcostError: lazy at run time, visible to
type checkers."""

import ast
import importlib
from pathlib import Path

import graphcost


def test_type_checking_imports_name_every_lazy_attribute():
    tree = ast.parse(Path(graphcost.__file__).read_text(encoding="utf-8"))
    guarded = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    names = {alias.asname or alias.name for node in guarded for stmt in node.body if isinstance(stmt, ast.ImportFrom)
             for alias in stmt.names}
    assert names == set(graphcost._LAZY) and set(graphcost._LAZY) <= set(graphcost.__all__)


def test_lazy_attributes_resolve_to_their_modules_objects():
    for name, module in graphcost._LAZY.items():
        assert getattr(graphcost, name) is getattr(importlib.import_module(module), name)
    assert graphcost._LAZY["tune"] == "graphcost.tuning" and graphcost._LAZY["GraphcostError"] == "graphcost.errors"
