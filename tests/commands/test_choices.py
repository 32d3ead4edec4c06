"""Choice options are enums (help and completion list them) that hand the commands plain strings."""

import re

import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.commands import choices
from graphcost.commands.choices import Collection, Loss, Model, Precision, complete_device, value

runner = CliRunner()


def test_choices_match_the_library():
    from graphcost.models.precision import PRECISION_CHOICES
    from graphcost.models.registry import MODEL_NAMES
    from graphcost.data.io.discover import COLLECTIONS as TREE_DIRS
    from graphcost.metrics import COLLECTIONS
    from graphcost.models.losses import LOSS_NAMES
    from graphcost.train.plots import LOSS_LABELS

    assert [c.value for c in Collection] == list(COLLECTIONS) == list(TREE_DIRS)
    assert [m.value for m in Model] == list(MODEL_NAMES)
    assert [x.value for x in Loss] == list(LOSS_NAMES) == list(LOSS_LABELS)
    assert [p.value for p in Precision] == list(PRECISION_CHOICES)


def test_help_lists_the_values_and_bad_values_name_the_option():
    out = re.sub(r"\s+", " ", runner.invoke(app, ["train", "--help"], env={"COLUMNS": "250"}).output)
    for name in ("tile-mlp", "kaufman", "listmle", "layout:nlp:random"):
        assert name in out
    assert "bf16" in runner.invoke(app, ["rank", "--help"], env={"COLUMNS": "250"}).output
    r = runner.invoke(app, ["train", "--model", "nope"])
    assert r.exit_code == 2 and "--model" in r.output and "tgraph" in r.output
    assert complete_device("cu") == ["cuda", "cuda:0", "cuda:1"]


def test_commands_receive_plain_strings(monkeypatch, tmp_path):
    seen = {}

    def fake_load(paths, device="cpu", **kwargs):
        seen.update(kwargs)
        raise FileNotFoundError("stop here")

    from graphcost.inference.ensemble import EnsemblePredictor

    monkeypatch.setattr(EnsemblePredictor, "load", fake_load)
    runner.invoke(app, ["rank", str(tmp_path), str(tmp_path / "g.npz"), "--precision", "bf16", "--device", "cpu"])
    assert seen["precision"] == "bf16" and type(seen["precision"]) is str  # checkpoints/JSON never see an enum
    assert value([Collection.tile_xla, None]) == ["tile:xla", None] and type(value(Loss.hinge)) is str
    with pytest.raises(KeyError):
        choices.Model["nope"]


def _commands(group, path=()):
    """(path, click command) of every leaf command of the app."""
    import click

    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def test_help_at_80_columns_keeps_every_option_whole_and_lists_choices_once():
    import typer.main

    for path, cmd in _commands(typer.main.get_command(app)):
        out = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80).output
        assert "…" not in out, path  # nothing truncated
        assert max(len(line) for line in out.splitlines()) <= 80 or any(  # only a choice metavar may overflow
            "|" in line for line in out.splitlines() if len(line) > 80), path
        for param in cmd.params:
            if getattr(param, "hidden", False):
                continue  # a deprecated alias, kept out of the help on purpose (collect --relabel)
            for opt in param.opts:
                assert opt in out, (path, opt)  # every option name, in full
    out = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "80"}, terminal_width=80).output
    assert out.count("layout:nlp:random") == 1 and out.count("listmle") == 1  # the choices, once
    assert runner.invoke(app, ["rank", "--help"], terminal_width=80).output.count("fp32|bf16") == 1
