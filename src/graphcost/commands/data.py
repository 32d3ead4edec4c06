"""`graphcost data`: download, card, synth, stats, split-configs, from-proto and kernels.

Thin wrappers: parse arguments, call `graphcost.data` (download, synthetic collections, statistics,
the split by configuration), `graphcost.collect.card` (data cards) and
`graphcost.frontend.hlo.convert` (autotuner protobufs: a `ModuleTuningData` (layout collection)
gives one npz file, a `TuningData` (tile collection) one file per fused kernel), print results.
Library imports happen inside the commands so `graphcost --help` stays fast.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from graphcost.guards.bounds import GRAPHS_MAX, SECONDS_MAX, SEED_MAX, ArgumentError
from graphcost.commands.choices import Collection, Format, value
from graphcost.commands.common import fail
from graphcost.commands.tables import FORMAT_HELP, Column, print_table

STATS_COLUMNS = [
    Column("group", right=False),
    Column("graphs"),
    Column("nodes_mean", "nodes (mean, min-max)", cell=lambda r: f"{r['nodes_mean']:.0f} ({r['nodes_min']}-{r['nodes_max']})"),
    Column("edges_mean", "edges", show=lambda v: f"{v:.0f}"),
    Column("config_nodes_mean", "conf nodes", show=lambda v: f"{v:.1f}"),
    Column("configs_per_graph", "configs/graph", show=lambda v: f"{v:.0f}"),
    Column("unique_configs", "unique configs", cell=lambda r: f"{r['unique_configs']}/{r['configs']}"),
    Column("runtime_min", "runtime range", cell=lambda r: f"{r['runtime_min']:.4g}-{r['runtime_max']:.4g}"),
    Column("pruned_nodes_mean", "nodes after pruning", show=lambda v: f"{v:.0f}"),
]


def download(
    collection: list[Collection] = typer.Option(..., "--collection", "-c", help="collection(s) to fetch (repeatable)"),
    data_dir: Optional[Path] = typer.Option(
        None, "--data-dir", help="data root (default: $GRAPHCOST_DATA_DIR or ~/data/tpugraphs)"
    ),
    split: list[str] = typer.Option(["train", "valid", "test"], "--split", help="split(s) to fetch"),
    timeout: float = typer.Option(10.0, "--timeout", min=0.001, max=SECONDS_MAX, help="seconds to wait for the server before giving up"),
    keep_tar: bool = typer.Option(True, "--keep-tar/--delete-tar", help="keep the .tar files after extraction"),
) -> None:
    """Download and extract official TpuGraphs tar files (resumable; tars already in the data root are reused)."""
    from graphcost.data.io.discover import default_data_root
    from graphcost.data.io.download import DownloadError, download_collection

    root = data_dir or default_data_root()
    for c in collection:
        try:  # a file, /proc, a read-only file system as the root: refused before any download
            path = download_collection(c.value, root, splits=split, timeout=timeout, keep_tar=keep_tar,
                                       option="--data-dir")
        except (DownloadError, ValueError) as exc:
            fail(str(exc))
        typer.echo(f"{c.value}: {path}")


def synth(
    collection: Collection = typer.Option(..., "--collection", "-c", help="collection layout to imitate"),
    out: Path = typer.Option(..., "--out", "-o", help="data root to write <out>/npz/... into"),
    graphs: int = typer.Option(
        10, "--graphs", "-n", min=1, max=GRAPHS_MAX, help="number of graphs (split 80/10/10)"
    ),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="random seed (same seed, same files)"),
    min_nodes: Optional[int] = typer.Option(None, "--min-nodes", min=4, help="smallest graph (nodes)"),
    max_nodes: Optional[int] = typer.Option(None, "--max-nodes", min=4, help="largest graph (nodes)"),
    min_configs: Optional[int] = typer.Option(None, "--min-configs", min=1, help="fewest configurations per graph"),
    max_configs: Optional[int] = typer.Option(None, "--max-configs", min=1, help="most configurations per graph"),
    config_fraction: float = typer.Option(
        0.02, "--config-fraction", min=0.0, max=1.0, help="share of configurable nodes (layout), in (0, 1]"
    ),
    noise: float = typer.Option(0.01, "--noise", min=0.0, help="lognormal runtime measurement noise (sigma >= 0)"),
    compressed: bool = typer.Option(True, "--compressed/--stored", help="deflate the npz members"),
    layout_pad: float = typer.Option(
        0.0, "--layout-pad",
        help="value for node_feat[134:140] beyond a tensor's rank: 0 as in the official TpuGraphs files, -1 for TGraph padding",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="replace the collection's directory under --out whole (default: refuse one that holds data)"
    ),
) -> None:
    """Write SYNTHETIC TpuGraphs-schema data (simulated runtimes) in the official directory layout."""
    from graphcost.guards.atomic import OutputExistsError
    from graphcost.data.synth.collection import check_synth_params, check_synth_sizes, write_synthetic_collection

    if layout_pad not in (0.0, -1.0):
        raise typer.BadParameter("--layout-pad must be 0 or -1")
    for low, high, what in ((min_nodes, max_nodes, "nodes"), (min_configs, max_configs, "configs")):
        if low is not None and high is not None and low > high:
            raise typer.BadParameter(f"--min-{what} {low} is above --max-{what} {high}", param_hint=f"--min-{what}")
    for hint, knob in (("--config-fraction", dict(config_fraction=config_fraction)), ("--noise", dict(noise=noise))):
        try:
            check_synth_params(**knob)  # beyond typer's min/max: refuses a fraction of 0 and nan
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint=hint) from None
    try:  # the largest graph must fit this machine's memory (a typo of --max-nodes: 10**12 nodes, 1 TB)
        check_synth_sizes(collection.value, graphs, min_nodes, max_nodes, min_configs, max_configs, names={
            "num_graphs": "--graphs", "min_nodes": "--min-nodes", "max_nodes": "--max-nodes",
            "min_configs": "--min-configs", "max_configs": "--max-configs"})  # fmt: skip
    except ArgumentError as exc:
        option, why = str(exc).split(" ", 1)
        raise typer.BadParameter(why, param_hint=option) from None
    try:  # --out checked by the library before anything is built
        base = write_synthetic_collection(
            out, collection.value, num_graphs=graphs, seed=seed, min_nodes=min_nodes, max_nodes=max_nodes,
            min_configs=min_configs, max_configs=max_configs, config_fraction=config_fraction, noise=noise,
            compressed=compressed, layout_pad=layout_pad, overwrite=overwrite, option="--out",
        )  # fmt: skip
    except (ValueError, OutputExistsError) as exc:
        fail(f"--out {exc}" if isinstance(exc, OutputExistsError) else str(exc))
    except OSError as exc:  # e.g. a file where a directory of the layout should be, no permission, disk full
        fail(f"cannot write synthetic data under {out}: {exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else ""))
    typer.echo(f"wrote SYNTHETIC {collection.value} data to {base} (see SYNTHETIC.md, manifest.json)")


def stats(
    path: Optional[Path] = typer.Argument(
        None, help="an npz file, a collection directory, a data root, or any npz directory (default: the data root)"
    ),
    per_file: bool = typer.Option(False, "--per-file", help="also one row per file"),
    validate: bool = typer.Option(True, "--validate/--no-validate", help="validate every file first"),
    json_out: Optional[Path] = typer.Option(None, "--json", help="also write the rows as JSON here"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace the --json file if it exists"),
    fmt: Format = typer.Option("table", "--format", help=FORMAT_HELP, callback=value),
) -> None:
    """Print graphs, nodes, edges, configurations, unique configurations, runtime range, nodes after pruning."""
    from graphcost.guards.atomic import OutputExistsError, WriteError
    from graphcost.data.io.discover import default_data_root
    from graphcost.data.io.schema import SchemaError
    from graphcost.data.stats import stats_for_path

    if path is None:
        path = default_data_root()
        if not path.exists():
            fail(
                f"no path given and the data root {path} does not exist (set $GRAPHCOST_DATA_DIR or pass a path); "
                "get data with `graphcost data download -c tile:xla` or `graphcost data synth -c tile:xla -o DIR`"
            )
    try:  # --json is checked by the library before any file is read
        rows = stats_for_path(path, per_file=per_file, validate=validate, progress=True, json_out=json_out,
                              overwrite=overwrite, option="--json", input_name="PATH")
    except OutputExistsError as exc:
        fail(str(exc))
    except WriteError as exc:
        fail(f"--json {json_out}: cannot write ({exc.strerror or exc})")
    except (SchemaError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:  # missing path (DataNotFoundError / FileNotFoundError), permissions, ...
        fail(str(exc) if not exc.filename else f"{exc.filename}: {exc.strerror or exc}")
    print_table(rows, STATS_COLUMNS, value(fmt), csv_keys=list(rows[0]) if rows else None)


def split_configs(
    graph: Path = typer.Argument(..., help="one npz graph (TpuGraphs schema) with measured configurations"),
    out: Path = typer.Option(..., "--out", "-o", help="directory for OUT/train, OUT/valid, OUT/test"),
    train: float = typer.Option(0.1, "--train", help="share of the configurations to train on"),
    valid: float = typer.Option(0.1, "--valid", help="share for validation (early stopping, model selection)"),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="seed of the split"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace files already in --out"),
    drop_bad_runtimes: bool = typer.Option(
        False, "--drop-bad-runtimes",
        help="leave out configurations whose runtime is NaN, infinite or negative (default: refuse the graph)",
    ),
) -> None:
    """Split ONE program's graph by configuration into train / valid / test (then: graphcost train --data-dir OUT)."""
    from graphcost.guards.atomic import OutputPathError
    from graphcost.data.config_split import ConfigSplitError, split_by_configuration

    try:  # --out is checked by the library before the graph is read
        written = split_by_configuration(graph, out, train, valid, seed=seed, overwrite=overwrite, option="--out",
                                         input_name="GRAPH", drop_bad_runtimes=drop_bad_runtimes)
    except (ConfigSplitError, OutputPathError) as exc:
        fail(str(exc))
    if written.dropped:
        typer.echo(f"dropped {written.dropped} configuration(s) of {graph} with a NaN, infinite or negative runtime")
    for split, path in written.items():
        typer.echo(f"{split}: {path}")


def card(
    root: Path = typer.Argument(..., help="a collection written by `graphcost collect` (+ --action repeat)"),
    title: str = typer.Option("a REAL dataset measured on this CPU", "--title", help="the card's title"),
    command: str = typer.Option("(not recorded)", "--command", help="the command that collected it"),
    notes: Optional[Path] = typer.Option(None, "--notes", help="markdown appended as the card's last section"),
) -> None:
    """Write DIR/CARD.md, the data card of a collection: measurement, repeatability, per-graph table."""
    from graphcost.collect.card import write_card

    try:
        path = write_card(root, title, command, notes)
    except ValueError as exc:
        fail(str(exc))
    typer.echo(f"wrote {path}")


def kernels(
    root: Path = typer.Argument(..., help="a collection written by `graphcost collect --kernels`"),
    out: Path = typer.Option(..., "--out", "-o", help="directory of the kernel dataset (OUT/{train,valid,test})"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace a non-empty --out"),
) -> None:
    """The kernel dataset of a kernel collection, in the TpuGraphs TILE schema: one npz per distinct leaf kernel
    (its graph; config_feat = the flag vectors it ran under; config_runtime = ns per execution), identical
    kernels of several programs merged. Readable by `graphcost train --data-dir OUT` and the PyG dataset."""
    from graphcost.kernels.table import write_kernel_dataset
    from graphcost.frontend.programs.flags import default_flag_vector

    try:  # --out is checked by the library before the collection is read
        manifest = write_kernel_dataset(root, out, overwrite=overwrite, default_flags=default_flag_vector(),
                                        option="--out", input_name="ROOT")
    except (ValueError, FileExistsError, OSError) as exc:
        fail(str(exc))
    typer.echo(f"{len(manifest['graphs'])} kernels of {manifest['programs']} programs in {out}")


class Kind(str, Enum):
    """from-proto --kind: the record type of the protobuf files."""

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

    from graphcost.guards.atomic import OutputPathError
    from graphcost.frontend.hlo.convert import ConversionError, convert_file, describe_unknown_opcodes

    if layout_pad not in (0.0, -1.0):
        raise typer.BadParameter("--layout-pad must be 0 or -1")
    failed = 0
    kinds: set[str] = set()
    for path in tqdm(inputs, desc="proto files", unit="file", disable=len(inputs) < 2):
        try:
            result = convert_file(
                path, out, kind=kind.value, layout_pad=layout_pad, overwrite=overwrite,
                progress=lambda it: tqdm(it, desc=f"{path.name} kernels", unit="kernel", leave=False), strict=strict,
                option="--out", input_name="INPUTS", inputs=inputs,
            )
        except OutputPathError as exc:  # --out itself (checked by the library first): no file can be converted
            fail(str(exc))
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
    app.command("download")(download)
    app.command("card")(card)
    app.command("synth")(synth)
    app.command("stats")(stats)
    app.command("split-configs")(split_configs)
    app.command("from-proto")(from_proto)
    app.command("kernels")(kernels)
