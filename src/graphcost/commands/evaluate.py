"""`graphcost evaluate`: how well a trained cost model ranks every configuration of a split's graphs.

Thin: finds the run's data (run.json), loads the ensemble, calls `graphcost.inference.ranking`,
prints the per-graph table and the mean. Library (torch) imports happen inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.bounds import TTA_MAX

from graphcost.commands.choices import Collection, Format, Precision, complete_device, value
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
from graphcost.commands.tables import FORMAT_HELP, Column, note, print_table


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
    import warnings

    from graphcost.atomic import write_json
    from graphcost.data.io.locate import DatasetError, has_runtimes, resolve_splits
    from graphcost.data.transforms.preprocess import prepare_graph
    from graphcost.inference.ranking import evaluate_graphs

    if split is not None and split not in ("train", "valid", "test"):
        fail(f"--split must be train, valid or test, got {split!r}")
    check_collection(collection)
    device = check_device_option(device)
    if json_out is not None:
        check_output_option(json_out, "--json", overwrite, **MODEL_OUTPUT_WORDING)
        check_outside_inputs_option(json_out, "--json", data=[("--data-dir", data_dir)], files=[("RUN", run)])
    if cache_dir is not None:
        check_dir_option(cache_dir, "--cache-dir")
        check_outside_inputs_option(cache_dir, "--cache-dir", data=[("--data-dir", data_dir)], files=[("RUN", run)])
    info = run_info_of(run)
    predictor = open_predictor([run], tta, batch, device, precision, threads)
    data, recorded_in = run_data(data_dir, info, run)
    try:
        splits = resolve_splits(data, collection or info.get("collection"), seed=info.get("config", {}).get("seed", 0),
                                max_graphs=max_graphs, recorded_in=recorded_in)  # fmt: skip
    except (DatasetError, ValueError) as exc:
        fail(str(exc))
    for option, path in (("--json", json_out), ("--cache-dir", cache_dir)):  # the data the run recorded, too
        if path is not None:
            check_outside_inputs_option(path, option, data=[("data", splits.root)])
    if split is None:
        try:
            split = "test" if has_runtimes(splits.files.get("test", [])) else "valid"
        except ValueError as exc:  # a test file that cannot be read
            fail(str(exc))
        if split == "valid":
            typer.secho("note: the test split has no runtimes here (e.g. the official TpuGraphs test set); reporting "
                        "valid, which also chose the best epoch, so the figures are optimistic", fg=typer.colors.YELLOW,
                        err=True)  # fmt: skip
    files = splits.files.get(split, [])
    if not files:
        fail(f"{splits.root}: no {split} graphs")
    purpose = {"test": "never used for training or model selection", "valid": "used to select the best epoch",
               "train": "used for training"}[split]
    fmt = value(fmt)
    note(f"split: {split} ({len(files)} graphs of {splits.root}; {purpose})", fmt)
    if info.get("folds") and split != "test":
        typer.secho(
            "warning: a cross-validation ensemble was trained on train+valid; its valid score is optimistic "
            "(see ensemble.json for the held-out fold scores)", fg=typer.colors.YELLOW, err=True,
        )
    try:
        graphs = (prepare_graph(f, dedup=False, cache_dir=cache_dir) for f in files)  # all configs, one at a time
        with warnings.catch_warnings():  # skipped graphs are reported once, below
            warnings.simplefilter("ignore")
            report = evaluate_graphs(predictor, graphs, predictor.kind, progress=True, total=len(files))
    except ValueError as exc:
        fail(str(exc))
    if report.skipped:
        typer.secho(
            f"warning: skipped {len(report.skipped)} graph(s) whose runtimes are all equal or unusable: "
            f"{', '.join(report.skipped)}", fg=typer.colors.YELLOW, err=True,
        )  # fmt: skip
    _print_report(report, split, fmt)
    if json_out is not None:
        try:
            write_json({"split": split, **report.to_json()}, json_out)
        except (OSError, ValueError) as exc:
            fail(f"--json {json_out}: {exc}")
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
