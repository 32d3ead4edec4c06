"""What XLA's CPU compiler and HLO text parser can take, checked before either is called.

Both recurse on the C stack, so past some size they crash the whole process (SIGSEGV) instead of
failing; the only safe answer is to measure that size and refuse a module beyond it, in one line,
before XLA sees it.

**A chain of fusible instructions.** XLA's CPU fusion puts a run of loop-fusible instructions (every
elementwise op, broadcast, reshape, slice, reduce, ...) into ONE fusion, however long. Both of its
kernel emitters then walk that fusion's expression graph recursively, one level per fused
instruction: the legacy emitter (``xla_cpu_use_fusion_emitters=false``, part of the flag space) in
``FusedIrEmitter`` / ``ElementalIrEmitter::MakeElementGenerator``, the default one in
``SymbolicTileAnalysis``. The compile runs on a thread of XLA's own pool, whose stack size XLA sets
itself (8 MiB; neither ``ulimit -s`` nor ``threading.stack_size`` nor glibc's default thread
attributes change it). Measured with jaxlib 0.10 on x86-64, a chain of ``sine`` on f32[4]: the legacy
emitter crashes between 5,937 and 6,406 fused instructions, the default one between 20,000 and 40,000;
a mixed chain (14 elementwise kinds, compare/select and convert pairs, f32[8,16]) whose longest path
is 4,371 compiles under both. `longest_fusible_chain` is the longest path of such instructions in
any computation (an upper bound on the depth of any fusion XLA can form there: a fusion is a
connected set of them), and `FUSIBLE_CHAIN_MAX` (4,096) the longest accepted. Real modules stay far
below: a dot, convolution, custom call, sort, while or call ends every chain (the 100,000-instruction
chain of `benchmarks/bench_module_size.py`, a dot every 100 instructions, has a longest chain of 99).

**Nesting in HLO text.** XLA's text parser recurses once per nested tuple type (``((((f32[4]))))``)
or brace; a parameter nested 10,000 deep crashes it (2,000 parses, then graphcost's own reader refuses
tuples nested past ``hlo_proto.MAX_SHAPE_DEPTH``). `text_nesting_problem` refuses text nested past
`TEXT_NESTING_MAX` (that bound plus the two levels an operand list and a tuple-typed operand add)
before the parser runs, naming the line and its instruction.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from graphcost.frontend.hlo.hlo_proto import MAX_SHAPE_DEPTH, HloModule

FUSIBLE_CHAIN_MAX = 4096

# Opcodes XLA's CPU fusion can put into a loop fusion (elementwise, and `CanBeLoopFused`'s list), plus a
# few it does not (reduce-window, scatter, map), counted too: an over-long count refuses early, never crashes.
FUSIBLE_OPCODES = frozenset("""
abs add and atan2 bitcast bitcast-convert broadcast cbrt ceil clamp clz compare complex concatenate constant convert
copy cos divide dynamic-slice dynamic-update-slice erf exponential exponential-minus-one floor gather imag iota
is-finite log log-plus-one logistic map maximum minimum multiply negate not or pad popcnt power real reduce
reduce-precision reduce-window remainder reshape reverse round-nearest-afz round-nearest-even rsqrt scatter select
shift-left shift-right-arithmetic shift-right-logical sign sine slice sqrt stochastic-convert subtract tan tanh
transpose xor
""".split())

TEXT_NESTING_MAX = MAX_SHAPE_DEPTH + 2
_NESTING_CHARS = re.compile(r'["(){}\\\n]')


@dataclass(frozen=True)
class FusibleChain:
    """The longest chain of fusible instructions of a module: its length, computation and last instruction."""

    length: int
    computation: str = ""
    instruction: str = ""


def longest_fusible_chain(module: HloModule) -> FusibleChain:
    """The longest path of `FUSIBLE_OPCODES` instructions along operand edges, over every computation.

    Iterative (Kahn's order over each computation's operand graph), so a chain of any length costs
    O(instructions + operands) time and no Python recursion. An operand id that names no instruction of
    the computation is ignored here (the featurizer reports it)."""
    best = FusibleChain(0)
    for comp in module.computations:
        insts = {inst.id: inst for inst in comp.instructions}
        users: dict[int, list[int]] = {i: [] for i in insts}
        waiting = {}
        for inst in comp.instructions:
            ops = {o for o in inst.operand_ids if o in insts}
            waiting[inst.id] = len(ops)
            for o in ops:
                users[o].append(inst.id)
        depth = dict.fromkeys(insts, 0)
        ready = deque(i for i, n in waiting.items() if n == 0)
        while ready:
            i = ready.popleft()
            inst = insts[i]
            if inst.opcode in FUSIBLE_OPCODES:
                d = 1 + max((depth[o] for o in inst.operand_ids if o in insts), default=0)
                depth[i] = d
                if d > best.length:
                    best = FusibleChain(d, comp.name, inst.name)
            for u in users[i]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    ready.append(u)
    return best


def fusible_chain_problem(module: HloModule) -> str | None:
    """One line when the module's longest fusible chain is past `FUSIBLE_CHAIN_MAX` (module docstring), else None."""
    chain = longest_fusible_chain(module)
    if chain.length <= FUSIBLE_CHAIN_MAX:
        return None
    return (f"computation {chain.computation!r}: a chain of {chain.length} fusible instructions (elementwise and "
            f"the like) ends at {chain.instruction!r}, past the {FUSIBLE_CHAIN_MAX} XLA's CPU compiler can fuse "
            "without overflowing its compile thread's stack (it would crash); a dot, a custom call "
            "or a while loop ends a chain")


def text_nesting_problem(text: str) -> str | None:
    """One line naming the line and instruction where HLO `text` nests parentheses or braces past
    `TEXT_NESTING_MAX` levels (module docstring), else None. Quoted strings (metadata, backend configs)
    are skipped; one pass, no recursion."""
    depth = {"(": 0, "{": 0}
    closing = {")": "(", "}": "{"}
    line_no, quoted, escaped_at = 1, False, -1
    for match in _NESTING_CHARS.finditer(text):
        ch = match.group()
        if ch == "\n":
            line_no += 1
        elif quoted:
            if match.start() == escaped_at:  # the character after a backslash
                continue
            if ch == "\\":
                escaped_at = match.start() + 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "\\":
            continue
        elif ch in depth:
            depth[ch] += 1
            if depth[ch] > TEXT_NESTING_MAX:
                start = text.rfind("\n", 0, match.start()) + 1
                end = text.find("\n", match.start())
                line = text[start:end if end >= 0 else len(text)]
                what = "parentheses (tuple types)" if ch == "(" else "braces"
                return (f"line {line_no}{_instruction(line)}: {what} nested more than {TEXT_NESTING_MAX} levels "
                        f"deep; graphcost reads tuple types nested at most {MAX_SHAPE_DEPTH} levels (XLA's HLO text "
                        "parser recurses once per level and crashes on thousands)")
        else:
            depth[closing[ch]] = max(0, depth[closing[ch]] - 1)
    return None


def _instruction(line: str) -> str:
    """`` (parameter 'p0')`` / `` (instruction 'x')`` for an instruction line, else ''."""
    head, eq, rest = line.partition("=")
    name = head.strip().removeprefix("ROOT").strip()
    if not eq or not name or len(name) > 80 or " " in name:
        return ""
    return f" ({'parameter' if 'parameter(' in rest else 'instruction'} {name!r})"


__all__ = ["FUSIBLE_CHAIN_MAX", "FUSIBLE_OPCODES", "FusibleChain", "TEXT_NESTING_MAX", "fusible_chain_problem",
           "longest_fusible_chain", "text_nesting_problem"]
