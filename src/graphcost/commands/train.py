"""`graphcost train`: train a cost model (TGraph's recipe by default), single or K-fold, on one
process or data-parallel under torchrun.

Thin: checks the options (each error names its flag), builds the run's `RunSpec` and calls
`graphcost.train.fit.fit`, which finds the data, picks the run directory, records run.json and trains
the graph model, the trees and their blend. On --resume the spec is the interrupted run's, read back
from its run.json (`RunSpec.from_json`). Library (torch) imports happen inside the
command so `graphcost --help` stays fast.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import typer

from graphcost.commands.choices import Collection, Loss, Model, complete_device, value
from graphcost.commands.common import (
    COLLECTION_OPTION,
    DEVICE_HELP,
    check_collection,
    check_device_option,
    check_dir_option,
    check_outside_inputs_option,
    fail,
    run_info_of,
    set_threads,
    threads_option,
)
from graphcost.bounds import SECONDS_MAX, SEED_MAX, TTA_MAX
from graphcost.commands.numbers import workers_bound
from graphcost.train import recipe


def _parse_opts(items: list[str]) -> dict:
    """--model-opt KEY=VALUE (VALUE parsed as JSON when possible: 32, 0.1, true, "x")."""
    out = {}
    for item in items:
        if "=" not in item:
            fail(f"--model-opt expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out




def _check_train_numbers(lr: float, seed: int, max_memory_gb: float) -> None:
    """One-line errors naming the option for a learning rate, seed or memory bound that training
    cannot use (an infinite or non-positive --lr, a --seed past 2**32 - 1, a NaN --max-memory-gb)."""
    import math

    if not (math.isfinite(lr) and lr > 0):
        fail(f"--lr must be a finite number > 0, got {lr}")
    if not 0 <= seed <= SEED_MAX:
        fail(f"--seed must be an integer from 0 to {SEED_MAX}, got {seed}")
    if not (math.isfinite(max_memory_gb) and max_memory_gb > 0):
        fail(f"--max-memory-gb must be a finite number > 0, got {max_memory_gb}")


_SIZE_OPTIONS = ("hidden", "num_opcodes", "se_reduction")  # besides every *_dim and *_heads: must be >= 1


def _check_model_sizes(model_config: dict) -> None:
    """--model-opt sizes: widths, embedding sizes and head counts must be >= 1, other counts >= 0."""
    for key, v in model_config.items():
        if isinstance(v, bool) or not isinstance(v, int):
            continue
        least = 1 if key in _SIZE_OPTIONS or key.endswith(("_dim", "_heads")) else 0
        if v < least:
            fail(f"--model-opt {key}={v}: must be >= {least}")


def _check_model_memory(model: str, kind: str, model_config: dict, max_memory_gb: float) -> None:
    """Refuse a model whose weights, gradients and AdamW state (16 bytes a parameter) exceed
    --max-memory-gb, before anything is allocated: the model is built on PyTorch's meta device."""
    import torch

    from graphcost.models.registry import build_model

    try:
        with torch.device("meta"):
            net = build_model(model, kind, **model_config)
    except (ValueError, TypeError, RuntimeError) as exc:
        fail(f"--model-opt: model {model!r} cannot be built with {model_config}: {exc}")
    params = sum(p.numel() for p in net.parameters())
    need_gb = params * 16 / 1e9
    if need_gb > max_memory_gb:
        fail(f"--model-opt: model {model!r} has {params:.3g} parameters, {need_gb:.3g} GB with gradients and AdamW "
             f"state, above --max-memory-gb {max_memory_gb:g}")


def _check_outputs_outside_data(out: Optional[Path], cache_dir: Optional[Path], data_dir: Optional[Path],
                                root: Path) -> None:
    """--out and --cache-dir must lie outside the data (--data-dir, else the data found): cache npz files
    written into a split would be read as graphs by every later command on that data."""
    data = [("--data-dir", data_dir if data_dir is not None else root)]
    for option, path in (("--out", out), ("--cache-dir", cache_dir)):
        if path is not None:
            check_outside_inputs_option(path, option, data=data)


def _options_given(ctx: typer.Context) -> set[str]:
    """The parameters of the command given on the command line or by environment variable (not left at
    their defaults): what --resume must find in agreement with run.json."""
    given = set()
    for name in ctx.params:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            given.add(name)
    return given


def _fail_collective(exc: RuntimeError, rank, timeout_s: float) -> None:
    """A torch.distributed failure as a one-line error naming the rank; anything else re-raised."""
    from graphcost.runs.distributed import collective_failure

    why = collective_failure(exc)
    if why is None:
        raise exc
    fail(f"rank {rank}: data-parallel training stopped: {why} (another process died or never started, or a "
         f"collective waited longer than --dist-timeout {timeout_s:g} s)")


def train(
    cli: typer.Context,
    collection: Optional[Collection] = typer.Option(None, "--collection", "-c", help=COLLECTION_OPTION, callback=value),
    data_dir: Optional[Path] = typer.Option(
        None, "--data-dir", help="official TpuGraphs root, a dir with train/valid/test, a dir of npz, or the "
        "name of a dataset shipped with graphcost (cpu_layout, cpu_flags, ...: graphcost.datasets) "
        "(default: the real CPU dataset shipped with graphcost)",
    ),
    model: Model = typer.Option("tgraph", "--model", "-m", help="model name (graphcost.models.registry.MODEL_NAMES)", callback=value),
    model_opt: list[str] = typer.Option([], "--model-opt", help="model config override KEY=VALUE (repeatable)"),
    loss: Loss = typer.Option("hinge", "--loss", help="ranking loss (pairwise hinge: TGraph's)", callback=value),
    epochs: int = typer.Option(
        recipe.EPOCHS, "--epochs", min=1,
        help="at most this many epochs; an epoch takes min(ceil(K / batch), --max-steps-per-graph) batches of a "
        "graph with K configurations",
    ),
    patience: int = typer.Option(
        recipe.PATIENCE, "--patience", min=0,
        help="stop after this many epochs without a better validation score (0: run every epoch)",
    ),
    max_steps_per_graph: int = typer.Option(
        recipe.MAX_STEPS_PER_GRAPH, "--max-steps-per-graph", min=0,
        help="at most this many batches of one graph an epoch (0: no cap)",
    ),
    trees: bool = typer.Option(
        recipe.TREES, "--trees/--no-trees",
        help="also fit gradient-boosted trees on the configuration table and blend them with the graph model, "
        "the weight chosen on the validation split (w = 1: the graph model alone); not with --folds",
    ),
    folds: int = typer.Option(0, "--folds", help="K-fold cross-validation by graph on train+valid (0: official split)"),
    train_folds: int = typer.Option(5, "--train-folds", min=1, help="train only the first n folds"),
    keep: int = typer.Option(4, "--keep", min=1, help="keep the best k folds in the ensemble"),
    batch_configs: Optional[int] = typer.Option(
        None, "--batch-configs", min=2, help="configurations per batch (default 128 for random collections, else 64)"
    ),
    lr: float = typer.Option(recipe.LR, "--lr", help="peak AdamW learning rate (warm-up + cosine decay)"),
    seed: int = typer.Option(0, "--seed", help="random seed (data split, sampling, initialisation)"),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o", help="run directory (default: runs/<model>-<time>, linked as runs/latest; "
        "with --resume: runs/latest)",
    ),
    resume: bool = typer.Option(False, "--resume", help="continue the run in --out from its last checkpoint"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace the run already in --out (default: refuse)"),
    max_graphs: Optional[int] = typer.Option(None, "--max-graphs", min=1, help="at most N graphs per split"),
    device: str = typer.Option("auto", "--device", help=DEVICE_HELP, autocompletion=complete_device),
    checkpoint_every: int = typer.Option(0, "--checkpoint-every", min=0, help="also checkpoint every N steps"),
    eval_tta: int = typer.Option(0, "--eval-tta", min=0, max=TTA_MAX, help="TTA permutations during validation"),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="cache of preprocessed graphs"),
    max_memory_gb: float = typer.Option(
        8.0, "--max-memory-gb", help="above this many GB of prepared graphs, read them back from --cache-dir per step; "
        "also the most the model's weights, gradients and AdamW state may take"
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="show progress bars"),
    dist_timeout: float = typer.Option(
        1800.0, "--dist-timeout", min=1.0, max=SECONDS_MAX,  # = graphcost.runs.distributed.DEFAULT_TIMEOUT_S (no torch import here)
        help="under torchrun: seconds a rank waits for the others before it fails",
    ),
    loader_workers: int = typer.Option(
        0, "--loader-workers", min=0, callback=workers_bound,  # at most one per usable core
        help="DataLoader worker processes that build the training batches while the model trains "
        "(0: in-process; the batches are the same); pays only with spare CPU cores, e.g. when training on a GPU",
    ),
    threads: str = threads_option(),
) -> None:
    """Train a cost model (TGraph recipe: AdamW, warm-up + cosine, pairwise hinge, K-fold ensembles).

    Under `torchrun --nproc_per_node N -m graphcost train ...` it trains data-parallel.
    """
    from graphcost.atomic import OutputExistsError, OutputPathError
    from graphcost.data.io.locate import DatasetError, resolve_splits
    from graphcost.models.losses import get_loss
    from graphcost.models.registry import MODEL_NAMES, coerce_config, model_kinds
    from graphcost.runs.distributed import init_from_env, shutdown
    from graphcost.runs.run_dir import LATEST, RunDirError, check_out, check_resumable
    from graphcost.runs.run_info import RUN_INFO
    from graphcost.train.fit import check_model_kind, fit
    from graphcost.train.spec import RunSpec, contradiction
    from graphcost.train.trainer import TrainConfig

    model, loss, collection = value(model), value(loss), value(collection)  # plain str for run.json / checkpoints (older typer makes the enum after the callback)
    check_collection(collection)
    device = check_device_option(device)
    s = RunSpec(
        config=TrainConfig(model=model, loss=loss, epochs=epochs, batch_configs=batch_configs, lr=lr, seed=seed,
                           eval_tta=eval_tta, patience=patience, max_steps_per_graph=max_steps_per_graph,
                           device=device, checkpoint_every=checkpoint_every, progress=progress,
                           loader_workers=loader_workers),
        data_dir=data_dir, collection=collection, max_graphs=max_graphs, folds=folds, train_folds=train_folds,
        keep=keep, trees=trees,
    )  # fmt: skip
    model_config = None  # recorded in run.json on --resume; else the recipe's with --model-opt
    if resume:  # a resumed run reuses the interrupted run's data and settings
        run_dir = out if out is not None else (LATEST.resolve() if LATEST.exists() else None)
        try:
            check_resumable(run_dir)
        except RunDirError as exc:
            fail(str(exc))
        previous = run_info_of(run_dir) if run_dir is not None and (run_dir / RUN_INFO).is_file() else {}
        if previous and run_dir is not None:
            # what may change on a resume (trainer.RESUME_FREE) comes from the options
            recorded = RunSpec.from_json(previous, run_dir, device=device, checkpoint_every=checkpoint_every,
                                         progress=progress, loader_workers=loader_workers)
            why = contradiction(recorded, s, _options_given(cli), run_dir / RUN_INFO,
                                _parse_opts(model_opt) if model_opt else None)
            if why is not None:  # issue 36: a contradicting --collection / --epochs was silently ignored
                fail(why)
            s, model_config = recorded, recorded.config.model_config
            typer.echo(f"resuming {run_dir} with its recorded data and settings ({RUN_INFO})")
    name = s.config.model  # the model to train: the option's, or on --resume the recorded one
    if name not in MODEL_NAMES:  # fail before any data is prepared
        fail(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
    if s.folds < 0 or s.folds == 1:
        fail(f"--folds must be 0 (official train/valid split) or at least 2 for cross-validation, got {s.folds}")
    try:
        if model_config is None:
            model_config = coerce_config(name, {**(recipe.MODEL_CONFIG if name == recipe.MODEL else {}),
                                                 **_parse_opts(model_opt)})
    except ValueError as exc:
        fail(f"--model-opt: {exc}")
    s.config.model_config = model_config
    _check_train_numbers(s.config.lr, s.config.seed, max_memory_gb)
    _check_model_sizes(model_config)
    if out is not None:
        try:
            check_out(out, overwrite, resume)
        except (OutputExistsError, OutputPathError) as exc:
            fail(str(exc))
    if cache_dir is not None:
        check_dir_option(cache_dir, "--cache-dir")
    try:
        get_loss(s.config.loss)
    except ValueError as exc:
        fail(str(exc))
    try:
        splits = resolve_splits(s.data_dir, s.collection, seed=s.config.seed, max_graphs=s.max_graphs,
                                recorded_in=s.recorded_in)  # fmt: skip
        check_model_kind(name, splits.collection)
    except (DatasetError, ValueError) as exc:
        fail(str(exc))
    _check_outputs_outside_data(out, cache_dir, s.data_dir, splits.root)
    found = splits.collection
    _check_model_memory(name, found.split(":")[0] if found else model_kinds(name)[0], model_config,
                        max_memory_gb)
    if overwrite and out is not None and s.data_dir is not None and s.data_dir.resolve().is_relative_to(out.resolve()):
        fail(f"--data-dir {s.data_dir} lies inside --out {out}, which --overwrite would empty; move the data out first")
    set_threads(threads)  # once the options and data are known to be usable
    try:
        ctx = init_from_env(device, timeout_s=dist_timeout)
    except RuntimeError as exc:  # a peer never joined the rendezvous
        _fail_collective(exc, os.environ.get("RANK", "0"), dist_timeout)
    try:
        fit(s, out, resume=resume, overwrite=overwrite, cache_dir=cache_dir, max_memory_gb=max_memory_gb,
            dist_ctx=ctx, report=typer.echo, splits=splits)
    except (DatasetError, ValueError, KeyError, OSError) as exc:  # DirectoryLockedError: --out held by another run
        fail(str(exc))
    except RuntimeError as exc:
        if not ctx.enabled:
            raise
        _fail_collective(exc, ctx.rank, dist_timeout)
    finally:
        shutdown(ctx)


def register(app: typer.Typer) -> None:
    """Add `train` to `app`."""
    app.command("train")(train)
