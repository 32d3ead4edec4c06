"""`graphcost predict`: a Kaggle-format submission CSV (`ID,TopConfigs`) of a split's graphs.

Thin: finds the run's data (run.json), loads the ensemble of the given runs, calls
`graphcost.inference.predict`, writes the CSV; or merges per-collection CSVs (--combine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.bounds import TTA_MAX

from graphcost.commands.choices import Collection, Precision, complete_device, value
from graphcost.commands.common import (
    COLLECTION_OPTION,
    DEVICE_HELP,
    MODEL_OUTPUT_WORDING,
    PRECISION_HELP,
    check_collection,
    check_device_option,
    check_dir_option,
    check_output_option,
    check_outside_inputs_option,
    fail,
    open_predictor,
    run_data,
    run_info_of,
    threads_option,
)


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
    from graphcost.data.io.locate import DatasetError, resolve_splits
    from graphcost.inference.predict import combine_submissions, submission_rows, write_csv_rows

    check_output_option(out, "--out", overwrite, **MODEL_OUTPUT_WORDING)
    check_outside_inputs_option(out, "--out", data=[("--data-dir", data_dir)],
                                files=[("--combine CSV" if combine else "MODEL", m) for m in models])
    if cache_dir is not None:
        check_dir_option(cache_dir, "--cache-dir")
        check_outside_inputs_option(cache_dir, "--cache-dir", data=[("--data-dir", data_dir)])
    if combine:
        try:
            combine_submissions(models, out)
        except (FileNotFoundError, ValueError) as exc:
            fail(str(exc))
        typer.echo(f"wrote {out}")
        return
    for model in models:
        if not model.exists():
            fail(f"{model}: no such model checkpoint or run directory")
    if split not in ("train", "valid", "test"):
        fail(f"--split must be train, valid or test, got {split!r}")
    device = check_device_option(device)
    info = run_info_of(models[0])
    collection = check_collection(collection or info.get("collection"))
    if collection is None:
        fail("cannot tell the collection for the submission IDs; pass --collection")
    predictor = open_predictor(models, tta, batch, device, precision, threads)
    try:
        data, recorded_in = run_data(data_dir, info, models[0])
        splits = resolve_splits(data, collection, max_graphs=max_graphs, recorded_in=recorded_in,
                                seed=info.get("config", {}).get("seed", 0))  # fmt: skip
        for option, path in (("--out", out), ("--cache-dir", cache_dir)):  # the data the run recorded, too
            if path is not None:
                check_outside_inputs_option(path, option, data=[("data", splits.root)])
        files = splits.files.get(split, [])
        if not files:
            fail(f"{splits.root}: no {split} graphs")
        rows = submission_rows(predictor, files, collection, cache_dir=cache_dir)
    except (DatasetError, ValueError) as exc:
        fail(str(exc))
    try:
        write_csv_rows(rows, out)
    except (OSError, ValueError) as exc:
        fail(f"--out {out}: {exc}")
    typer.echo(f"wrote {len(rows)} rows to {out}")


def register(app: typer.Typer) -> None:
    """Add `predict` to `app`."""
    app.command("predict")(predict)
