"""The library verbs behind `graphcost dag train`, `dag sample` and `dag evaluate` (the library owns
its guards).

`train_dag_run(dataset, out, ...)` trains a LayerDAG on a dataset's train split into the run directory `out`
(run.json recorded for `evaluate_dag_run`); `sample_to_file(model_path, out, ...)` samples DAGs from a trained
LayerDAG and writes them (flat npz) with a drawing of a few beside them (PNG); `evaluate_dag_run(model_path,
...)` generates (or reads) DAGs and scores them against the run's test split, optionally writing the results as
JSON. `train_dag_run` checks its run directory before any data is loaded (`graphcost.runs.lifecycle.
RunDirectory`: not a file nor below one, not a device, not on a virtual or read-only file system, not an earlier
run unless `overwrite` or `resume`, and with `resume` a checkpoint to continue from) and holds its lock while it
writes. The other two check, before the model is loaded or anything is sampled:

* their outputs (`graphcost.guards.atomic.check_output_path`): an existing file without `overwrite` is an
  OutputExistsError; a directory, a path below a file, a device, a virtual or read-only file system, or a file
  of the inputs (the model's run, the data directory, the samples) an OutputPathError; the npz and its drawing
  may not be one file;
* their settings: `final_step`, `guidance` (against the model), `labels` (against a conditional or
  unconditional model), the schedule, the model path and the dataset, each a ValueError (FileNotFoundError for
  a model that is not there).

Every message names the argument: its Python name by default, or the name `names` maps it to (the command
passes ``{"out": "--out", "model_path": "MODEL", "labels": "--label", ...}`` so the CLI's words stay its own).
A write that fails is an `graphcost.guards.atomic.OutputWriteError` naming the argument.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphcost.guards.atomic import OutputWriteError

Say = Callable[[str], None]


def _namer(names: Mapping[str, str] | None) -> Callable[[str], str]:
    """The name messages give argument `key`: `names`' entry, else `key` itself."""
    return lambda key: (names or {}).get(key, key)


def _os_msg(exc: OSError) -> str:
    """'PATH: problem' for an OSError (its own text when it carries no file name)."""
    if exc.filename is None:
        return str(exc)
    return f"{exc.filename}: {exc.strerror or exc}"


def check_final_step(value: str, option: str = "final_step") -> str:
    """The last reverse diffusion step: 'mode' or 'sample', else a ValueError naming `option`."""
    if value not in ("mode", "sample"):
        raise ValueError(f"{option} must be mode or sample, got '{value}'")
    return value


def check_model_path(path: str | os.PathLike, option: str = "model_path") -> Path:
    """A run directory or checkpoint file that exists, else a FileNotFoundError naming `option`."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{option} {path}: no such run directory or checkpoint file")
    return Path(path)


def guidance_of(model: Any, guidance: float | None, option: str = "guidance") -> float:
    """The guidance weight for `model`: the recipe's when None (`graphcost.layerdag.dag_recipe.guidance_for`), else
    `guidance` checked (`graphcost.layerdag.sample.check_guidance`; a ValueError naming `option`)."""
    from graphcost.layerdag import dag_recipe
    from graphcost.layerdag.sample import check_guidance

    if guidance is None:
        return dag_recipe.guidance_for(model.config)
    try:
        check_guidance(model.config, guidance)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None
    return guidance


def _schedule(model: Any, kind: str, tmin: int | None, tmax: int | None) -> Any:
    from graphcost.layerdag.denoising_schedule import make_schedule

    return make_schedule(kind, model.config.T_node, model.config.max_layers, tmin, tmax)


def _load_model(model_path: Path, last: bool, device: Any) -> Any:
    from graphcost.layerdag.train import load_model
    from graphcost.runs.distributed import resolve_device

    return load_model(model_path, last=last).to(resolve_device(device) if isinstance(device, str) else device)


@dataclass
class SampledDAGs:
    """What `sample_to_file` wrote: the DAGs, their npz file, the drawing and the seconds sampling took."""

    dags: list = field(repr=False)
    out: Path
    png: Path
    seconds: float


def sample_to_file(model_path: str | os.PathLike, out: str | os.PathLike, n: int = 100,
                   labels: Sequence[float] | None = None, schedule: str = "constant", tmin: int | None = None,
                   tmax: int | None = None, seed: int = 0, last: bool = False, final_step: str = "sample",
                   guidance: float | None = None, device: Any = "auto", overwrite: bool = False, *,
                   ready: Callable[[], None] | None = None, say: Say | None = None,
                   names: Mapping[str, str] | None = None) -> SampledDAGs:
    """Sample `n` DAGs from the LayerDAG of `model_path` (a run directory: best.pt unless `last`; or a checkpoint)
    and write them to `out` (flat npz), with a drawing of a few beside it (``out`` with suffix .png): `graphcost dag
    sample` from Python.

    `labels`: one target label, or one per graph; a conditional model without labels is conditioned on labels
    drawn (seeded) from the run's training labels (said through `say`). `schedule` constant | linear with `tmin`,
    `tmax`; `final_step` sample | mode; `guidance` None: the recipe's. Every output and setting is checked before
    the model is loaded (module docstring); `ready()` is called once they are, before the model is loaded.
    """
    import time

    import numpy as np

    from graphcost.guards.atomic import check_output_path
    from graphcost.layerdag.draw import describe_dataset, draw_dags
    from graphcost.layerdag.io import save_dags
    from graphcost.layerdag.dag_run_info import read_dag_run_info
    from graphcost.layerdag.sample import sample_dags
    from graphcost.guards.outputs import check_outside_inputs

    name, tell = _namer(names), say or (lambda line: None)
    out = Path(out)
    png = out.with_suffix(".png")
    check_final_step(final_step, name("final_step"))
    if png == out:  # the DAGs, then the drawing, were written to one path
        raise ValueError(f"{name('out')} {out}: the DAGs are written there as .npz and their drawing beside it as "
                         f"{png.name}; give a .npz path (e.g. {out.with_suffix('.npz')})")
    check_output_path(out, name("out"), overwrite)  # the outputs first
    check_output_path(png, name("out"), overwrite)  # the drawing written beside it
    for written in (out, png):
        check_outside_inputs(written, name("out"), files=[(name("model_path"), model_path)])
    model_path = check_model_path(model_path, name("model_path"))
    if ready is not None:
        ready()
    model = _load_model(model_path, last, device)
    drawn: np.ndarray | None = None
    given = labels is not None and len(labels) > 0
    if given and not model.config.conditional:
        raise ValueError(f"{name('labels')}: this model is unconditional (trained on unlabelled graphs) and cannot "
                         f"follow a label; sample without {name('labels')}")
    if given:
        drawn = np.array(labels, dtype=np.float64)
        if drawn.size not in (1, n):
            raise ValueError(f"{name('labels')} given {drawn.size} times; give it once or once per graph "
                             f"({name('n')} {n})")
    elif model.config.conditional:
        pool = read_dag_run_info(model_path).get("train_labels")
        if not pool:
            raise ValueError(f"this model is conditional: pass {name('labels')}")
        drawn = np.random.default_rng(seed).choice(np.array(pool), size=n)
        tell(f"no {name('labels')}: conditioning on {n} labels drawn from the training labels")
    sched = _schedule(model, schedule, tmin, tmax)
    guidance = guidance_of(model, guidance, name("guidance"))
    style = describe_dataset(read_dag_run_info(model_path).get("dataset"))  # the drawing's legend and label names
    t0 = time.perf_counter()
    dags = sample_dags(model, n, labels=drawn, schedule=sched, seed=seed, final_step=final_step, guidance=guidance)
    seconds = time.perf_counter() - t0
    try:
        save_dags(dags, out)
        png = draw_dags(dags, png, title=f"LayerDAG samples ({schedule} schedule)", **style)
    except OSError as exc:
        raise OutputWriteError(f"{name('out')}: {_os_msg(exc)}") from exc
    except ValueError as exc:  # DAGFileError names the file
        raise OutputWriteError(f"{name('out')}: {exc}") from exc
    return SampledDAGs(dags, out, png, seconds)


@dataclass
class TrainedDAGRun:
    """What `train_dag_run` trained: the model (on the training device), the per-epoch history and the number of
    training graphs."""

    model: Any = field(repr=False)
    history: list
    train_graphs: int


def train_dag_run(dataset: str, out: str | os.PathLike, config: Any = None, *, num_graphs: int | None = None,
                  folds: int = 0, fold: int = 0, data_dir: str | os.PathLike | None = None,
                  diffusion_steps: int | None = None, label_dropout: float | None = None, overwrite: bool = False,
                  resume: bool = False, progress: bool = True, ready: Callable[[], None] | None = None,
                  names: Mapping[str, str] | None = None) -> TrainedDAGRun:
    """Train a LayerDAG (`graphcost.layerdag.train.train_layerdag` with `config`, a `LayerDAGTrainConfig`) on the train
    split of `dataset` (lp | tpu-tile | nasbench201; `num_graphs` for lp and nasbench201; `folds` K >= 3 and `fold`
    for fold F of a K-fold cross-validation; `data_dir` the real datasets' directory) into the run directory `out`,
    with its run.json: `graphcost dag train` from Python.

    `out` is checked before any data is loaded (module docstring): an earlier run is refused unless `overwrite`
    (replaced whole) or `resume` (continued: its checkpoint.pt must be there). `ready()` is called once the
    settings are checked, before the data is loaded. Errors: OutputPathError / OutputExistsError (`out`, also
    DirectoryLockedError while another process holds it), ValueError (the settings, the dataset),
    FileNotFoundError (the data), OutputWriteError (a file of the run could not be written).
    """
    import torch

    from graphcost.guards.atomic import OutputExistsError, atomic_write_json
    from graphcost.layerdag import dag_recipe
    from graphcost.layerdag.datasets.locate import dag_data_dir
    from graphcost.layerdag.experiment import num_categories
    from graphcost.layerdag.dag_run_info import RUN_INFO
    from graphcost.layerdag.train import CHECKPOINT, LayerDAGTrainConfig, train_layerdag
    from graphcost.runs.lifecycle import RunDirectory

    name, out = _namer(names), Path(out)
    cfg = config if config is not None else LayerDAGTrainConfig()
    run_dir = RunDirectory(out, name("out"), overwrite=overwrite, resume=resume)
    if resume and not (out / CHECKPOINT).is_file():
        raise FileNotFoundError(f"{name('resume')}: {out / CHECKPOINT} does not exist (nothing to resume); run "
                                f"without {name('resume')} to start afresh (with {name('overwrite')} to replace "
                                "that directory)")
    overrides: dict[str, Any] = {}
    if diffusion_steps is not None:
        overrides.update(T_node=diffusion_steps, T_edge=diffusion_steps)
    if fold and not folds:
        raise ValueError(f"{name('fold')} {fold} needs {name('folds')} K (the number of cross-validation folds)")
    if folds and not (folds >= 3 and fold < folds):
        raise ValueError(f"{name('folds')} must be >= 3 and {name('fold')} in 0..{max(folds - 1, 0)}, got "
                         f"{name('folds')} {folds} {name('fold')} {fold}")
    cv_fold = [fold, folds] if folds else None
    if ready is not None:
        ready()
    torch.manual_seed(cfg.seed)
    splits = load_dag_splits(dataset, cfg.seed, num_graphs, cv_fold, data_dir, name("dataset"))
    if cfg.label_balance and any(d.label is None for d in splits["train"]):
        raise ValueError(f"{name('label_balance')} needs labelled training graphs; {name('dataset')} {dataset} has "
                         "unlabelled ones")
    labelled = bool(splits["train"]) and all(d.label is not None for d in splits["train"])
    overrides["label_dropout"] = dag_recipe.label_dropout_for(labelled) if label_dropout is None else label_dropout
    found = dag_data_dir(None if data_dir is None else Path(data_dir)) if dataset != "lp" else None  # recorded: `dag evaluate` reads the same data
    info = {"dataset": dataset, "seed": cfg.seed, "num_graphs": num_graphs, "fold": cv_fold,
            "data_dir": str(found.resolve()) if found is not None else None,
            "train_labels": [d.label for d in splits["train"] if d.label is not None]}  # fmt: skip
    try:
        with run_dir:  # locked (a run another live process holds is never removed), emptied with `overwrite`
            if (out / RUN_INFO).is_dir():
                raise IsADirectoryError(f"{out / RUN_INFO}: is a directory; give the .json file to write")
            atomic_write_json(info, out / RUN_INFO)
            model, hist = train_layerdag(splits["train"], out, cfg, valid_dags=splits["valid"], resume=resume,
                                         num_categories=num_categories(dataset, splits), progress=progress,
                                         **overrides)  # fmt: skip
    except OutputExistsError:
        raise
    except OSError as exc:
        raise OutputWriteError(f"{name('out')}: {_os_msg(exc)}") from exc
    return TrainedDAGRun(model, hist, len(splits["train"]))


def load_dag_splits(dataset: str, seed: int, num_graphs: int | None, fold: Sequence[int] | None = None,
                    data_dir: str | os.PathLike | None = None, option: str = "dataset") -> dict:
    """The run's train/valid/test split (`graphcost.layerdag.datasets.load_dataset`); `fold` = [f, k] for fold f of a
    k-fold cross-validation; `data_dir`: the real datasets' directory. An unknown `dataset` is a ValueError
    naming `option`."""
    from graphcost.layerdag.datasets import DATASET_NAMES, load_dataset

    if dataset not in DATASET_NAMES:
        raise ValueError(f"{option} must be one of {', '.join(DATASET_NAMES)}, got '{dataset}'")
    kwargs: dict[str, Any] = {} if num_graphs is None or dataset == "tpu-tile" else {"num_graphs": num_graphs}
    if fold is not None:
        kwargs["fold"] = tuple(fold)
    if dataset != "lp":
        kwargs["data_dir"] = data_dir
    return load_dataset(dataset, seed=seed, **kwargs)


def evaluate_dag_run(model_path: str | os.PathLike, dataset: str | None = None,
                     data_dir: str | os.PathLike | None = None, samples: str | os.PathLike | None = None,
                     schedule: str = "constant", tmin: int | None = None, tmax: int | None = None,
                     num_samples: int | None = None, seed: int = 0, json_out: str | os.PathLike | None = None,
                     last: bool = False, final_step: str = "sample", guidance: float | None = None,
                     surrogate_repeats: int = 3, device: Any = "auto", overwrite: bool = False, *,
                     ready: Callable[[], None] | None = None, names: Mapping[str, str] | None = None) -> dict:
    """Generate DAGs with the LayerDAG of `model_path` (or read them from `samples`) and score them against the
    test split of `dataset` (default: the run's, from its run.json): validity (LP), MMD, uniqueness / novelty,
    surrogate Pearson (labelled data). `graphcost dag evaluate` from Python; returns the results.

    `json_out`: also write the results there as JSON, checked before anything is loaded (module docstring);
    `ready()` is called once the data is loaded, before the model is.
    """
    from graphcost.guards.atomic import atomic_write_json, check_output_path
    from graphcost.layerdag.experiment import describe_samples, evaluate_model
    from graphcost.layerdag.io import load_dags
    from graphcost.layerdag.quality.surrogate import SurrogateConfig
    from graphcost.layerdag.dag_run_info import read_dag_run_info
    from graphcost.guards.outputs import check_outside_inputs

    name = _namer(names)
    check_final_step(final_step, name("final_step"))
    if json_out is not None:  # the output first
        check_output_path(json_out, name("json_out"), overwrite)
        check_outside_inputs(json_out, name("json_out"), data=[(name("data_dir"), data_dir)],
                             files=[(name("model_path"), model_path), (name("samples"), samples)])
    model_path = check_model_path(model_path, name("model_path"))
    info = read_dag_run_info(model_path)
    dataset = dataset or info.get("dataset")
    if dataset is None:
        raise ValueError(f"{name('model_path')} {model_path}: no run.json beside it; pass {name('dataset')}")
    recorded = Path(info["data_dir"]) if info.get("data_dir") and dataset == info.get("dataset") else None
    splits = load_dag_splits(dataset, info.get("seed", 0), info.get("num_graphs"), info.get("fold"),
                             data_dir or recorded, name("dataset"))
    if ready is not None:
        ready()
    if samples is not None:
        res = describe_samples(load_dags(Path(samples)), splits, dataset)
    else:
        model = _load_model(model_path, last, device)
        guidance = guidance_of(model, guidance, name("guidance"))
        res, _ = evaluate_model(model, splits, dataset, _schedule(model, schedule, tmin, tmax), seed,
                                num_samples=num_samples, final_step=final_step, guidance=guidance,
                                surrogate_cfg=SurrogateConfig(repeats=surrogate_repeats))  # fmt: skip
    if json_out is not None:
        try:
            if Path(json_out).is_dir():
                raise IsADirectoryError(f"{json_out}: is a directory; give the .json file to write")
            atomic_write_json(res, json_out)
        except OSError as exc:
            raise OutputWriteError(f"{name('json_out')}: {_os_msg(exc)}") from exc
    return res
