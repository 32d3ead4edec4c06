"""`graphcost dag`: LayerDAG train / sample / evaluate. Thin: parse, check, call `graphcost.layerdag`.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from graphcost.guards.atomic import OutputExistsError, OutputWriteError
from graphcost.guards.bounds import DIFFUSION_STEPS_MAX, GRAPHS_MAX, SAMPLES_MAX, SEED_MAX, ArgumentError
from graphcost.commands.choices import complete_device
from graphcost.commands.common import (
    DEVICE_HELP,
    check_device_option,
    fail,
    option_message,
    set_threads,
    threads_option,
)
from graphcost.layerdag import dag_recipe

DATA_DIR_HELP = ("directory of the real datasets (tpu_tile_graphs/, nasbench201/; not needed for lp); "
                 "default: $GRAPHCOST_DAG_DATA; where to get them: docs/layerdag.md")
LAST_HELP = "use the final checkpoint.pt instead of best.pt (lowest validation loss) of a run directory"
FINAL_HELP = ("last reverse diffusion step: sample (draw it, as every other step; D3PM) | mode (most probable "
              "node attribute / edge state)")
GUIDANCE_HELP = ("classifier-free guidance weight w >= 0 for a model trained with --label-dropout: logits "
                 "l(y) + w (l(y) - l(null)); larger w follows the label more closely at twice the sampling cost "
                 f"(0 = plain conditional sampling); default: the recipe's {dag_recipe.GUIDANCE:g} for a model trained "
                 "with label dropout, else 0")


# the names of the library verbs' arguments (`graphcost.layerdag.dag_verbs`) in this group's messages
TRAIN_NAMES = {"out": "--out", "resume": "--resume", "overwrite": "--overwrite", "fold": "--fold", "folds": "--folds",
               "dataset": "--dataset", "label_balance": "--label-balance"}
SAMPLE_NAMES = {"out": "--out", "model_path": "MODEL", "labels": "--label", "n": "-n", "final_step": "--final-step",
                "guidance": "--guidance"}
EVALUATE_NAMES = {"json_out": "--json", "data_dir": "--data-dir", "model_path": "MODEL", "samples": "--samples",
                  "dataset": "--dataset", "final_step": "--final-step", "guidance": "--guidance"}


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
        lr: float = typer.Option(dag_recipe.LR, help="AdamW learning rate (the benchmarked recipe's)"),
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
        lr_decay: str = typer.Option(dag_recipe.LR_DECAY, help="none | cosine (to 0 over --epochs; keep --epochs and "
                                     "--lr-decay when resuming)"),
        device: str = typer.Option("auto", help=DEVICE_HELP + " (may change between resumes)", autocompletion=complete_device),
        diffusion_steps: Optional[int] = typer.Option(None, min=1, max=DIFFUSION_STEPS_MAX, help="T_node = T_edge, the diffusion steps trained "
                                                      "and sampled (default: the --size's, small 32, paper 64/16); more "
                                                      "steps = fewer simultaneous changes per reverse step, slower sampling"),
        label_dropout: Optional[float] = typer.Option(None, help="labelled datasets: chance of training a graph with "
                                                      "the null label, so `sample --guidance` can steer harder towards "
                                                      "the label (classifier-free guidance); default: the recipe's "
                                                      f"{dag_recipe.LABEL_DROPOUT:g} on labelled data, 0 on lp; 0 = off"),
        ema_decay: float = typer.Option(0.0, help="exponential moving average of the weights, decay per step (e.g. "
                                        "0.995); validation, best.pt and sampling use the average; keep it when resuming "
                                        "(0 = off)"),
        label_balance: float = typer.Option(0.0, min=0.0, help="labelled datasets: draw training graphs with "
                                            "probability ∝ (label density)^-α so rare labels are seen more often "
                                            "(1 ≈ uniform over the label range; 0 = each graph once per epoch)"),
    ) -> None:
        """Train LayerDAG on a dataset's train split (teacher forcing over all layers)."""
        from graphcost.layerdag.train import LayerDAGTrainConfig
        from graphcost.layerdag.dag_verbs import train_dag_run

        check_device_option(device, resolve=True)
        try:  # the settings check themselves (graphcost.layerdag.train.LayerDAGTrainConfig); the error names the option
            cfg = LayerDAGTrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, size=size, select=select,
                                      lr_decay=lr_decay, device=device, ema_decay=ema_decay, label_balance=label_balance)
        except ArgumentError as exc:
            fail(option_message(exc))
        try:  # the library checks --out (and --resume) before any data is loaded, and holds its lock
            trained = train_dag_run(dataset, out, cfg, num_graphs=num_graphs, folds=folds, fold=fold, data_dir=data_dir,
                                    diffusion_steps=diffusion_steps, label_dropout=label_dropout, overwrite=overwrite,
                                    resume=resume, ready=lambda: set_threads(threads), names=TRAIN_NAMES)  # fmt: skip
        except (FileNotFoundError, ValueError, OutputExistsError, OutputWriteError) as exc:
            fail(str(exc))
        model, hist = trained.model, trained.history
        last = hist[-1] if hist else {}
        typer.echo(f"trained {model.num_parameters():,} parameters on {trained.train_graphs} {dataset} graphs; "
                   f"last epoch: " + ", ".join(f"{k}={v:.4g}" for k, v in last.items()))  # fmt: skip
        from graphcost.layerdag.train import BEST

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
        from graphcost.layerdag.dag_verbs import sample_to_file
        from graphcost.runs.run_json import RunInfoError

        try:  # the library checks --final-step, --out (and its drawing) and MODEL before the model is loaded
            result = sample_to_file(model_path, out, n, label, schedule, tmin, tmax, seed, last, final_step, guidance,
                                    dev, overwrite, ready=lambda: set_threads(threads), say=typer.echo,
                                    names=SAMPLE_NAMES)  # fmt: skip
        except (FileNotFoundError, ValueError, RunInfoError, OutputExistsError, OutputWriteError) as exc:
            fail(str(exc))
        typer.echo(f"wrote {n} DAGs to {out} ({result.seconds / n * 1000:.1f} ms/graph) and a drawing to {result.png}")

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
        from graphcost.layerdag.dag_verbs import evaluate_dag_run
        from graphcost.runs.run_json import RunInfoError

        try:  # the library checks --final-step, --json and MODEL before anything is loaded
            res = evaluate_dag_run(model_path, dataset, data_dir, samples, schedule, tmin, tmax, num_samples, seed,
                                   json_out, last, final_step, guidance, surrogate_repeats, dev, overwrite,
                                   ready=lambda: set_threads(threads), names=EVALUATE_NAMES)  # fmt: skip
        except (FileNotFoundError, ValueError, RunInfoError, OutputExistsError, OutputWriteError) as exc:
            fail(str(exc))
        _print_results(res)
        if json_out is not None:
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
