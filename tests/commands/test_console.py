"""The library logs through the `graphcost` logger hierarchy; the CLI shows those lines (through
tqdm) only while a command runs, and an application can silence or redirect them."""

from __future__ import annotations

import logging

from tqdm import tqdm
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.commands.console import library_messages


def test_cli_shows_library_lines_above_a_bar_then_restores_the_logger(capsys):
    root = logging.getLogger("graphcost")
    before = (list(root.handlers), root.level, root.propagate)
    with library_messages():
        with tqdm(total=3, desc="work") as bar:
            logging.getLogger("graphcost.train.trainer").info("epoch 1/3: valid kendall_tau 0.5")
            logging.getLogger("graphcost.train.trainer").debug("not shown")
            bar.update(1)
    out = capsys.readouterr().out
    assert "epoch 1/3: valid kendall_tau 0.5" in out and "not shown" not in out
    assert (list(root.handlers), root.level, root.propagate) == before  # nothing left behind


def test_an_application_can_silence_or_redirect_the_library(caplog, capsys):
    from graphcost.tuning import tuner

    assert tuner.log.name.startswith("graphcost.")  # the library's loggers hang below "graphcost"
    with caplog.at_level(logging.INFO, logger="graphcost"):
        tuner.log.info("re-measuring the 2 best")
    assert [r.getMessage() for r in caplog.records] == ["re-measuring the 2 best"]  # redirected (to caplog)
    logging.getLogger("graphcost").setLevel(logging.ERROR)  # silenced
    try:
        tuner.log.info("hidden")
        tuner.log.warning("hidden too")
    finally:
        logging.getLogger("graphcost").setLevel(logging.NOTSET)
    assert "hidden" not in capsys.readouterr().err


def test_every_cli_invocation_restores_the_logger():
    root = logging.getLogger("graphcost")
    before = (list(root.handlers), root.level, root.propagate)
    assert CliRunner().invoke(app, ["--version"]).exit_code == 0
    assert CliRunner().invoke(app, ["data", "stats", "/nonexistent"]).exit_code != 0
    assert (list(root.handlers), root.level, root.propagate) == before


def test_the_library_does_not_print():
    """No print() in library modules (commands/ and the CLI are the console; `__main__` blocks of
    helper processes talk to their parent on stdout/stderr)."""
    import ast
    from pathlib import Path

    import graphcost

    pkg = Path(graphcost.__file__).parent
    offenders = []
    for path in pkg.rglob("*.py"):
        rel = path.relative_to(pkg).as_posix()
        if rel.startswith("commands/") or rel in ("cli.py", "__main__.py"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        main_blocks = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        helpers = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                   for block in main_blocks if n.name in ast.unparse(block)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                owner = next((f.name for f in tree.body if isinstance(f, ast.FunctionDef)
                              and f.lineno <= node.lineno <= f.end_lineno), None)
                if owner not in helpers:
                    offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, offenders


def test_progress_bars_are_sparse_when_stderr_is_redirected(monkeypatch):
    """issue 67: with output redirected, ~1,200 carriage-return updates buried train's run: and estimate: lines."""
    import io
    import time

    from tqdm import tqdm

    from graphcost.commands.console import sparse_progress_when_redirected

    monkeypatch.delenv("TQDM_MININTERVAL", raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal
    buf = io.StringIO()
    with sparse_progress_when_redirected():
        for _ in tqdm(range(400), file=buf):
            time.sleep(0.001)
    assert buf.getvalue().count("\r") <= 3  # the first and the last; was ~10 per second
    again = io.StringIO()
    for _ in tqdm(range(400), file=again):  # after the block: tqdm as it was
        time.sleep(0.001)
    assert again.getvalue().count("\r") > 3
