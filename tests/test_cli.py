"""The CLI wires every area's subcommands into one app."""

from typer.testing import CliRunner

from graphcost.cli import app


def test_help_lists_subcommand_groups():
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    for name in ("data", "dag"):
        assert name in result.output


def test_version_flag():
    from graphcost import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output
