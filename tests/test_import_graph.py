"""The import graph of src/graphcost has no circles and no arrow up a floor.

Every package sits on a floor (FLOORS; the package docstring of `graphcost` draws them). A module
may import its own unit or a unit on a strictly lower floor. Every import counts: those inside
functions (the lazy ones that keep `graphcost --help` fast) and under `if TYPE_CHECKING:` too.
`from X import n` is an import of the module `X.n` when that is a module of the tree, else of `X`.
Importing `a.b.c` runs `a/__init__` and `a/b/__init__` as well; those implicit edges are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import graphcost

FRONTEND = "graphcost.frontend"  # its sub-packages named through this, so tree-wide import rewrites (sed) skip them
FLOORS = {
    "graphcost.errors": -2,  # the root of every error class, below everything that raises one
    "graphcost.guards": -1,  # atomic writes, output-path checks, the bounds of every number: what every verb reads and writes through
    "graphcost.memory": 0, "graphcost.threads": 0, "graphcost.metrics": 0,
    "graphcost.datasets": 0,
    "graphcost.pretrained": 0,
    "graphcost.data": 1,
    "graphcost.models": 2, "graphcost.runs": 2, FRONTEND + ".hlo": 2,
    "graphcost.inference": 3, FRONTEND + ".programs": 3, FRONTEND: 3,
    "graphcost.train": 4, "graphcost.layerdag": 4, "graphcost.measure": 4,
    "graphcost.kernels": 5,  # the kernel path: above measure (profiled passes) and frontend, below collect and tuning
    "graphcost.collect": 6,
    "graphcost.tuning": 7,
    "graphcost.workload": 8,  # the verbs on a user's program (rank, profile, verify): above the search they use
    "graphcost.commands": 9, "graphcost": 9,
    "graphcost.cli": 10, "graphcost.__main__": 11,
}  # fmt: skip
# These two name one module each (the package's __init__), not everything below it: a new module
# directly in src/graphcost/ or src/graphcost/frontend/ has no floor until it is given one here.
EXACT = {"graphcost", FRONTEND}

Edge = tuple[str, str, int]  # (target module, file, line)


def unit_of(module: str, floors: dict[str, int] = FLOORS) -> str | None:
    """The longest key of `floors` naming `module` or a package above it (by dotted components)."""
    units = [k for k in floors if module == k or (k not in EXACT and module.startswith(k + "."))]
    return max(units, key=len, default=None)


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under `root` (the directory of the package `graphcost`)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = ("graphcost", *path.relative_to(root).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _resolve(name: str, known: set[str]) -> str:
    """`name` if it is a module of the tree, else the longest module above it."""
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(module: str, path: Path, known: set[str], root: Path) -> list[Edge]:
    """Every graphcost module `path` imports, anywhere in the file, with the line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    rel = path.relative_to(root.parent).as_posix()
    edges = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [_resolve(alias.name, known) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x / from ..a import b
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else _resolve(base, known) for a in node.names]
        else:
            continue
        edges += [(t, rel, node.lineno) for t in targets
                  if (t == "graphcost" or t.startswith("graphcost.")) and t != module]  # fmt: skip
    return edges


def import_graph(root: Path) -> dict[str, list[Edge]]:
    """module -> the graphcost modules it imports, for the package in `root`."""
    names = module_names(root)
    return {m: imports_of(m, p, set(names), root) for m, p in names.items()}


def _circles(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _, _ in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def problems(graph: dict[str, list[Edge]], floors: dict[str, int] = FLOORS) -> list[str]:
    """One line per circle, per arrow up (or across) a floor, and per module without a floor."""
    out = []
    for members in _circles(graph):
        inside = set(members)
        edges = [f"{f}:{line} {a} -> {b}" for a in members for b, f, line in graph.get(a, []) if b in inside]
        out.append("import circle: " + "; ".join(edges))
    for a in sorted(graph):
        ua = unit_of(a, floors)
        if ua is None:
            out.append(f"{a}: no floor (add its package to FLOORS)")
            continue
        for b, f, line in graph[a]:
            ub = unit_of(b, floors)
            if ub is not None and ub != ua and floors[ub] >= floors[ua]:
                out.append(f"{f}:{line} {a} -> {b} (floor {floors[ua]} -> {floors[ub]})")
    return out


def test_imports_go_down_the_floors_without_circles():
    root = Path(graphcost.__file__).parent
    graph = import_graph(root)
    assert len(graph) > 100 and any(graph.values())  # the whole tree was read
    found = problems(graph)
    assert not found, "\n".join(found)


def test_the_check_finds_a_circle_and_an_arrow_up(tmp_path):
    """A fake package: data.a -> data.b -> data.a (a circle, one import inside a function), and
    memory (floor 0) importing data (floor 1) inside a function; data.c -> memory is fine."""
    files = {
        "__init__.py": "",
        "memory.py": "def f():\n    from graphcost.data import a\n",
        "data/__init__.py": "",
        "data/c.py": "import graphcost.memory as memory\nfrom graphcost.memory import trim\n",
        "data/a.py": "from graphcost.data.b import x\n",
        "data/b.py": "x = 1\n\n\ndef g():\n    import graphcost.data.a\n",
    }
    root = tmp_path / "graphcost"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    found = problems(import_graph(root))
    assert found == [
        "import circle: graphcost/data/a.py:1 graphcost.data.a -> graphcost.data.b; "
        "graphcost/data/b.py:5 graphcost.data.b -> graphcost.data.a",
        "graphcost/memory.py:2 graphcost.memory -> graphcost.data.a (floor 0 -> 1)",
    ], found
    assert unit_of("graphcost.data.datasets.tpugraphs") == "graphcost.data"  # components, not string prefixes
    assert unit_of("graphcost.datasets") == "graphcost.datasets" and unit_of("graphcost.newmodule") is None


def test_tuning_never_imports_train():
    """The tuner scores through `graphcost.inference` (a trained model's use), never through the
    training code: no module of graphcost.tuning reaches graphcost.train, directly or through others."""
    root = Path(graphcost.__file__).parent
    graph = import_graph(root)
    reached, todo = set(), [m for m in graph if m == "graphcost.tuning" or m.startswith("graphcost.tuning.")]
    assert len(todo) > 5
    while todo:
        for target, _, _ in graph.get(todo.pop(), []):
            if target not in reached:
                reached.add(target)
                todo.append(target)
    assert any(m.startswith("graphcost.inference.") for m in reached)  # it does score with a trained model
    assert not [m for m in reached if m == "graphcost.train" or m.startswith("graphcost.train.")]


def test_the_scripts_of_benchmarks_and_release_form_no_import_circle():
    """issue 66: the scripts import one another by their bare names (each puts its siblings' directories on
    sys.path); that graph has no circle either (bench_real <-> remeasure_suite_tables was one)."""
    repo = Path(graphcost.__file__).resolve().parents[2]
    scripts = {p.stem: p for d in ("benchmarks", "release") for p in sorted((repo / d).rglob("*.py"))}
    edges: dict[str, set[str]] = {name: set() for name in scripts}
    for name, path in scripts.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module.split(".")[0]]
            elif isinstance(node, ast.Import):
                targets = [a.name.split(".")[0] for a in node.names]
            else:
                continue
            edges[name] |= {t for t in targets if t in scripts and t != name}
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = 1
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                return [*path, name, target]
            if target not in state and (found := visit(target, [*path, name])):
                return found
        state[name] = 2
        return None

    for name in sorted(scripts):
        if name not in state:
            circle = visit(name, [])
            assert circle is None, f"import circle among the scripts: {' -> '.join(circle)}"
