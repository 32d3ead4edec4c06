"""graphcost.tune / compile_with / TuneResult / TunedConfig: lazy at run time, visible to type checkers."""

import ast
from pathlib import Path

import graphcost


def test_type_checking_imports_name_every_lazy_attribute():
    tree = ast.parse(Path(graphcost.__file__).read_text(encoding="utf-8"))
    guarded = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    names = {alias.asname or alias.name for node in guarded for stmt in node.body if isinstance(stmt, ast.ImportFrom)
             for alias in stmt.names}
    assert names == set(graphcost._LAZY) and set(graphcost._LAZY) <= set(graphcost.__all__)


def test_lazy_attributes_resolve_to_the_tuning_objects():
    from graphcost import tuning

    for name in graphcost._LAZY:
        assert getattr(graphcost, name) is getattr(tuning, name)
