"""`graphcost rank`: one graph's configurations ordered by a trained cost model, fastest first.

Thin: loads the ensemble, calls `graphcost.inference.predict.rank_original`, prints the table (with the
file's measured runtimes and their Kendall tau when it has them). A PROGRAM goes to one library verb,
`graphcost.workload.rank.rank_program`, which checks it and everything it needs once; its errors become
one-line messages naming the options (`NAMES`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.guards.bounds import TTA_MAX

from graphcost.commands.choices import Format, Precision, complete_device, value
from graphcost.commands.common import (
    DEVICE_HELP,
    PRECISION_HELP,
    check_device_option,
    fail,
    open_predictor,
    threads_option,
)
from graphcost.commands.tables import FORMAT_HELP, Column, print_table


def rank(
    graph: list[Path] = typer.Argument(..., metavar="[MODEL] GRAPH", help="MODEL: a run directory or checkpoint .pt "
                                       "(default: the shipped model of GRAPH's kind); GRAPH: a TpuGraphs-schema npz file"),
    top: Optional[int] = typer.Option(None, "--top", min=1, help="show only the N fastest"),
    tta: int = typer.Option(10, "--tta", min=0, max=TTA_MAX, help="test-time augmentation permutations (TGraph: 10)"),
    batch: int = typer.Option(128, "--batch", min=1, help="configurations per inference batch"),
    threads: str = threads_option(),
    precision: Precision = typer.Option("auto", "--precision", help=PRECISION_HELP, callback=value),
    device: str = typer.Option("auto", "--device", help=DEVICE_HELP, autocompletion=complete_device),
    fmt: Format = typer.Option("table", "--format", help=FORMAT_HELP, callback=value),
    configs: int = typer.Option(16, "--configs", min=2, max=4096, help="PROGRAM only: flag configurations to cost "
                                "(the default first, then a seeded sample of the XLA CPU flag space graphcost tune "
                                "searches)."),
    allow_fast_math: bool = typer.Option(False, "--allow-fast-math", help="PROGRAM only: let the sample use the "
                                         "fast-math family, as graphcost tune --allow-fast-math does (it may change "
                                         "results)."),
    wide: bool = typer.Option(False, "--wide", help="PROGRAM only: one column per XLA option, however wide (by "
                              "default the options changed from the default, in 120 columns)."),
    measure: bool = typer.Option(False, "--measure", help="PROGRAM only: also time every costed configuration here "
                                 "(interleaved) and print the measured runtimes and Kendall tau beside the costs."),
    seed: int = typer.Option(0, "--seed", min=0, max=2**31 - 1, help="PROGRAM only: seed of the configuration sample."),
    inputs: Optional[Path] = typer.Option(None, "--inputs", help="XLA module PROGRAM only: its arguments, an npz of "
                                          "arg0, arg1, ... (default: seeded random arguments)."),
) -> None:
    """Configurations of GRAPH ordered by predicted runtime, fastest first (indices into the file), with
    the file's measured runtime beside each score when it has one. Without MODEL, the cost model that
    ships with graphcost for GRAPH's kind (layout or tile) ranks, and says so.

    GRAPH may also be a PROGRAM (FILE.py:FUNCTION or MODULE:FUNCTION returning (fn, example_args), or an XLA
    module: MODULE.pb, MODULE.hlo or a dump directory): its flag configurations are compiled and costed as the
    sum of their kernels by the shipped kernel model."""
    from graphcost.inference.predict import prepare_for_prediction, rank_original

    if len(graph) == 1 and _is_program(str(graph[0])):
        _rank_program(str(graph[0]), inputs, configs, seed, top, measure, fmt, allow_fast_math, wide)
        return
    if len(graph) > 2:
        fail(f"rank takes [MODEL] GRAPH, got {len(graph)} paths: {' '.join(map(str, graph))}", code=2)
    model, graph_path = (graph[0], graph[1]) if len(graph) == 2 else (None, graph[0])
    device = check_device_option(device)
    # a given MODEL is checked first; without one the graph's kind picks the shipped model
    predictor = open_predictor([model], tta, batch, device, precision, threads) if model is not None else None
    try:
        to_rank = prepare_for_prediction(graph_path)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    if predictor is None:
        predictor = open_predictor([shipped_model(to_rank.kind)], tta, batch, device, precision, threads)
    try:
        order, scores = rank_original(predictor, to_rank)
        measured = to_rank.measured_runtime()  # checked before anything is printed
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    if to_rank.kind == "layout" and to_rank.prepared.num_config_nodes == 0:
        typer.secho(f"warning: {graph_path}: no configurable node (key 'node_config_ids' is empty): every configuration "
                    "is the same program, so every one gets the same score", fg=typer.colors.YELLOW, err=True)
    shown = order[:top] if top else order
    rows = [{"rank": position, "config": int(index), "score": float(scores[index]),
             "runtime": None if measured is None else float(measured[index])} for position, index in enumerate(shown)]
    columns = [Column("rank"), Column("config"), Column("score", show=lambda v: f"{v:.5f}")]
    caption = None
    if measured is not None:
        from graphcost.metrics import kendall_tau

        columns.append(Column("runtime", "runtime (measured)", show=lambda v: f"{v:.6g}"))
        caption = (f"measured runtimes: config_runtime of {graph_path.name}; " + (
            f"Kendall tau of the scores against them {kendall_tau(scores, measured):.3f} over all {len(scores)} "
            "configurations" if len(scores) >= 2 else "one configuration: nothing to rank it against"))
    print_table(rows, columns, value(fmt), caption=caption)


def _is_program(text: str) -> bool:
    """FILE.py:FUNCTION or MODULE:FUNCTION (a graph file has no colon before its name), or an XLA module file
    or dump directory (not a run directory: that is a MODEL without its GRAPH)."""
    from graphcost.frontend.programs.hlo_program import is_hlo_reference

    if is_hlo_reference(text):
        return not (Path(text) / "run.json").exists()
    target, sep, attr = text.rpartition(":")
    return bool(sep and target and attr.isidentifier() and not text.endswith(".npz"))


# the names of `rank_program`'s arguments in this command's messages
NAMES = {"configs": "--configs", "seed": "--seed", "allow_fast_math": "--allow-fast-math", "measure": "--measure",
         "inputs": "--inputs"}


def _rank_program(ref: str, inputs: Path | None, configs: int, seed: int, top: int | None, measure: bool, fmt,
                  allow_fast_math: bool = False, wide: bool = False) -> None:
    """`graphcost rank PROGRAM`: flag configurations costed through their kernels by one library verb
    (`graphcost.workload.rank.rank_program`, which reads the reference, loads the model and draws the
    configurations once), each named by the XLA options it changes, as `graphcost tune` prints them."""
    from graphcost.errors import GraphcostError
    from graphcost.frontend.programs.flags import known_options
    from graphcost.workload.rank import KernelRanking, rank_program

    def predicted(ranking: KernelRanking) -> None:  # said while the measuring (--measure) runs
        typer.echo(f"{len(ranking.flags)} configurations drawn as graphcost tune draws its candidates, the fast-math "
                   "family " + ("included" if allow_fast_math else "at its default (--allow-fast-math to include it)")
                   + "; score: lower = predicted faster", err=True)
        default = ranking.costed[0]
        typer.echo("kernels that dominate the default (predicted share of the call):", err=True)
        for name, kind, t in default.kernels[:5]:
            typer.echo(f"  {name:36s} {kind:20s} {t / default.seconds:6.1%}", err=True)

    try:
        ranking = rank_program(ref, configs=configs, seed=seed, allow_fast_math=allow_fast_math, inputs=inputs,
                               measure=measure, names=NAMES, say=lambda note: typer.echo(note, err=True),
                               ranked=predicted)
    except (GraphcostError, ValueError, RuntimeError, FileNotFoundError) as exc:
        fail(str(exc))
    measured = ranking.measured
    seconds, scores, order = ranking.seconds, ranking.scores, ranking.order
    shown = order[:top] if top else order
    names = [o.candidate.option for o in known_options() if allow_fast_math or not o.candidate.fast_math]
    rows = [{"rank": r, "config": int(i), "score": float(scores[i]), "predicted_us": float(seconds[i] * 1e6),
             "runtime_us": None if measured is None else float(measured[i] / 1e3),
             "changed": ranking.changed_options(int(i)),
             **({k: v for k, v in ranking.options(int(i)).items() if k in names} if wide else {})}
            for r, i in enumerate(shown)]
    columns = [Column("rank"), Column("config"), Column("score", show=lambda v: f"{v:+.2f}"),
               Column("predicted_us", "kernel sum µs", show=lambda v: f"{v:.1f}")]
    caption = None
    if measured is not None:
        from graphcost.metrics import kendall_tau

        columns.append(Column("runtime_us", "measured µs", show=lambda v: f"{v:.1f}"))
        caption = (f"measured here (interleaved, 5 rounds); Kendall tau of the ranking against them "
                   f"{kendall_tau(scores, measured):.3f} over {len(seconds)} configurations")
    if wide:
        columns += [Column(name, show=repr) for name in names]
    else:
        width = OPTIONS_WIDTH - (MEASURED_WIDTH if measured is not None else 0)
        columns.append(Column("changed", "XLA options changed from the default", right=False,
                              show=lambda v: packed(v, width)))
    print_table(rows, columns, value(fmt), caption=caption, whole=wide)
    if caption and value(fmt) != "table":  # json / csv stay machine-readable on stdout; the check goes to stderr
        typer.echo(caption, err=True)


OPTIONS_WIDTH = 80  # the options column, so that the table fits 120 columns beside rank, config, score, kernel sum
MEASURED_WIDTH = 14  # what the measured column takes from it


def packed(options: dict, width: int) -> str:
    """`options` (XLA names and values) as ``name: value`` items, the way `graphcost tune` prints a configuration,
    packed into lines of at most `width` characters, commas included (an item longer than a line puts its
    value on the next line, indented; a value longer than that is cut over lines)."""
    if not options:
        return "(default)"
    room = width - 1  # the comma that ends a line
    lines: list[str] = []
    for name, v in options.items():
        item = f"{name}: {v!r}"
        if lines and len(lines[-1]) + 2 + len(item) <= room:
            lines[-1] += f", {item}"
            continue
        if lines:
            lines[-1] += ","
        if len(item) <= room:
            lines.append(item)
        else:
            rest = f"  {v!r}"
            lines += [f"{name}:"[:room]] + [rest[j:j + room] for j in range(0, len(rest), room)]
    return "\n".join(lines)


def shipped_model(kind: str) -> Path:
    """The shipped model of `kind`, said on stderr; a one-line error when it is not installed."""
    import graphcost.pretrained as pretrained

    try:
        path = pretrained.shipped_model_dir(kind)
    except FileNotFoundError as exc:
        fail(str(exc))
    typer.echo(f"no MODEL given: ranking with {pretrained.describe(kind)}", err=True)
    return path


def register(app: typer.Typer) -> None:
    """Add `rank` to `app`."""
    app.command("rank")(rank)
