"""The commands stay thin (issue 66): options -> checked spec -> library verb -> print."""

from pathlib import Path

COMMANDS = Path(__file__).resolve().parents[2] / "src" / "graphcost" / "commands"


def test_train_command_is_options_spec_verb_print():
    lines = (COMMANDS / "train.py").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 120, f"commands/train.py has {len(lines)} lines; its checks belong in the library"
