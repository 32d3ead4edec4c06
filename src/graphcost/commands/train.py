"""CLI: graphcost train / evaluate / rank / predict (issue 3: cost models).

Thin wrappers over `graphcost.train.*`: parse arguments, find the data, call the library, print.
Library (torch) imports happen inside the commands so `graphcost --help` stays fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import typer

from graphcost.atomic import blocking_file
from graphcost.commands.common import DEVICE_HELP, set_threads, threads_option
from graphcost.commands.choices import Collection, Format, Loss, Model, Precision, complete_device, value
from graphcost.commands.tables import FORMAT_HELP, Column, note, print_table
from graphcost.train import recipe

COLLECTION_HELP = "tile:xla | layout:xla:default | layout:xla:random | layout:nlp:default | layout:nlp:random"
COLLECTION_OPTION = "TpuGraphs collection (default: the one --data-dir holds)"  # the choices are listed by --help
RUN_INFO = "run.json"


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=1)


def _parse_opts(items: list[str]) -> dict:
    """--model-opt KEY=VALUE (VALUE parsed as JSON when possible: 32, 0.1, true, "x")."""
    out = {}
    for item in items:
        if "=" not in item:
            _fail(f"--model-opt expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _find_run_info_file(path: Path) -> Optional[Path]:
    """run.json of a run dir, of the run owning a checkpoint file, or of a fold's parent run."""
    path = Path(path)
    candidates = [path] if path.is_dir() else []
    candidates += list(path.parents)[:3]
    for directory in candidates:
        info = directory / RUN_INFO
        if info.is_file():
            return info
    return None


def _find_run_info(path: Path) -> dict:
    """The parsed run.json behind `path` ({} when there is none); a broken one is a one-line error."""
    info = _find_run_info_file(path)
    if info is None:
        return {}
    try:
        data = json.loads(info.read_text())
    except json.JSONDecodeError as exc:
        _fail(f"{info}: invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"{info}: cannot read ({exc})")
    except RecursionError:
        _fail(f"{info}: invalid JSON (nested too deeply to be a run description)")
    from graphcost.train.run_info import RunInfoError, check_run_info

    try:
        return check_run_info(data, info)
    except RunInfoError as exc:
        _fail(str(exc))


def _run_data(data_dir: Optional[Path], info: dict, run: Path) -> tuple:
    """(data dir, the run.json it was recorded in or None): --data-dir wins over the run's record."""
    if data_dir is not None or not info.get("data_dir"):
        return data_dir, None
    return info["data_dir"], _find_run_info_file(run)


def _check_device(device: str) -> str:
    """--device: auto, cpu, cuda or cuda:N, checked before any work (one-line error otherwise)."""
    from graphcost.train.distributed import check_device

    try:
        return check_device(device)
    except ValueError as exc:
        _fail(str(exc))


def _check_output_file(path: Path, option: str, overwrite: bool = False) -> None:
    """An output file option: refuse a directory, a path below a file, and an existing file unless --overwrite."""
    from graphcost.atomic import OutputExistsError, check_new_file
    from graphcost.train.ranking import check_output_file

    try:
        check_new_file(path, overwrite, option)
    except OutputExistsError as exc:
        _fail(str(exc))
    try:
        check_output_file(path)
    except ValueError as exc:
        _fail(f"{option}: {exc}")


def _check_run_dir(out: Path, overwrite: bool = False, resume: bool = False) -> None:
    """--out of train must be (or become) a directory: refuse a file or a path below a file, and an
    earlier run's directory unless --overwrite (replace it) or --resume (continue it)."""
    from graphcost.atomic import OutputExistsError, check_run_dir

    if out.exists() and not out.is_dir():
        _fail(f"{out}: --out must be a run directory, but this path is a file")
    blocker = blocking_file(out)
    if blocker is not None:
        _fail(f"{out}: --out cannot be created, {blocker} is a file, not a directory")
    try:
        check_run_dir(out, overwrite, resume)
    except OutputExistsError as exc:
        _fail(str(exc))


def _check_resumable(run_dir: Optional[Path]) -> None:
    """--resume needs something to continue: refuse a run directory without a checkpoint."""
    from graphcost.train.crossval import has_progress

    if run_dir is not None and not run_dir.is_dir():
        _fail(f"--resume: {run_dir} does not exist (nothing to resume); run without --resume to start afresh")
    if run_dir is not None and not has_progress(run_dir):
        _fail(f"--resume: {run_dir} holds no checkpoint.pt (nothing to resume); run without --resume to start "
              "afresh (with --overwrite to replace that directory)")  # fmt: skip


def _new_run_name(model: str) -> str:
    """A fresh runs/<model>-<time>-<random> directory (created here, so two runs never share one)."""
    import secrets
    import time

    while True:
        name = f"{model}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        try:
            (LATEST.parent / name).mkdir(parents=True)
            return name
        except FileExistsError:  # the same second and the same 24 random bits: draw again
            continue


def _check_collection(collection: Optional[str]) -> Optional[str]:
    from graphcost.train.predict import COLLECTIONS

    if collection is not None and collection not in COLLECTIONS:
        _fail(f"unknown collection {collection!r}; expected one of {COLLECTION_HELP}")
    return collection


LATEST = Path("runs/latest")


def _run_dir(out: Optional[Path], model: str, resume: bool, ctx, overwrite: bool = False,
             keep: tuple = ()) -> Path:
    """--out (emptied first with --overwrite, but for `keep`: e.g. a --cache-dir inside it, just
    filled), or runs/latest when resuming, or a fresh runs/<model>-<time>-<random> that runs/latest
    points to."""
    from graphcost.atomic import clear_dir

    if out is not None:
        _check_run_dir(out, overwrite, resume)
        if overwrite and ctx.is_main:
            clear_dir(out, keep=keep)
        ctx.barrier()
        return out
    if resume:
        if not LATEST.exists():
            _fail(f"--resume without --out resumes {LATEST}, which does not exist; pass --out RUN_DIR")
        return LATEST.resolve()
    name = [_new_run_name(model) if ctx.is_main else None]
    if ctx.enabled:  # every rank must use rank 0's name
        import torch.distributed as dist

        dist.broadcast_object_list(name, src=0)
    run = LATEST.parent / name[0]
    if ctx.is_main:
        tmp = LATEST.parent / f".latest-{os.getpid()}"
        if tmp.is_symlink():
            tmp.unlink()
        tmp.symlink_to(run.name)
        os.replace(tmp, LATEST)  # atomic re-point of runs/latest
    return run


SEED_MAX = 2**32 - 1  # numpy's legacy seeding and every worker seed stay in range


def _check_train_numbers(lr: float, seed: int, max_memory_gb: float) -> None:
    """One-line errors naming the option for a learning rate, seed or memory bound that training
    cannot use (an infinite or non-positive --lr, a --seed past 2**32 - 1, a NaN --max-memory-gb)."""
    import math

    if not (math.isfinite(lr) and lr > 0):
        _fail(f"--lr must be a finite number > 0, got {lr}")
    if not 0 <= seed <= SEED_MAX:
        _fail(f"--seed must be an integer from 0 to {SEED_MAX}, got {seed}")
    if not (math.isfinite(max_memory_gb) and max_memory_gb > 0):
        _fail(f"--max-memory-gb must be a finite number > 0, got {max_memory_gb}")


_SIZE_OPTIONS = ("hidden", "num_opcodes", "se_reduction")  # besides every *_dim and *_heads: must be >= 1


def _check_model_sizes(model_config: dict) -> None:
    """--model-opt sizes: widths, embedding sizes and head counts must be >= 1, other counts >= 0."""
    for key, v in model_config.items():
        if isinstance(v, bool) or not isinstance(v, int):
            continue
        least = 1 if key in _SIZE_OPTIONS or key.endswith(("_dim", "_heads")) else 0
        if v < least:
            _fail(f"--model-opt {key}={v}: must be >= {least}")


def _check_model_memory(model: str, kind: str, model_config: dict, max_memory_gb: float) -> None:
    """Refuse a model whose weights, gradients and AdamW state (16 bytes a parameter) exceed
    --max-memory-gb, before anything is allocated: the model is built on PyTorch's meta device."""
    import torch

    from graphcost.models.registry import build_model

    try:
        with torch.device("meta"):
            net = build_model(model, kind, **model_config)
    except (ValueError, TypeError, RuntimeError) as exc:
        _fail(f"--model-opt: model {model!r} cannot be built with {model_config}: {exc}")
    params = sum(p.numel() for p in net.parameters())
    need_gb = params * 16 / 1e9
    if need_gb > max_memory_gb:
        _fail(f"--model-opt: model {model!r} has {params:.3g} parameters, {need_gb:.3g} GB with gradients and AdamW "
              f"state, above --max-memory-gb {max_memory_gb:g}")


def _fail_collective(exc: RuntimeError, rank, timeout_s: float) -> None:
    """A torch.distributed failure as a one-line error naming the rank; anything else re-raised."""
    from graphcost.train.distributed import collective_failure

    why = collective_failure(exc)
    if why is None:
        raise exc
    _fail(f"rank {rank}: data-parallel training stopped: {why} (another process died or never started, or a "
          f"collective waited longer than --dist-timeout {timeout_s:g} s)")


def train(
    collection: Optional[Collection] = typer.Option(None, "--collection", "-c", help=COLLECTION_OPTION, callback=value),
    data_dir: Optional[Path] = typer.Option(
        None, "--data-dir", help="official TpuGraphs root, a dir with train/valid/test, or a dir of npz "
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
    eval_tta: int = typer.Option(0, "--eval-tta", min=0, help="TTA permutations during validation"),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="cache of preprocessed graphs"),
    max_memory_gb: float = typer.Option(
        8.0, "--max-memory-gb", help="above this many GB of prepared graphs, read them back from --cache-dir per step; "
        "also the most the model's weights, gradients and AdamW state may take"
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="show progress bars"),
    dist_timeout: float = typer.Option(
        1800.0, "--dist-timeout", min=1.0,  # = graphcost.train.distributed.DEFAULT_TIMEOUT_S (no torch import here)
        help="under torchrun: seconds a rank waits for the others before it fails",
    ),
    loader_workers: int = typer.Option(
        0, "--loader-workers", min=0,
        help="DataLoader worker processes that build the training batches while the model trains "
        "(0: in-process; the batches are the same); pays only with spare CPU cores, e.g. when training on a GPU",
    ),
    threads: str = threads_option(),
) -> None:
    """Train a cost model (TGraph recipe: AdamW, warm-up + cosine, pairwise hinge, K-fold ensembles).

    Under `torchrun --nproc_per_node N -m graphcost train ...` it trains data-parallel.
    """
    import dataclasses

    from graphcost.train.crossval import run_crossval
    from graphcost.data.io.locate import DatasetError, resolve_splits
    from graphcost.data.transforms.pool import graph_kinds, load_prepared
    from graphcost.train.distributed import init_from_env, shutdown
    from graphcost.train.ranking import write_json
    from graphcost.train.trainer import TrainConfig, Trainer, default_batch_configs

    from graphcost.models.registry import MODEL_NAMES, coerce_config, model_kinds
    from graphcost.train.losses import get_loss

    model, loss, collection = value(model), value(loss), value(collection)  # plain str for run.json / checkpoints (older typer makes the enum after the callback)
    _check_collection(collection)
    device = _check_device(device)
    recorded_in = None
    previous: dict = {}
    if resume:  # a resumed run reuses the interrupted run's data and settings
        run_dir = out if out is not None else (LATEST.resolve() if LATEST.exists() else None)
        _check_resumable(run_dir)
        previous = _find_run_info(run_dir) if run_dir is not None and (run_dir / RUN_INFO).is_file() else {}
        if previous:
            old_cfg = previous["config"]
            data_dir = Path(previous["data_dir"]) if previous.get("data_dir") else None
            recorded_in = run_dir / RUN_INFO if data_dir is not None else None
            collection, max_graphs = previous.get("collection"), previous.get("max_graphs")
            folds, train_folds, keep = previous["folds"], previous["train_folds"], previous["keep"]
            model, model_opt, loss, epochs = old_cfg["model"], [], old_cfg["loss"], old_cfg["epochs"]
            batch_configs, lr, seed, eval_tta = old_cfg["batch_configs"], old_cfg["lr"], old_cfg["seed"], old_cfg["eval_tta"]
            patience = old_cfg.get("patience", 0)
            trees = previous.get("trees", False)
            max_steps_per_graph = old_cfg.get("max_steps_per_graph", recipe.MAX_STEPS_PER_GRAPH)
            typer.echo(f"resuming {run_dir} with its recorded data and settings ({RUN_INFO})")
    if model not in MODEL_NAMES:  # fail before any data is prepared
        _fail(f"unknown model {model!r}; choose one of {', '.join(MODEL_NAMES)}")
    if folds < 0 or folds == 1:
        _fail(f"--folds must be 0 (official train/valid split) or at least 2 for cross-validation, got {folds}")
    try:
        model_config = previous["config"]["model_config"] if previous else coerce_config(model, _parse_opts(model_opt))
    except ValueError as exc:
        _fail(f"--model-opt: {exc}")
    _check_train_numbers(lr, seed, max_memory_gb)
    _check_model_sizes(model_config)
    if out is not None:
        _check_run_dir(out, overwrite, resume)
    try:
        get_loss(loss)
    except ValueError as exc:
        _fail(str(exc))
    try:
        splits = resolve_splits(data_dir, collection, seed=seed, max_graphs=max_graphs, recorded_in=recorded_in)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    collection = splits.collection
    if collection and collection.split(":")[0] not in model_kinds(model):
        _fail(f"model {model!r} supports {', '.join(model_kinds(model))} graphs, not the {collection} collection")
    _check_model_memory(model, collection.split(":")[0] if collection else model_kinds(model)[0], model_config,
                        max_memory_gb)
    set_threads(threads)  # once the options and data are known to be usable
    config = TrainConfig(
        model=model, model_config=model_config,
        loss=loss, epochs=epochs, patience=patience, max_steps_per_graph=max_steps_per_graph,
        batch_configs=batch_configs or default_batch_configs(collection), lr=lr, seed=seed, device=device,
        checkpoint_every=checkpoint_every, eval_tta=eval_tta, progress=progress, loader_workers=loader_workers,
    )  # fmt: skip
    try:
        ctx = init_from_env(device, timeout_s=dist_timeout)
    except RuntimeError as exc:  # a peer never joined the rendezvous
        _fail_collective(exc, os.environ.get("RANK", "0"), dist_timeout)
    if overwrite and out is not None and data_dir is not None and data_dir.resolve().is_relative_to(out.resolve()):
        _fail(f"--data-dir {data_dir} lies inside --out {out}, which --overwrite would empty; move the data out first")
    try:
        if ctx.is_main:
            typer.echo(f"data: {splits.describe()}")
        show = progress and ctx.is_main
        if folds:  # cross-validation pools train + valid (all de-duplicated for training)
            pool = load_prepared(
                splits.files["train"] + splits.files["valid"], cache_dir, show, "prepare", max_memory_gb=max_memory_gb
            )
        else:  # validation keeps every configuration of each file
            train_graphs = load_prepared(splits.files["train"], cache_dir, show, "prepare train",
                                         max_memory_gb=max_memory_gb)  # fmt: skip
            valid_graphs = load_prepared(splits.files["valid"], cache_dir, show, "prepare valid", dedup=False,
                                         max_memory_gb=max_memory_gb)  # fmt: skip
            pool = train_graphs
        # only now, with every graph read and validated, is an old run in --out replaced (--overwrite)
        out = _run_dir(out, model, resume, ctx, overwrite, keep=(cache_dir,) if cache_dir is not None else ())
        if ctx.is_main:
            typer.echo(f"run: {out}")
        info = {
            "collection": collection, "data_dir": str(data_dir.resolve()) if data_dir else None,
            "kind": graph_kinds(pool)[0], "folds": folds, "train_folds": train_folds, "keep": keep,
            "max_graphs": max_graphs, "config": dataclasses.asdict(config), "trees": bool(trees and not folds),
        }  # fmt: skip
        if ctx.is_main:
            out.mkdir(parents=True, exist_ok=True)
            write_json(info, out / RUN_INFO)
        if folds:
            result = run_crossval(
                config, pool, out, folds=folds, train_folds=train_folds, keep=keep,
                resume=resume, trainer_kwargs={"dist_ctx": ctx},
            )  # fmt: skip
            if ctx.is_main:
                scores = ", ".join(f"{s:.4f}" for s in result.fold_scores)
                typer.echo(f"folds {scores}; kept {result.kept}; mean {result.metric} {result.mean_score:.4f}")
                typer.echo(f"ensemble: {out / 'ensemble.json'}")
        else:
            trainer = Trainer(config, train_graphs, valid_graphs, out, dist_ctx=ctx)
            result = trainer.fit(resume=resume)
            if ctx.is_main:
                last = result.history[-1]
                typer.echo(
                    f"epoch {last['epoch']}: train loss {last['train_loss']:.4f}, "
                    f"best valid {trainer.metric} {result.best_score:.4f}, {last['configs_per_s']:.0f} configs/s"
                )
                typer.echo(f"model: {result.best_path or result.last_path}")
                _fit_trees(out, trees, train_graphs, valid_graphs, trainer.metric, seed, config.device)
    except (DatasetError, ValueError, KeyError, OSError) as exc:
        _fail(str(exc))
    except RuntimeError as exc:
        if not ctx.enabled:
            raise
        _fail_collective(exc, ctx.rank, dist_timeout)
    finally:
        shutdown(ctx)


def _fit_trees(run_dir: Path, trees: bool, train_graphs, valid_graphs, metric: str, seed: int, device: str) -> None:
    """After the graph model: the trees and their blend (train/blend.py), or no stale blend.json."""
    from graphcost.models.trees import BLEND_FILE, TREES_FILE

    if not trees or not len(valid_graphs):
        for name in (BLEND_FILE, TREES_FILE):
            (run_dir / name).unlink(missing_ok=True)
        if trees:
            typer.echo("trees: skipped (no validation graphs to choose the blend on)")
        return
    from graphcost.train.blend import describe, fit_blend, write_blend
    from graphcost.train.inference import EnsemblePredictor

    graph_model = EnsemblePredictor.load([run_dir], device=device, tta=0, trees=False)
    import torch

    blend, tree_model = fit_blend(graph_model.score, train_graphs, valid_graphs, metric, seed=seed,
                                  threads=torch.get_num_threads())  # LightGBM: the same threads as torch
    write_blend(run_dir, blend, tree_model)
    typer.echo(describe(blend))


PRECISION_HELP = ("bf16 runs TGraph's per-configuration work in bfloat16 (CPU inference, rankings close "
                  "to fp32), fast only on CPUs with AVX512-BF16 or AMX; auto = bf16 there, fp32 elsewhere")  # fmt: skip


def _load_predictor(models: list[Path], tta: int, batch: int, device: str, precision: str = "auto",
                    threads: str | int = 0):
    from graphcost.models.precision import PRECISION_CHOICES, emulated_bf16_warning
    from graphcost.train.checkpoint import CheckpointError
    from graphcost.train.inference import EnsemblePredictor
    from graphcost.train.distributed import resolve_device

    precision = value(precision)
    if precision not in PRECISION_CHOICES:
        _fail(f"--precision must be one of {', '.join(PRECISION_CHOICES)}, got {precision!r}")
    warning = emulated_bf16_warning(precision, resolve_device(device))
    if warning:
        typer.secho(f"warning: {warning}", fg=typer.colors.YELLOW, err=True)
    try:
        predictor = EnsemblePredictor.load(models, device=device, tta=tta, batch_size=batch, precision=precision)
    except (FileNotFoundError, CheckpointError, ValueError, KeyError) as exc:
        _fail(str(exc))
    set_threads(threads)  # after the checks: an error stays one line
    if predictor.blend is not None:
        from graphcost.train.blend import describe

        typer.echo(f"scoring with the run's {describe(predictor.blend[0])}", err=True)
    return predictor


def evaluate(
    run: Path = typer.Argument(..., help="run directory (single or cross-validation) or a checkpoint .pt"),
    split: Optional[str] = typer.Option(None, "--split", help="train | valid | test; default: test when its graphs "
                                        "have runtimes (never used for training or selection), else valid"),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="default: the run's data"),
    collection: Optional[Collection] = typer.Option(None, "--collection", "-c", help=COLLECTION_OPTION, callback=value),
    json_out: Optional[Path] = typer.Option(None, "--json", help="also write the report as JSON"),
    tta: int = typer.Option(10, "--tta", min=0, help="test-time augmentation permutations (TGraph: 10)"),
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
    from graphcost.data.transforms.preprocess import prepare_graph
    from graphcost.data.io.locate import DatasetError, resolve_splits
    import warnings

    from graphcost.train.ranking import evaluate_graphs, write_json

    if split is not None and split not in ("train", "valid", "test"):
        _fail(f"--split must be train, valid or test, got {split!r}")
    _check_collection(collection)
    device = _check_device(device)
    if json_out is not None:
        _check_output_file(json_out, "--json", overwrite)
    info = _find_run_info(run)
    predictor = _load_predictor([run], tta, batch, device, precision, threads)
    data, recorded_in = _run_data(data_dir, info, run)
    try:
        splits = resolve_splits(data, collection or info.get("collection"), seed=info.get("config", {}).get("seed", 0),
                                max_graphs=max_graphs, recorded_in=recorded_in)  # fmt: skip
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    if split is None:
        split = "test" if _has_runtimes(splits.files.get("test", [])) else "valid"
        if split == "valid":
            typer.secho("note: the test split has no runtimes here (e.g. the official TpuGraphs test set); reporting "
                        "valid, which also chose the best epoch, so the figures are optimistic", fg=typer.colors.YELLOW,
                        err=True)  # fmt: skip
    files = splits.files.get(split, [])
    if not files:
        _fail(f"{splits.root}: no {split} graphs")
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
        _fail(str(exc))
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
            _fail(f"--json {json_out}: {exc}")
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


def _has_runtimes(files: list, probe: int = 3) -> bool:
    """True when the first `probe` files are labelled: a ``config_runtime`` with a non-zero value
    (an unlabelled file, like the official TpuGraphs test set, has none or only zero placeholders).
    A labelled file whose runtimes are all equal still counts: the evaluation reports it as skipped.
    A file that cannot be read is a one-line error naming it."""
    import zipfile

    import numpy as np

    if not files:
        return False
    for f in files[:probe]:
        try:
            with np.load(f, allow_pickle=False) as z:
                rt = np.asarray(z["config_runtime"], np.float64) if "config_runtime" in z.files else None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            _fail(f"{f}: cannot read this npz file ({type(exc).__name__}: {exc})")
        if rt is None or rt.size == 0 or not np.any(rt != 0):
            return False
    return True


def rank(
    model: Path = typer.Argument(..., help="run directory or checkpoint .pt"),
    graph: Path = typer.Argument(..., help="a TpuGraphs-schema npz file"),
    top: Optional[int] = typer.Option(None, "--top", min=1, help="show only the N fastest"),
    tta: int = typer.Option(10, "--tta", min=0, help="test-time augmentation permutations (TGraph: 10)"),
    batch: int = typer.Option(128, "--batch", min=1, help="configurations per inference batch"),
    threads: str = threads_option(),
    precision: Precision = typer.Option("auto", "--precision", help=PRECISION_HELP, callback=value),
    device: str = typer.Option("auto", "--device", help=DEVICE_HELP, autocompletion=complete_device),
    fmt: Format = typer.Option("table", "--format", help=FORMAT_HELP, callback=value),
) -> None:
    """Configurations of GRAPH ordered by predicted runtime, fastest first (indices into the file), with
    the file's measured runtime beside each score when it has one."""
    from graphcost.train.predict import prepare_for_prediction, rank_original

    device = _check_device(device)
    predictor = _load_predictor([model], tta, batch, device, precision, threads)
    try:
        prepared, twin = prepare_for_prediction(graph)
        order, scores = rank_original(predictor, prepared, twin)
    except (FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    if prepared.kind == "layout" and prepared.num_config_nodes == 0:
        typer.secho(f"warning: {graph}: no configurable node (key 'node_config_ids' is empty): every configuration "
                    "is the same program, so every one gets the same score", fg=typer.colors.YELLOW, err=True)
    measured = _measured_runtimes(graph, len(scores))
    shown = order[:top] if top else order
    rows = [{"rank": position, "config": int(index), "score": float(scores[index]),
             "runtime": None if measured is None else float(measured[index])} for position, index in enumerate(shown)]
    columns = [Column("rank"), Column("config"), Column("score", show=lambda v: f"{v:.5f}")]
    caption = None
    if measured is not None:
        from graphcost.metrics import kendall_tau

        columns.append(Column("runtime", "runtime (measured)", show=lambda v: f"{v:.6g}"))
        caption = (f"measured runtimes: config_runtime of {graph.name}; Kendall tau of the scores against them "
                   f"{kendall_tau(scores, measured):.3f} over all {len(scores)} configurations")
    print_table(rows, columns, value(fmt), caption=caption)


def _measured_runtimes(graph: Path, k: int):
    """The file's `config_runtime` (K,), None when it has none or only zero placeholders (unlabelled)."""
    import numpy as np

    with np.load(graph, allow_pickle=False) as z:  # validated by prepare_for_prediction already
        if "config_runtime" not in z.files:
            return None
        runtime = np.asarray(z["config_runtime"], dtype=np.float64).reshape(-1)
    return runtime if runtime.shape == (k,) and np.any(runtime != 0) else None


def predict(
    models: list[Path] = typer.Argument(..., help="model run dirs / checkpoints; with --combine: CSV files"),
    out: Path = typer.Option(..., "--out", "-o", help="submission CSV to write"),
    combine: bool = typer.Option(False, "--combine", help="merge the given per-collection CSVs into --out"),
    split: str = typer.Option("test", "--split", help="train | valid | test: which split's graphs to rank"),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="default: the first model's data"),
    collection: Optional[Collection] = typer.Option(None, "--collection", "-c", help=COLLECTION_OPTION, callback=value),
    tta: int = typer.Option(10, "--tta", min=0, help="test-time augmentation permutations (TGraph: 10)"),
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
    from graphcost.train.predict import combine_submissions, submission_rows, write_csv_rows

    _check_output_file(out, "--out", overwrite)
    if combine:
        try:
            combine_submissions(models, out)
        except (FileNotFoundError, ValueError) as exc:
            _fail(str(exc))
        typer.echo(f"wrote {out}")
        return
    for model in models:
        if not model.exists():
            _fail(f"{model}: no such model checkpoint or run directory")
    if split not in ("train", "valid", "test"):
        _fail(f"--split must be train, valid or test, got {split!r}")
    device = _check_device(device)
    info = _find_run_info(models[0])
    collection = _check_collection(collection or info.get("collection"))
    if collection is None:
        _fail("cannot tell the collection for the submission IDs; pass --collection")
    predictor = _load_predictor(models, tta, batch, device, precision, threads)
    try:
        data, recorded_in = _run_data(data_dir, info, models[0])
        splits = resolve_splits(data, collection, max_graphs=max_graphs, recorded_in=recorded_in,
                                seed=info.get("config", {}).get("seed", 0))  # fmt: skip
        files = splits.files.get(split, [])
        if not files:
            _fail(f"{splits.root}: no {split} graphs")
        rows = submission_rows(predictor, files, collection, cache_dir=cache_dir)
    except (DatasetError, ValueError) as exc:
        _fail(str(exc))
    try:
        write_csv_rows(rows, out)
    except (OSError, ValueError) as exc:
        _fail(f"--out {out}: {exc}")
    typer.echo(f"wrote {len(rows)} rows to {out}")


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""
    app.command("train")(train)
    app.command("evaluate")(evaluate)
    app.command("rank")(rank)
    app.command("predict")(predict)
