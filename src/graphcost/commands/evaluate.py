"""`graphcost evaluate`: how well a trained cost model ranks every configuration of a split's graphs.

Thin: the options go to `graphcost.inference.verbs.evaluate_run`, which checks --json and --cache-dir, finds
the run's data (run.json), loads the ensemble and scores the split; the command prints its notes, the per-graph
table and the mean. Library (torch) imports happen inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.guards.bounds import TTA_MAX

from graphcost.commands.choices import Collection, Format, Precision, complete_device, value
from graphcost.commands.common import (
    COLLECTION_OPTION,
    DEVICE_HELP,
    PRECISION_HELP,
    check_collection,
    check_device_option,
    fail,
    open_predictor,
    threads_option,
)
from graphcost.commands.tables import FORMAT_HELP, Column, note, print_table

# the names of `graphcost.inference.verbs.evaluate_run`'s arguments in this command's messages
NAMES = {"json_out": "--json", "cache_dir": "--cache-dir", "data_dir": "--data-dir", "run": "RUN", "split": "--split"}


def evaluate(
    run: Path = typer.Argument(
        ..., help="run directory (one model, a cross-validation or a seed ensemble) or a checkpoint .pt"),
    split: Optional[str] = typer.Option(None, "--split", help="train | valid | test; default: test when its graphs "
                                        "have runtimes (never used for training or selection), else valid"),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="default: the run's data"),
    collection: Optional[Collection] = typer.Option(None, "--collection", "-c", help=COLLECTION_OPTION, callback=value),
    json_out: Optional[Path] = typer.Option(None, "--json", help="also write the report as JSON"),
    tta: int = typer.Option(10, "--tta", min=0, max=TTA_MAX, help="test-time augmentation permutations (TGraph: 10)"),
    batch: int = typer.Option(128, "--batch", min=1, help="configurations per inference batch"),
    max_graphs: Optional[int] = typer.Option(None, "--max-graphs", min=1, help="evaluate at most N graphs"),
    threads: str = threads_option(),
    precision: Precision = typer.Option("auto", "--precision", help=PRECISION_HELP, callback=value),
    device: str = typer.Option("auto", "--device", help=DEVICE_HELP, autocompletion=complete_device),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="cache of preprocessed graphs"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace the --json file if it exists"),
    fmt: Format = typer.Option("table", "--format", help=FORMAT_HELP, callback=value),
) -> None:
    """Per-graph Kendall tau / OPA / top-K (and tile score) over ALL configurations, plus the mean."""
    from graphcost.guards.atomic import OutputExistsError, OutputWriteError
    from graphcost.data.io.locate import DatasetError
    from graphcost.inference.verbs import evaluate_run
    from graphcost.runs.run_json import RunInfoError

    if split is not None and split not in ("train", "valid", "test"):
        fail(f"--split must be train, valid or test, got {split!r}")
    check_collection(collection)
    device = check_device_option(device)
    fmt = value(fmt)

    def say(kind: str, line: str) -> None:
        if kind == "split":
            note(line, fmt)
        else:
            typer.secho(line, fg=typer.colors.YELLOW, err=True)

    try:  # the library checks --json and --cache-dir before the run is read, and the run's data once found
        result = evaluate_run(run, split, data_dir, collection, json_out, cache_dir, overwrite, max_graphs=max_graphs,
                              load=lambda paths: open_predictor(paths, tta, batch, device, precision, threads),
                              say=say, names=NAMES)  # fmt: skip
    except (OutputExistsError, RunInfoError, DatasetError, ValueError, OutputWriteError) as exc:
        fail(str(exc))
    report = result.report
    if report.skipped:
        typer.secho(
            f"warning: skipped {len(report.skipped)} graph(s) whose runtimes are all equal or unusable: "
            f"{', '.join(report.skipped)}", fg=typer.colors.YELLOW, err=True,
        )  # fmt: skip
    _print_report(report, result.split, fmt)
    if json_out is not None:
        note(f"wrote {json_out}", fmt)


def _print_report(report, split: str, fmt: str) -> None:
    """evaluate's report: one row per graph and the mean, as a table, JSON (= the --json file) or CSV."""
    if not report.rows:
        note("(no graphs)", fmt)
        return
    keys = [k for k in report.rows[0] if k != "graph"]
    number = lambda v: f"{v:d}" if isinstance(v, int) else f"{v:.4f}"  # noqa: E731
    columns = [Column("graph", right=False)] + [Column(k, show=number) for k in keys]
    mean = {"graph": "MEAN", **report.aggregate, "n_configs": report.aggregate.get("n_configs", 0)}
    caption = (f"skipped {len(report.skipped)} graph(s) without usable runtimes: {', '.join(report.skipped)}"
               if report.skipped else None)
    print_table(report.rows, columns, fmt, data={"split": split, **report.to_json()}, footer=mean, caption=caption)


def register(app: typer.Typer) -> None:
    """Add `evaluate` to `app`."""
    app.command("evaluate")(evaluate)
