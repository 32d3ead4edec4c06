"""`graphcost dag`: LayerDAG train / sample / evaluate. Thin: parse, check, call `graphcost.dag`.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.atomic import OutputExistsError, OutputPathError
from graphcost.bounds import DIFFUSION_STEPS_MAX, GRAPHS_MAX, SAMPLES_MAX, SEED_MAX, ArgumentError
from graphcost.commands.choices import complete_device
from graphcost.commands.common import (
    DEVICE_HELP,
    check_device_option,
    check_output_option,
    check_outside_inputs_option,
    fail,
    option_message,
    set_threads,
    threads_option,
)
from graphcost.dag import recipe
from graphcost.dag.datasets import DATASET_NAMES
from graphcost.dag.run_info import RUN_INFO


def _write_json(obj, path: Path) -> None:
    """Write JSON atomically; the temp file is removed if anything fails."""
    from graphcost.atomic import atomic_write_json

    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a directory; give the .json file to write")
    atomic_write_json(obj, path)


def _os_msg(exc: OSError) -> str:
    """'PATH: problem' for an OSError (its own text when it carries no file name)."""
    if exc.filename is None:
        return str(exc)
    return f"{exc.filename}: {exc.strerror or exc}"


def _check_resume(out: Path, resume: bool) -> None:
    """dag train --resume needs a checkpoint.pt in --out to continue from."""
    from graphcost.dag.train import CHECKPOINT

    if resume and not (out / CHECKPOINT).is_file():
        fail(f"--resume: {out / CHECKPOINT} does not exist (nothing to resume); run without --resume to start "
             "afresh (with --overwrite to replace that directory)")  # fmt: skip


def _check_model_path(path: Path) -> None:
    if not path.exists():
        fail(f"MODEL {path}: no such run directory or checkpoint file")


DATA_DIR_HELP = ("directory of the real datasets (tpu_tile_graphs/, nasbench201/; not needed for lp); "
                 "default: $GRAPHCOST_DAG_DATA; where to get them: docs/layerdag.md")


def _load_splits(dataset: str, seed: int, num_graphs: Optional[int], fold: Optional[list] = None,
                 data_dir: Optional[Path] = None):
    """The run's train/valid/test split; `fold` = [f, k] for fold f of a k-fold cross-validation;
    `data_dir`: the real datasets' directory (default: `graphcost.dag.datasets.locate`)."""
    from graphcost.dag.datasets import load_dataset

    if dataset not in DATASET_NAMES:
        fail(f"--dataset must be one of {', '.join(DATASET_NAMES)}, got '{dataset}'")
    kwargs = {} if num_graphs is None or dataset == "tpu-tile" else {"num_graphs": num_graphs}
    if fold is not None:
        kwargs["fold"] = tuple(fold)
    if dataset != "lp":
        kwargs["data_dir"] = data_dir
    try:
        return load_dataset(dataset, seed=seed, **kwargs)
    except (FileNotFoundError, ValueError) as exc:
        fail(str(exc))


def _run_info(run: Path) -> dict:
    """The checked run.json beside a model ({} when there is none); a broken one is a one-line error."""
    from graphcost.dag.run_info import read_dag_run_info
    from graphcost.runs.run_info import RunInfoError

    try:
        return read_dag_run_info(run)
    except RunInfoError as exc:
        fail(str(exc))


LAST_HELP = "use the final checkpoint.pt instead of best.pt (lowest validation loss) of a run directory"
FINAL_HELP = ("last reverse diffusion step: sample (draw it, as every other step; D3PM) | mode (most probable "
              "node attribute / edge state)")
GUIDANCE_HELP = ("classifier-free guidance weight w >= 0 for a model trained with --label-dropout: logits "
                 "l(y) + w (l(y) - l(null)); larger w follows the label more closely at twice the sampling cost "
                 f"(0 = plain conditional sampling); default: the recipe's {recipe.GUIDANCE:g} for a model trained "
                 "with label dropout, else 0")


def _check_guidance(model, guidance: Optional[float]) -> float:
    """--guidance for `model` (None: the recipe's, `recipe.guidance_for`), checked; one line when it cannot be
    honoured."""
    from graphcost.dag.sample import check_guidance

    if guidance is None:
        return recipe.guidance_for(model.config)
    try:
        check_guidance(model.config, guidance)
    except ValueError as exc:
        fail(f"--guidance: {exc}")
    return guidance


def _check_final_step(value: str) -> None:
    if value not in ("mode", "sample"):
        fail(f"--final-step must be mode or sample, got '{value}'")


def _schedule(model, kind: str, tmin: Optional[int], tmax: Optional[int]):
    from graphcost.dag.schedule import make_schedule

    try:
        return make_schedule(kind, model.config.T_node, model.config.max_layers, tmin, tmax)
    except ValueError as exc:
        fail(str(exc))


def register(app: typer.Typer) -> None:
    """Add train / sample / evaluate to the `dag` group."""

    @app.command("train")
    def train(
        dataset: str = typer.Option(..., help="lp | tpu-tile | nasbench201"),
        out: Path = typer.Option(Path("runs/layerdag"), help="run directory (checkpoint.pt, best.pt, run.json)"),
        epochs: int = typer.Option(40, min=1, help="training epochs"),
        resume: bool = typer.Option(False, help="continue from OUT/checkpoint.pt"),
        overwrite: bool = typer.Option(False, "--overwrite", help="replace the run already in --out (default: refuse)"),
        size: str = typer.Option("small", help="small (CPU default) | paper (LayerDAG widths/depths/steps)"),
        batch_size: int = typer.Option(32, min=1, help="graphs per step (each with all its layers)"),
        lr: float = typer.Option(recipe.LR, help="AdamW learning rate (the benchmarked recipe's)"),
        seed: int = typer.Option(0, min=0, max=SEED_MAX, help="seed for data split, init, noise"),
        num_graphs: Optional[int] = typer.Option(None, min=1, max=GRAPHS_MAX, help="LP / NAS-Bench-201: graphs to generate / draw"),
        folds: int = typer.Option(0, min=0, help="k-fold cross-validation: split the graphs into K seeded parts and "
                                  "train on fold --fold (test = part F, valid = part F-1, train = the rest); "
                                  "`dag evaluate` uses the same fold (0 = the 80/10/10 split)"),
        fold: int = typer.Option(0, min=0, help="with --folds K: which fold, 0..K-1"),
        data_dir: Optional[Path] = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
        threads: str = threads_option(),
        select: str = typer.Option("module", help="best.pt selection: module (each module's own best validation "
                                   "epoch) | total (epoch with the best summed validation loss)"),
        lr_decay: str = typer.Option(recipe.LR_DECAY, help="none | cosine (to 0 over --epochs; keep --epochs and "
                                     "--lr-decay when resuming)"),
        device: str = typer.Option("auto", help=DEVICE_HELP + " (may change between resumes)", autocompletion=complete_device),
        diffusion_steps: Optional[int] = typer.Option(None, min=1, max=DIFFUSION_STEPS_MAX, help="T_node = T_edge, the diffusion steps trained "
                                                      "and sampled (default: the --size's, small 32, paper 64/16); more "
                                                      "steps = fewer simultaneous changes per reverse step, slower sampling"),
        label_dropout: Optional[float] = typer.Option(None, help="labelled datasets: chance of training a graph with "
                                                      "the null label, so `sample --guidance` can steer harder towards "
                                                      "the label (classifier-free guidance); default: the recipe's "
                                                      f"{recipe.LABEL_DROPOUT:g} on labelled data, 0 on lp; 0 = off"),
        ema_decay: float = typer.Option(0.0, help="exponential moving average of the weights, decay per step (e.g. "
                                        "0.995); validation, best.pt and sampling use the average; keep it when resuming "
                                        "(0 = off)"),
        label_balance: float = typer.Option(0.0, min=0.0, help="labelled datasets: draw training graphs with "
                                            "probability ∝ (label density)^-α so rare labels are seen more often "
                                            "(1 ≈ uniform over the label range; 0 = each graph once per epoch)"),
    ) -> None:
        """Train LayerDAG on a dataset's train split (teacher forcing over all layers)."""
        import torch

        from graphcost.dag.experiment import num_categories
        from graphcost.dag.train import LayerDAGTrainConfig, train_layerdag

        check_device_option(device, resolve=True)
        try:  # the settings check themselves (graphcost.dag.train.LayerDAGTrainConfig); the error names the option
            cfg = LayerDAGTrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, size=size, select=select,
                                      lr_decay=lr_decay, device=device, ema_decay=ema_decay, label_balance=label_balance)
        except ArgumentError as exc:
            fail(option_message(exc))
        from graphcost.runs.lifecycle import RunDirectory

        try:
            run_dir = RunDirectory(out, "--out", overwrite=overwrite, resume=resume)
        except (OutputExistsError, OutputPathError) as exc:
            fail(str(exc))
        _check_resume(out, resume)
        overrides: dict = {}
        if diffusion_steps is not None:
            overrides.update(T_node=diffusion_steps, T_edge=diffusion_steps)
        if fold and not folds:
            fail(f"--fold {fold} needs --folds K (the number of cross-validation folds)")
        if folds and not (folds >= 3 and fold < folds):
            fail(f"--folds must be >= 3 and --fold in 0..{max(folds - 1, 0)}, got --folds {folds} --fold {fold}")
        cv_fold = [fold, folds] if folds else None
        set_threads(threads)  # once the options are known to be usable: an error stays one line
        torch.manual_seed(seed)
        splits = _load_splits(dataset, seed, num_graphs, cv_fold, data_dir)
        if label_balance and any(d.label is None for d in splits["train"]):
            fail(f"--label-balance needs labelled training graphs; --dataset {dataset} has unlabelled ones")
        labelled = bool(splits["train"]) and all(d.label is not None for d in splits["train"])
        overrides["label_dropout"] = recipe.label_dropout_for(labelled) if label_dropout is None else label_dropout
        from graphcost.dag.datasets.locate import dag_data_dir

        found = dag_data_dir(data_dir) if dataset != "lp" else None  # recorded: `dag evaluate` reads the same data
        info = {"dataset": dataset, "seed": seed, "num_graphs": num_graphs, "fold": cv_fold,
                "data_dir": str(found.resolve()) if found is not None else None,
                "train_labels": [d.label for d in splits["train"] if d.label is not None]}  # fmt: skip
        try:
            with run_dir:  # locked (a run another live process holds is never removed), emptied with --overwrite
                _write_json(info, out / RUN_INFO)
                model, hist = train_layerdag(splits["train"], out, cfg, valid_dags=splits["valid"], resume=resume,
                                             num_categories=num_categories(dataset, splits), **overrides)  # fmt: skip
        except OutputExistsError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"--out: {_os_msg(exc)}")
        except ValueError as exc:
            fail(str(exc))
        last = hist[-1] if hist else {}
        typer.echo(f"trained {model.num_parameters():,} parameters on {len(splits['train'])} {dataset} graphs; "
                   f"last epoch: " + ", ".join(f"{k}={v:.4g}" for k, v in last.items()))  # fmt: skip
        from graphcost.dag.train import BEST

        best = out / BEST
        typer.echo(f"checkpoint: {out / 'checkpoint.pt'}" + (f"; selected weights (--select {select}): {best}" if best.is_file() else ""))

    @app.command("sample")
    def sample(
        model_path: Path = typer.Argument(..., metavar="MODEL", help="run directory (uses best.pt if present) or a checkpoint file"),
        n: int = typer.Option(100, "-n", min=1, max=SAMPLES_MAX, help="number of DAGs"),
        label: Optional[list[float]] = typer.Option(None, help="target label (repeat for one per graph); "
                                                    "default for a conditional model: training labels drawn at random"),
        schedule: str = typer.Option("constant", help="constant (all --tmax steps every layer) | linear (LayerDAG eq. 1, --tmin..--tmax)"),
        tmin: Optional[int] = typer.Option(None, min=1, help="eq. 1 T_min (default 1)"),
        tmax: Optional[int] = typer.Option(None, min=1, help="eq. 1 T_max / constant T (default: trained T)"),
        out: Path = typer.Option(..., help="output .npz (flat DAG format); a PNG of a few is written beside it"),
        seed: int = typer.Option(0, min=0, max=SEED_MAX),
        last: bool = typer.Option(False, "--last", help=LAST_HELP),
        threads: str = threads_option(),
        final_step: str = typer.Option("sample", help=FINAL_HELP),
        guidance: Optional[float] = typer.Option(None, help=GUIDANCE_HELP),
        device: str = typer.Option("auto", help=DEVICE_HELP + " (the networks; random draws stay on CPU)", autocompletion=complete_device),
        overwrite: bool = typer.Option(False, "--overwrite", help="replace --out (and its PNG) if they exist"),
    ) -> None:
        """Sample DAGs from a trained LayerDAG."""
        dev = check_device_option(device, resolve=True)
        import numpy as np

        from graphcost.dag.draw import describe_dataset, draw_dags
        from graphcost.dag.io import save_dags
        from graphcost.dag.sample import sample_dags
        from graphcost.dag.train import load_model

        _check_final_step(final_step)
        if out.with_suffix(".png") == out:  # issue 65: the DAGs, then the drawing, were written to one path
            fail(f"--out {out}: the DAGs are written there as .npz and their drawing beside it as "
                 f"{out.with_suffix('.png').name}; give a .npz path (e.g. {out.with_suffix('.npz')})")
        check_output_option(out, "--out", overwrite)  # the outputs first, as every command (issue 36)
        check_output_option(out.with_suffix(".png"), "--out", overwrite)  # the drawing written beside it
        for written in (out, out.with_suffix(".png")):
            check_outside_inputs_option(written, "--out", files=[("MODEL", model_path)])
        _check_model_path(model_path)
        set_threads(threads)
        try:
            model = load_model(model_path, last=last).to(dev)
        except (FileNotFoundError, ValueError) as exc:
            fail(str(exc))
        labels = None
        if label and not model.config.conditional:
            fail("--label: this model is unconditional (trained on unlabelled graphs) and cannot follow a label; "
                 "sample without --label")
        if label:
            labels = np.array(label, dtype=np.float64)
            if labels.size not in (1, n):
                fail(f"--label given {labels.size} times; give it once or once per graph (-n {n})")
        elif model.config.conditional:
            pool = _run_info(model_path).get("train_labels")
            if not pool:
                fail("this model is conditional: pass --label")
            labels = np.random.default_rng(seed).choice(np.array(pool), size=n)
            typer.echo(f"no --label: conditioning on {n} labels drawn from the training labels")
        sched = _schedule(model, schedule, tmin, tmax)
        guidance = _check_guidance(model, guidance)
        style = describe_dataset(_run_info(model_path).get("dataset"))  # the drawing's legend and label names
        import time

        t0 = time.perf_counter()
        dags = sample_dags(model, n, labels=labels, schedule=sched, seed=seed, final_step=final_step, guidance=guidance)
        secs = time.perf_counter() - t0
        try:
            save_dags(dags, out)
            png = draw_dags(dags, out.with_suffix(".png"), title=f"LayerDAG samples ({schedule} schedule)", **style)
        except OSError as exc:
            fail(f"--out: {_os_msg(exc)}")
        except ValueError as exc:  # DAGFileError names the file
            fail(f"--out: {exc}")
        typer.echo(f"wrote {n} DAGs to {out} ({secs / n * 1000:.1f} ms/graph) and a drawing to {png}")

    @app.command("evaluate")
    def evaluate(
        model_path: Path = typer.Argument(..., metavar="MODEL", help="run directory (uses best.pt if present) or a checkpoint file"),
        dataset: Optional[str] = typer.Option(None, help="default: the dataset the run was trained on"),
        data_dir: Optional[Path] = typer.Option(None, "--data-dir", help=DATA_DIR_HELP.replace(
            "default:", "default: the run's (run.json), else")),
        samples: Optional[Path] = typer.Option(None, help="score this .npz instead of generating (no Pearson)"),
        schedule: str = typer.Option("constant", help="linear (eq. 1) | constant"),
        tmin: Optional[int] = typer.Option(None, min=1),
        tmax: Optional[int] = typer.Option(None, min=1),
        num_samples: Optional[int] = typer.Option(None, min=1, max=SAMPLES_MAX, help="unconditional models: DAGs to generate"),
        seed: int = typer.Option(0, min=0, max=SEED_MAX),
        json_out: Optional[Path] = typer.Option(None, "--json", help="also write the results as JSON here"),
        last: bool = typer.Option(False, "--last", help=LAST_HELP),
        threads: str = threads_option(),
        final_step: str = typer.Option("sample", help=FINAL_HELP),
        guidance: Optional[float] = typer.Option(None, help=GUIDANCE_HELP),
        surrogate_repeats: int = typer.Option(3, min=1, help="labelled data: surrogate regressors fitted per training set "
                                              "(seeds 0..k-1); their Pearsons are averaged (one fit varies by about ±0.02)"),
        device: str = typer.Option("auto", help=DEVICE_HELP + " (the LayerDAG networks)", autocompletion=complete_device),
        overwrite: bool = typer.Option(False, "--overwrite", help="replace the --json file if it exists"),
    ) -> None:
        """Generate and score: validity (LP), MMD table, uniqueness/novelty, surrogate Pearson (labelled data)."""
        dev = check_device_option(device, resolve=True)
        from graphcost.dag.quality.surrogate import SurrogateConfig
        from graphcost.dag.experiment import describe_samples, evaluate_model
        from graphcost.dag.io import load_dags
        from graphcost.dag.train import load_model

        _check_final_step(final_step)
        if json_out is not None:  # the output first, as every command (issue 36)
            check_output_option(json_out, "--json", overwrite)
            check_outside_inputs_option(json_out, "--json", data=[("--data-dir", data_dir)],
                                        files=[("MODEL", model_path), ("--samples", samples)])
        _check_model_path(model_path)
        info = _run_info(model_path)
        dataset = dataset or info.get("dataset")
        if dataset is None:
            fail(f"MODEL {model_path}: no run.json beside it; pass --dataset")
        recorded = Path(info["data_dir"]) if info.get("data_dir") and dataset == info.get("dataset") else None
        splits = _load_splits(dataset, info.get("seed", 0), info.get("num_graphs"), info.get("fold"),
                              data_dir or recorded)
        set_threads(threads)
        if samples is not None:
            try:
                res = describe_samples(load_dags(samples), splits, dataset)
            except ValueError as exc:
                fail(str(exc))
        else:
            try:
                model = load_model(model_path, last=last).to(dev)
            except (FileNotFoundError, ValueError) as exc:
                fail(str(exc))
            guidance = _check_guidance(model, guidance)
            res, _ = evaluate_model(model, splits, dataset, _schedule(model, schedule, tmin, tmax), seed,
                                    num_samples=num_samples, final_step=final_step, guidance=guidance,
                                    surrogate_cfg=SurrogateConfig(repeats=surrogate_repeats))  # fmt: skip
        _print_results(res)
        if json_out is not None:
            try:
                _write_json(res, json_out)
            except OSError as exc:
                fail(f"--json: {_os_msg(exc)}")
            typer.echo(f"results: {json_out}")


def _print_results(res: dict) -> None:
    rows = [("generated graphs", res["num_generated"]),
            ("mean nodes (real test)", f"{res['mean_nodes']:.1f} ({res['real_mean_nodes']:.1f})"),
            ("mean edges (real test)", f"{res['mean_edges']:.1f} ({res['real_mean_edges']:.1f})")]  # fmt: skip
    if "validity" in res:
        rows.append(("LP validity", f"{res['validity']:.3f}"))
    rows += [("uniqueness", f"{res['uniqueness']:.3f}"), ("novelty", f"{res['novelty']:.3f}")]
    if "surrogate" in res:
        s = res["surrogate"]
        fits = len(s["pearson_real_by_seed"])
        if fits > 1:
            rows.append(("surrogate fits averaged", fits))
        rows += [("Pearson real-trained", f"{s['pearson_real']:.3f}"),
                 ("Pearson synthetic-trained", f"{s['pearson_synthetic']:.3f}"), ("ratio", f"{s['ratio']:.3f}")]  # fmt: skip
        rows.append(("on log labels: real / synthetic / ratio",
                     f"{s['pearson_real_log']:.3f} / {s['pearson_synthetic_log']:.3f} / {s['ratio_log']:.3f}"))  # fmt: skip
        rows.append(("label fidelity (Pearson)", f"{s['label_fidelity']:.3f}"))
    if "sample_seconds_per_graph" in res:
        rows.append(("sampling s/graph", f"{res['sample_seconds_per_graph']:.4f}"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        typer.echo(f"{k:<{width}}  {v}")
    g = res.get("mmd_graphs")
    capped = "" if not g or (g["generated"], g["real"]) == (g["of_generated"], g["of_real"]) else (
        f"; seeded subsample of at most {g['max']} per side: {g['generated']} of {g['of_generated']} generated, "
        f"{g['real']} of {g['of_real']} real graphs")  # fmt: skip
    typer.echo(f"MMD^2 vs real test set ({res.get('mmd_kernel', 'kernel not recorded')}{capped}):")
    for k, v in res["mmd"].items():
        typer.echo(f"  {k:<{width - 2}}  {v:.4f}")
