"""`graphcost predict`: a Kaggle-format submission CSV (`ID,TopConfigs`) of a split's graphs.

Thin: the options go to `graphcost.inference.verbs.predict_run`, which checks --out and --cache-dir, finds the
run's data (run.json), loads the ensemble of the given runs and writes the CSV (or merges per-collection CSVs,
--combine); its errors become one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.guards.bounds import TTA_MAX

from graphcost.commands.choices import Collection, Precision, complete_device, value
from graphcost.commands.common import (
    COLLECTION_OPTION,
    DEVICE_HELP,
    PRECISION_HELP,
    check_device_option,
    fail,
    open_predictor,
    threads_option,
)

# the names of `graphcost.inference.verbs.predict_run`'s arguments in this command's messages
NAMES = {"out": "--out", "cache_dir": "--cache-dir", "data_dir": "--data-dir", "model": "MODEL",
         "csv": "--combine CSV", "split": "--split", "collection": "--collection"}


def predict(
    models: list[Path] = typer.Argument(..., help="model run dirs / checkpoints; with --combine: CSV files"),
    out: Path = typer.Option(..., "--out", "-o", help="submission CSV to write"),
    combine: bool = typer.Option(False, "--combine", help="merge the given per-collection CSVs into --out"),
    split: str = typer.Option("test", "--split", help="train | valid | test: which split's graphs to rank"),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="default: the first model's data"),
    collection: Optional[Collection] = typer.Option(None, "--collection", "-c", help=COLLECTION_OPTION, callback=value),
    tta: int = typer.Option(10, "--tta", min=0, max=TTA_MAX, help="test-time augmentation permutations (TGraph: 10)"),
    batch: int = typer.Option(128, "--batch", min=1, help="configurations per inference batch"),
    max_graphs: Optional[int] = typer.Option(None, "--max-graphs", min=1, help="predict at most N graphs"),
    threads: str = threads_option(),
    precision: Precision = typer.Option("auto", "--precision", help=PRECISION_HELP, callback=value),
    device: str = typer.Option("auto", "--device", help=DEVICE_HELP, autocompletion=complete_device),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="cache of preprocessed graphs"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace the --out file if it exists"),
) -> None:
    """Kaggle-format `ID,TopConfigs` CSV for one collection (ensemble of MODELS), or --combine CSVs."""
    from graphcost.guards.atomic import OutputExistsError, OutputWriteError
    from graphcost.data.io.locate import DatasetError
    from graphcost.inference.verbs import predict_run
    from graphcost.runs.run_json import RunInfoError

    def load(paths: list[Path]):
        return open_predictor(paths, tta, batch, check_device_option(device), precision, threads)

    try:  # the library checks --out and --cache-dir before anything is read, and the run's data once found
        written = predict_run(models, out, split, data_dir, collection, cache_dir, overwrite, max_graphs=max_graphs,
                              combine=combine, load=load, names=NAMES)  # fmt: skip
    except (FileNotFoundError, OutputExistsError, RunInfoError, DatasetError, ValueError, OutputWriteError) as exc:
        fail(str(exc))
    if written.rows is None:
        typer.echo(f"wrote {out}")
    else:
        typer.echo(f"wrote {len(written.rows)} rows to {out}")


def register(app: typer.Typer) -> None:
    """Add `predict` to `app`."""
    app.command("predict")(predict)
