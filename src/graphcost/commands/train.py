"""`graphcost train`: train a cost model (TGraph's recipe by default), single or K-fold, on one
process or data-parallel under torchrun.

Thin: the options become the run's checked `RunSpec` (`graphcost.commands.train_spec`; each error
names its flag), then `graphcost.train.fit.fit` finds the data, picks the run directory, records
run.json and trains the graph model, the trees and their blend. Library (torch) imports happen inside
the command so `graphcost --help` stays fast.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from graphcost.guards.bounds import SECONDS_MAX, TTA_MAX
from graphcost.commands.choices import Collection, Loss, Model, complete_device, value
from graphcost.commands.common import COLLECTION_OPTION, DEVICE_HELP, fail, set_threads, threads_option
from graphcost.commands.numbers import workers_bound
from graphcost.train import recipe


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
    from graphcost.commands.train_spec import FIT_NAMES, fail_collective, spec_from_options
    from graphcost.data.io.locate import DatasetError
    from graphcost.runs.distributed import init_from_env, shutdown
    from graphcost.train.fit import fit

    s, splits, device = spec_from_options(
        cli, model=model, loss=loss, collection=collection, data_dir=data_dir, model_opt=model_opt, epochs=epochs,
        patience=patience, max_steps_per_graph=max_steps_per_graph, trees=trees, folds=folds, train_folds=train_folds,
        keep=keep, seeds=seeds, batch_configs=batch_configs, lr=lr, seed=seed, out=out, resume=resume,
        overwrite=overwrite, max_graphs=max_graphs, device=device, checkpoint_every=checkpoint_every, eval_tta=eval_tta,
        max_memory_gb=max_memory_gb, progress=progress, loader_workers=loader_workers,
    )  # fmt: skip
    set_threads(threads)  # once the options and data are known to be usable
    try:
        ctx = init_from_env(device, timeout_s=dist_timeout)
    except ValueError as exc:  # WORLD_SIZE / RANK / LOCAL_RANK unusable
        fail(str(exc))
    except RuntimeError as exc:  # a peer never joined the rendezvous
        fail_collective(exc, os.environ.get("RANK", "0"), dist_timeout)
    try:
        fit(s, out, resume=resume, overwrite=overwrite, cache_dir=cache_dir, max_memory_gb=max_memory_gb,
            dist_ctx=ctx, report=typer.echo, splits=splits, names=FIT_NAMES)  # checks --out and --cache-dir first
    except (DatasetError, ValueError, KeyError, OSError) as exc:  # DirectoryLockedError: --out held by another run
        fail(str(exc))
    except RuntimeError as exc:
        if not ctx.enabled:
            raise
        fail_collective(exc, ctx.rank, dist_timeout)
    finally:
        shutdown(ctx)


def register(app: typer.Typer) -> None:
    """Add `train` to `app`."""
    app.command("train")(train)
