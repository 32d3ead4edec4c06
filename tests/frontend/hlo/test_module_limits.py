"""What XLA can take, checked before XLA runs (`graphcost.frontend.hlo.module_limits`): the longest chain of
fusible instructions, and nesting in HLO text; and the CLI refusing, in one line, a module past either
(a 20,000-instruction chain of sines and a parameter of deeply nested tuple type crashed `rank` and `profile`
with SIGSEGV) while ranking a 20,000-instruction module whose chains XLA can fuse."""

from __future__ import annotations

import pytest
from cli_asserts import invoke, one_line_error

from graphcost.frontend.hlo.hlo_proto import HloComputation, HloInstruction, HloModule
from graphcost.frontend.hlo.module_limits import (
    FUSIBLE_CHAIN_MAX, TEXT_NESTING_MAX, longest_fusible_chain, text_nesting_problem,
)  # fmt: skip


def chain_text(n: int, dot_every: int | None = None) -> str:
    """HLO text of a chain of `n` sines on f32[4,4] after two parameters, every `dot_every`-th a dot."""
    lines = ["HloModule chain", "", "ENTRY main {", "  p0 = f32[4,4]{1,0} parameter(0)",
             "  p1 = f32[4,4]{1,0} parameter(1)"]
    prev = "p0"
    for i in range(n):
        op = (f"dot({prev}, p1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
              if dot_every and (i + 1) % dot_every == 0 else f"sine({prev})")
        lines.append(f"  {'ROOT ' if i == n - 1 else ''}x{i} = f32[4,4]{{1,0}} {op}")
        prev = f"x{i}"
    return "\n".join([*lines, "}", ""])


def deep_tuple_text(depth: int) -> str:
    shape = "f32[4]"
    for _ in range(depth):
        shape = f"({shape})"
    return f"HloModule deep_tuple\n\nENTRY main {{\n  p0 = {shape} parameter(0)\n  ROOT c = f32[] constant(1)\n}}\n"


def _module(edges: dict[str, tuple[str, list[str]]]) -> HloModule:
    ids = {name: i + 1 for i, name in enumerate(edges)}
    insts = [HloInstruction(name=n, opcode=op, id=ids[n], operand_ids=[ids[o] for o in ops])
             for n, (op, ops) in edges.items()]
    return HloModule(name="m", computations=[HloComputation(name="main", instructions=insts, id=1, root_id=len(insts))])


def test_the_longest_chain_counts_fusible_instructions_and_a_dot_ends_it():
    m = _module({"p": ("parameter", []), "a": ("sine", ["p"]), "b": ("add", ["a", "p"]), "d": ("dot", ["b", "p"]),
                 "c": ("exponential", ["d"]), "e": ("multiply", ["c", "b"])})
    chain = longest_fusible_chain(m)
    assert (chain.length, chain.computation, chain.instruction) == (3, "main", "e")  # a -> b -> e (the dot ends a, b)


def test_a_long_chain_is_measured_without_recursion():
    n = 20_000
    edges = {"p": ("parameter", [])} | {f"x{i}": ("sine", [f"x{i - 1}" if i else "p"]) for i in range(n)}
    assert longest_fusible_chain(_module(edges)).length == n


def test_text_nesting_skips_quoted_strings_and_names_the_parameter():
    quoted = 'HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0), metadata={op_name="a\\"' + "(" * 500 + '"}\n}\n'
    assert text_nesting_problem(quoted) is None
    assert text_nesting_problem(deep_tuple_text(TEXT_NESTING_MAX - 2)) is None
    problem = text_nesting_problem(deep_tuple_text(10_000))
    assert "line 4 (parameter 'p0')" in problem and str(TEXT_NESTING_MAX) in problem
    assert "braces" in text_nesting_problem("HloModule m\n" + "{" * 1000)


def test_rank_refuses_a_chain_xla_cannot_compile_in_one_line(tmp_path):
    path = tmp_path / "long_chain.hlo"
    path.write_text(chain_text(20_000))
    one_line_error(invoke("rank", path), path, "20000 fusible instructions", f"past the {FUSIBLE_CHAIN_MAX}", "'x19999'")


@pytest.mark.parametrize("depth", [100, 10_000])
def test_rank_and_profile_refuse_a_deeply_nested_tuple_parameter_in_one_line(tmp_path, depth):
    path = tmp_path / "deep_tuple.hlo"
    path.write_text(deep_tuple_text(depth))
    for command in ("rank", "profile"):
        one_line_error(invoke(command, path), path, "parameter 'p0'", f"more than {TEXT_NESTING_MAX} levels")


@pytest.mark.slow  # compiles 20,000 instructions three times: tens of seconds on a busy 2-core machine
def test_rank_takes_a_20000_instruction_module_whose_chains_xla_can_fuse(tmp_path):
    path = tmp_path / "chain_dots.hlo"
    path.write_text(chain_text(20_000, dot_every=100))
    result = invoke("rank", path, "--configs", "2", "--format", "json")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
