"""The `graphcost` command line: one typer app; each command module registers its own thin commands.

Subcommands live in `graphcost.commands.*` (one module per command or group); they parse arguments
and call the library. Heavy imports (torch, jax) happen inside the command functions so `--help`
stays fast.
"""

from typing import Any

import typer

from graphcost import __version__
from graphcost.commands import collect, dag, data, evaluate, predict, profile, rank, train, tune, verify
from graphcost.commands.numbers import GuardedGroup

# Plain click help (rich_markup_mode=None): rich's four-column option tables squeeze the option
# names and help into a few characters each at 80 columns (`--checkpoint-eve…`); click's two
# columns keep every option whole and wrap its help beneath.
# cls: every integer / float option bounded before a command parses its arguments (commands/numbers.py).
HELP: dict[str, Any] = {"rich_markup_mode": None, "context_settings": {"max_content_width": 100}, "cls": GuardedGroup}

app = typer.Typer(
    help="graphcost: learned performance models of tensor programs (TpuGraphs, TGraph, LayerDAG).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    **HELP,
)

data_app = typer.Typer(help="TpuGraphs-schema data: download, synthesize, convert, inspect.", no_args_is_help=True,
                       **HELP)
data.register(data_app)  # download, card, synth, stats, split-configs, from-proto
app.add_typer(data_app, name="data")

train.register(app)  # in this order in `graphcost --help`
evaluate.register(app)
rank.register(app)
predict.register(app)
collect.register(app)
tune.register(app)
profile.register(app)
verify.register(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"graphcost {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """graphcost: learned performance models of tensor programs (TpuGraphs, TGraph, LayerDAG)."""
    from graphcost.commands.console import library_messages, sparse_progress_when_redirected

    ctx.with_resource(library_messages())  # the library's log lines, for as long as the command runs
    ctx.with_resource(sparse_progress_when_redirected())  # a redirected log is not buried in bar updates


dag_app = typer.Typer(help="LayerDAG: train, sample and evaluate a generative model of DAGs.", no_args_is_help=True,
                      **HELP)
dag.register(dag_app)
app.add_typer(dag_app, name="dag")


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()


def __getattr__(name: str):
    """`click_command`: the click command behind the typer app, for the docs' generated CLI reference
    (docs/cli.md, mkdocs-click), built on demand."""
    if name == "click_command":
        return typer.main.get_command(app)
    raise AttributeError(f"module 'graphcost.cli' has no attribute {name!r}")
