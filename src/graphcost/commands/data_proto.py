"""CLI: graphcost data from-proto (issue: HLO frontend).

Converts raw TpuGraphs autotuner protobufs (tpu_graphs `tuning.proto`) into npz graphs with the
official keys: a `ModuleTuningData` (layout collection) gives one file, a `TuningData` (tile
collection) one file per fused kernel.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer


class Kind(str, Enum):
    auto = "auto"
    layout = "layout"
    tile = "tile"


def from_proto(
    inputs: list[Path] = typer.Argument(..., help="tuning protobuf file(s) (.pb): ModuleTuningData or TuningData"),
    out: Path = typer.Option(..., "--out", "-o", help="output directory for the npz files"),
    kind: Kind = typer.Option(Kind.auto, "--kind", help="record type: auto-detect, layout (ModuleTuningData) or tile (TuningData)"),
    layout_pad: float = typer.Option(
        0.0, "--layout-pad",
        help="value for node_feat[134:140] beyond a tensor's rank: 0 as in the official TpuGraphs files, -1 for TGraph padding",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="rewrite outputs that already exist (default: keep them, so reruns resume)"),
    strict: bool = typer.Option(
        False, "--strict",
        help="refuse a module with an opcode name TpuGraphs does not know (default: warn, count per module, map to opcode 0)",
    ),
) -> None:
    """Convert TpuGraphs autotuner protobufs into TpuGraphs npz graphs (official keys)."""
    from tqdm import tqdm

    from graphcost.frontend.hlo.convert import ConversionError, convert_file, describe_unknown_opcodes

    if layout_pad not in (0.0, -1.0):
        raise typer.BadParameter("--layout-pad must be 0 or -1")
    if out.exists() and not out.is_dir():
        typer.secho(f"error: {out}: --out exists and is not a directory", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=1)
    failed = 0
    kinds: set[str] = set()
    for path in tqdm(inputs, desc="proto files", unit="file", disable=len(inputs) < 2):
        try:
            result = convert_file(
                path, out, kind=kind.value, layout_pad=layout_pad, overwrite=overwrite,
                progress=lambda it: tqdm(it, desc=f"{path.name} kernels", unit="kernel", leave=False), strict=strict,
            )
        except (ConversionError, ValueError) as exc:
            typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
            failed += 1
            continue
        kinds.add(result.kind)
        s = result.stats
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(s.runs_skipped.items())) or "none"
        typer.echo(
            f"{path}: {result.kind}; wrote {len(result.written)} file(s), kept {len(result.existing)} existing; "
            f"runs kept {s.runs_kept}/{s.runs_total} (skipped: {skipped})"
        )
        for name, why in sorted(s.modules_skipped.items()):
            typer.echo(f"  skipped kernel {name}: {why}")
        for module, counts in s.unknown_opcodes:
            typer.secho(
                f"  warning: module {module[:80]!r}: {describe_unknown_opcodes(counts)} mapped to opcode 0 "
                "(--strict refuses them)", fg=typer.colors.YELLOW, err=True,
            )
        if not result.configurable_opcodes_ok:
            typer.secho("  warning: some configurable nodes are not convolution/dot/reshape", fg=typer.colors.YELLOW)
        for written in result.written:
            typer.echo(f"  {written}")
    if len(kinds) > 1:  # `graphcost train` / `evaluate` need one kind of graph per directory
        typer.secho(
            f"note: {out} now holds both layout and tile graphs; to train on them, convert each kind into "
            "its own --out directory (e.g. --out real_proto/layout and --out real_proto/tile)",
            fg=typer.colors.YELLOW, err=True,
        )
    if failed:
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
    app.command("from-proto")(from_proto)
