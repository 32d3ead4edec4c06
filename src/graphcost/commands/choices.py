"""The CLI's choice options as str-valued enums, so `--help` and shell completion list their values.

Typer turns an Enum-typed option into a choice of its values; `value` (the options' callback) hands
the command the plain string, so the commands, run.json and checkpoints see exactly what they saw
before (a checkpoint must never hold an enum: `torch.load(weights_only=True)` refuses classes).
The lists are written out here, not imported, so `graphcost --help` does not import torch;
the test suite checks them against the library's (`COLLECTIONS`, `MODEL_NAMES`, the
losses, `PRECISION_CHOICES`). `--device` also takes `cuda:N`, so it stays a string with completion.
"""

from __future__ import annotations

from enum import Enum, StrEnum


class Collection(StrEnum):
    tile_xla = "tile:xla"
    layout_xla_default = "layout:xla:default"
    layout_xla_random = "layout:xla:random"
    layout_nlp_default = "layout:nlp:default"
    layout_nlp_random = "layout:nlp:random"


Model = StrEnum("Model", [(n, n) for n in (
    "tgraph", "sage", "tile-mlp", "early-sage", "early-gcn", "late-sage", "late-gcn", "kaufman")])  # fmt: skip
Loss = StrEnum("Loss", [(n, n) for n in ("hinge", "logistic", "listmle", "mse")])
Precision = StrEnum("Precision", [(n, n) for n in ("auto", "fp32", "bf16")])
Format = StrEnum("Format", [(n, n) for n in ("table", "json", "csv")])  # commands/tables.py
DEVICES = ("auto", "cpu", "cuda", "cuda:0", "cuda:1")  # completion only: any cuda:N is accepted


def value(choice):
    """Option callback: an enum member (or a list of them, or None) -> its plain string value(s)."""
    if isinstance(choice, list):
        return [value(c) for c in choice]
    return choice.value if isinstance(choice, Enum) else choice


def complete_device(incomplete: str) -> list[str]:
    """Shell completion of --device."""
    return [d for d in DEVICES if d.startswith(incomplete)]
