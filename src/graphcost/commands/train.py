"""`graphcost train`: train a cost model (TGraph's recipe by default), single or K-fold, on one
process or data-parallel under torchrun.

Thin: the options go to one library verb, `graphcost.train.train_run.train_run`, which checks them, the model
and the data once, before anything is read or written, and trains; its errors become one-line messages naming
the options (`_names`). Library (torch) imports happen inside the command so `graphcost --help` stays fast.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from graphcost.guards.bounds import SECONDS_MAX, TTA_MAX
from graphcost.commands.choices import Collection, Loss, Model, complete_device, value
from graphcost.commands.common import COLLECTION_OPTION, DEVICE_HELP, fail, set_threads, threads_option
from graphcost.commands.numbers import workers_bound
from graphcost.train import recipe


def _names(cli: typer.Context) -> dict[str, str]:
    """The options `train_run`'s arguments (the `TrainConfig` and `RunSpec` fields among them) are in messages."""
    return {**{k: "--" + k.replace("_", "-") for k in cli.params}, "model_config": "--model-opt", "data": "--data-dir"}


def train(
    cli: typer.Context,
    collection: Optional[Collection] = typer.Option(None, "--collection", "-c", help=COLLECTION_OPTION, callback=value),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="official TpuGraphs root, a dir with train/valid/test, "
        "a dir of npz, or the name of a dataset shipped with graphcost (cpu_layout, cpu_flags, ...: graphcost.datasets) "
        "(default: the real CPU dataset shipped with graphcost)"),
    model: Model = typer.Option("tgraph", "--model", "-m", help="model name (graphcost.models.registry.MODEL_NAMES)", callback=value),
    model_opt: list[str] = typer.Option([], "--model-opt", help="model config override KEY=VALUE (repeatable)"),
    loss: Loss = typer.Option("hinge", "--loss", help="ranking loss (pairwise hinge: TGraph's)", callback=value),
    epochs: int = typer.Option(recipe.EPOCHS, "--epochs", min=1, help="at most this many epochs; an epoch takes "
        "min(ceil(K / batch), --max-steps-per-graph) batches of a graph with K configurations"),
    patience: int = typer.Option(recipe.PATIENCE, "--patience", min=0,
        help="stop after this many epochs without a better validation score (0: run every epoch)"),
    max_steps_per_graph: int = typer.Option(recipe.MAX_STEPS_PER_GRAPH, "--max-steps-per-graph", min=0,
        help="at most this many batches of one graph an epoch (0: no cap)"),
    trees: bool = typer.Option(recipe.TREES, "--trees/--no-trees", help="also fit gradient-boosted trees on the "
        "configuration table and blend them with the graph model, the weight chosen on the validation split (w = 1: "
        "the graph model alone); not with --folds"),
    folds: int = typer.Option(0, "--folds", help="K-fold cross-validation by graph on train+valid (0: official split)"),
    train_folds: int = typer.Option(5, "--train-folds", min=1, help="train only the first n folds"),
    keep: int = typer.Option(4, "--keep", min=1, help="keep the best k folds in the ensemble"),
    seeds: int = typer.Option(1, "--seeds", min=1, max=64, help="train n graph models from seeds --seed ... --seed + "
        "n - 1 and average them (a seed ensemble; the trees blend with their average); not with --folds"),
    batch_configs: Optional[int] = typer.Option(None, "--batch-configs", min=2,
        help="configurations per batch (default 128 for random collections, else 64)"),
    lr: float = typer.Option(recipe.LR, "--lr", help="peak AdamW learning rate (warm-up + cosine decay)"),
    seed: int = typer.Option(0, "--seed", help="random seed (data split, sampling, initialisation)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="run directory (default: runs/<model>-<time>, linked "
        "as runs/latest; with --resume: runs/latest)"),
    resume: bool = typer.Option(False, "--resume", help="continue the run in --out from its last checkpoint"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace the run already in --out (default: refuse)"),
    max_graphs: Optional[int] = typer.Option(None, "--max-graphs", min=1, help="at most N graphs per split"),
    device: str = typer.Option("auto", "--device", help=DEVICE_HELP, autocompletion=complete_device),
    checkpoint_every: int = typer.Option(0, "--checkpoint-every", min=0, help="also checkpoint every N steps"),
    eval_tta: int = typer.Option(0, "--eval-tta", min=0, max=TTA_MAX, help="TTA permutations during validation"),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="cache of preprocessed graphs"),
    max_memory_gb: float = typer.Option(8.0, "--max-memory-gb", help="above this many GB of prepared graphs, read them "
        "back from --cache-dir per step; also the most the model's weights, gradients and AdamW state may take"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="show progress bars"),
    dist_timeout: float = typer.Option(1800.0, "--dist-timeout", min=1.0, max=SECONDS_MAX,  # = distributed.DEFAULT_TIMEOUT_S
        help="under torchrun: seconds a rank waits for the others before it fails"),
    loader_workers: int = typer.Option(0, "--loader-workers", min=0, callback=workers_bound,  # one per usable core at most
        help="DataLoader worker processes that build the training batches while the model trains (0: in-process; the "
        "batches are the same); pays only with spare CPU cores, e.g. when training on a GPU"),
    threads: str = threads_option(),
) -> None:
    """Train a cost model (TGraph recipe: AdamW, warm-up + cosine, pairwise hinge, K-fold ensembles).

    Under `torchrun --nproc_per_node N -m graphcost train ...` it trains data-parallel.
    """
    from graphcost.errors import GraphcostError
    from graphcost.train.train_run import train_run

    try:  # the library checks everything once, before anything is read or written (its messages: `_names`)
        train_run(
            out=out, resume=resume, overwrite=overwrite, cache_dir=cache_dir, max_memory_gb=max_memory_gb,
            model_opts=_model_opts(model_opt), given=_options_given(cli), dist_timeout=dist_timeout, names=_names(cli),
            report=typer.echo, ready=lambda: set_threads(threads),  # once the options and data are known usable
            model=value(model), loss=value(loss), collection=value(collection), data_dir=data_dir, epochs=epochs,
            patience=patience, max_steps_per_graph=max_steps_per_graph, trees=trees, folds=folds,
            train_folds=train_folds, keep=keep, seeds=seeds, batch_configs=batch_configs, lr=lr, seed=seed,
            max_graphs=max_graphs, device=device, checkpoint_every=checkpoint_every, eval_tta=eval_tta,
            progress=progress, loader_workers=loader_workers)  # fmt: skip
    except (GraphcostError, ValueError, KeyError, OSError) as exc:  # DirectoryLockedError: --out held by another run
        fail(str(exc))


def _model_opts(items: list[str]) -> dict:
    """--model-opt KEY=VALUE (VALUE parsed as JSON when possible: 32, 0.1, true, "x")."""
    out = {}
    for key, eq, text in (item.partition("=") for item in items):
        if not eq:  # no "=": the whole item is in key
            fail(f"--model-opt expects KEY=VALUE, got {key!r}")
        try:
            out[key.strip()] = json.loads(text)
        except json.JSONDecodeError:
            out[key.strip()] = text
    return out


def _options_given(cli: typer.Context) -> set[str]:
    """The options given on the command line or by environment variable: what --resume must find in run.json."""
    return {k for k in cli.params if getattr(cli.get_parameter_source(k), "name", "") in ("COMMANDLINE", "ENVIRONMENT")}


def register(app: typer.Typer) -> None:
    """Add `train` to `app`."""
    app.command("train")(train)
