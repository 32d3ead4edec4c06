"""CLI assertions shared by the bad-input tests of every directory (tests/ is put on sys.path by
tests/conftest.py, so `from cli_asserts import ...` works from any test directory)."""

from __future__ import annotations

from typer.testing import CliRunner

from graphcost.cli import app


def invoke(*args):
    """`graphcost ARGS...` in process (arguments stringified); the click Result."""
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line_error(result, *needles) -> str:
    """Exit code 1, exactly one 'error: ...' line holding every needle, no traceback; that line."""
    assert result.exit_code == 1, (result.exit_code, result.output, repr(result.exception))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    for needle in needles:
        assert str(needle) in lines[0], (needle, lines[0])
    return lines[0]


def count_calls(monkeypatch, calls, module, attr: str, key=None) -> None:
    """Replace `module.attr` by a wrapper that counts its calls in `calls` (a Counter) under `attr`, or under
    `key(*args)`: what the one-validation-pass tests count (a command calls each library check once)."""
    real = getattr(module, attr)

    def counted(*args, **kwargs):
        calls[key(*args) if key is not None else attr] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, attr, counted)


TINY_PROGRAM = '''
import jax.numpy as jnp

def make():
    a = jnp.ones((4, 4))
    return (lambda a: (a @ a).sum()), (a,)
'''
