"""Where each kernel of an optimized module came from in the user's code: JAX's op names and source lines.

A profile names kernels after the optimized module's instructions (``ynn_fusion.5``,
``broadcast_divide_fusion``), names a user never wrote. XLA keeps, on every instruction it derives
from the user's program, the metadata JAX attached when tracing it::

    %dot_general.1 = f32[64,128]{1,0} dot(...), metadata={op_name="jit(fn)/dot_general" stack_frame_id=3}
    %add.2 = f32[8]{0} add(...), metadata={op_name="jit(f)/add" source_file="/home/me/prog.py" source_line=12}

The source line is either inline (``source_file`` / ``source_line``, older jaxlibs) or a
``stack_frame_id`` into the module's ``FileNames`` / ``FileLocations`` / ``StackFrames`` tables
(the innermost frame: JAX keeps only the user's frames). A fusion's origin is that of the
instructions inside the computation it calls (recursively through nested fusions), in their order;
a loop's or branch's is its own line's (its body's kernels are profiled, and described, apart).

`kernel_origins(module_text)` reads them from ``compiled.as_text()`` in one pass over its lines (the
proto fields graphcost decodes do not carry them). An instruction without metadata (XLA's own
copies, constants) has an empty origin; a module printed without metadata gives empty origins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s")
_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_CALLS = re.compile(r"\bcalls=%?([\w.\-]+)")
_OP_NAME = re.compile(r'\bop_name="((?:[^"\\]|\\.)*)"')
_SOURCE_FILE = re.compile(r'\bsource_file="((?:[^"\\]|\\.)*)"')
_SOURCE_LINE = re.compile(r"\bsource_line=(\d+)")
_FRAME = re.compile(r"\bstack_frame_id=(\d+)")
_TABLE_ROW = re.compile(r"^(\d+)\s+(.*)$")
_FIELD = re.compile(r"(\w+)=(\d+)")
_OUTER_JIT = re.compile(r"^jit\([^/]*\)/")
_INNER_JIT = re.compile(r"\bjit\(([^()/]*)\)")
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


@dataclass(frozen=True)
class Origin:
    """A kernel's op names (JAX's, e.g. ``jit(fn)/dot_general``) and source lines (``(file, line)``), each
    distinct and in the order its instructions appear."""

    ops: tuple[str, ...] = ()
    sources: tuple[tuple[str, int], ...] = ()

    def short_ops(self) -> list[str]:
        """The op names without the outer ``jit(NAME)/`` every one of them starts with, an inner jitted
        function by its name (``jit(block)/jit(relu)/max`` -> ``relu/max``)."""
        return list(dict.fromkeys(_INNER_JIT.sub(r"\1", _OUTER_JIT.sub("", op)) for op in self.ops))

    def lines(self) -> str:
        """``prog.py:6,7; layers.py:30``: the source lines by file (file names without their folder)."""
        by_file: dict[str, list[int]] = {}
        for path, line in self.sources:
            by_file.setdefault(path.replace("\\", "/").rsplit("/", 1)[-1], []).append(line)
        return "; ".join(f"{name}:{','.join(map(str, lines))}" for name, lines in by_file.items())

    def to_json(self) -> dict:
        return {"ops": list(self.ops), "sources": [f"{path}:{line}" for path, line in self.sources]}


def _unquote(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")


def _frame_tables(lines: list[str]) -> dict[int, tuple[str, int]]:
    """``{stack frame id: (file, line)}`` of the module's FileNames / FileLocations / StackFrames tables."""
    section = ""
    files: dict[int, str] = {}
    locations: dict[int, tuple[int, int]] = {}  # location -> (file id, line)
    frames: dict[int, int] = {}  # frame -> location
    for line in lines:
        text = line.strip()
        if text in _TABLES:
            section = text
            continue
        m = _TABLE_ROW.match(text) if section else None
        if not m:  # a table's rows are contiguous: anything else ends it
            section = ""
            continue
        key, rest = int(m.group(1)), m.group(2)
        if section == "FileNames":
            files[key] = _unquote(rest.strip().strip('"'))
        elif section == "FileLocations":
            fields = dict((k, int(v)) for k, v in _FIELD.findall(rest))
            locations[key] = (fields.get("file_name_id", 0), fields.get("line", 0))
        elif section == "StackFrames":
            frames[key] = dict((k, int(v)) for k, v in _FIELD.findall(rest)).get("file_location_id", 0)
    out = {}
    for frame, loc in frames.items():
        if loc in locations and locations[loc][0] in files:
            out[frame] = (files[locations[loc][0]], locations[loc][1])
    return out


def _own(line: str, frames: dict[int, tuple[str, int]]) -> tuple[str | None, tuple[str, int] | None]:
    """The op name and source line of one instruction line (None where it has none)."""
    at = line.find("metadata={")
    if at < 0:
        return None, None
    meta = line[at:]
    op = _OP_NAME.search(meta)
    source = None
    file, num = _SOURCE_FILE.search(meta), _SOURCE_LINE.search(meta)
    if file and num:
        source = (_unquote(file.group(1)), int(num.group(1)))
    else:
        frame = _FRAME.search(meta)
        if frame:
            source = frames.get(int(frame.group(1)))
    return (_unquote(op.group(1)) if op else None), source


def kernel_origins(module_text: str) -> dict[str, Origin]:
    """``{instruction name: Origin}`` for every instruction of an optimized module's text (module docstring)."""
    lines = module_text.splitlines()
    frames = _frame_tables(lines)
    own: dict[str, tuple[str | None, tuple[str, int] | None]] = {}
    calls: dict[str, list[str]] = {}
    body: dict[str, list[str]] = {}  # computation -> its instructions, in order
    current = None
    for line in lines:
        inst = _INSTRUCTION.match(line)
        if inst and current is not None:
            name = inst.group(1)
            body[current].append(name)
            own[name] = _own(line, frames)
            head = line.split("metadata={", 1)[0]
            calls[name] = _CALLS.findall(head)
            continue
        comp = _COMPUTATION.match(line)
        if comp and "=" not in line.split("(", 1)[0]:
            current = comp.group(1)
            body[current] = []
        elif line.strip() == "}":
            current = None

    memo: dict[str, Origin] = {}

    def origin(name: str, seen: frozenset[str]) -> Origin:
        if name in memo:
            return memo[name]
        ops: dict[str, None] = {}
        sources: dict[tuple[str, int], None] = {}
        for comp in calls.get(name, []):
            if comp in seen:
                continue
            for inner in body.get(comp, []):
                sub = origin(inner, seen | {comp})
                ops.update(dict.fromkeys(sub.ops))
                sources.update(dict.fromkeys(sub.sources))
        op, source = own.get(name, (None, None))
        if not ops and op:  # the called computation carried none: the instruction's own line
            ops[op] = None
        if not sources and source:
            sources[source] = None
        memo[name] = Origin(tuple(ops), tuple(sources))
        return memo[name]

    return {name: origin(name, frozenset()) for name in own}
