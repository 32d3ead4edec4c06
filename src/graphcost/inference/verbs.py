"""The library verbs behind `graphcost evaluate` and `graphcost predict` (the library owns its guards).

`evaluate_run(run, ...)` scores every configuration of a split's graphs with a trained run and returns the
report; `predict_run(models, out, ...)` writes a Kaggle-format submission CSV (``ID,TopConfigs``) of a split's
graphs, or merges per-collection CSVs (``combine=True``). Both check their outputs first, before the run is
read or any graph is prepared:

* the report / submission file (`graphcost.guards.atomic.check_output_path`): an existing file without `overwrite` is
  an OutputExistsError; a directory, a path below a file, a device, a virtual or read-only file system an
  OutputPathError;
* the cache directory (`graphcost.guards.atomic.check_dir_option`): a file or a path below one, a device, a virtual or
  read-only file system;
* both against the inputs (`graphcost.guards.outputs.check_outside_inputs`): nothing inside the data directory
  (the one given, and the one found once the run's data is resolved), no file of an input run or CSV replaced.

Every message names the argument: its Python name by default, or the name `names` maps it to (the commands
pass ``{"json_out": "--json", "data_dir": "--data-dir", "run": "RUN", ...}`` so the CLI's words stay theirs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphcost.guards.atomic import OutputWriteError

SPLIT_NAMES = ("train", "valid", "test")
# a report or submission file refused in the words `graphcost evaluate --json` / `predict --out` have always used
MODEL_OUTPUT_WORDING = {"is_dir": "{option}: {path}: is a directory; give a file path to write",
                        "blocked": "{option}: {path}: cannot write there, {blocker} is a file, not a directory"}

Say = Callable[[str, str], None]  # (kind, line): kind is "note" (a remark), "split" (what is scored) or "warning"


def _namer(names: Mapping[str, str] | None) -> Callable[[str], str]:
    """The name messages give argument `key`: `names`' entry, else `key` itself."""
    return lambda key: (names or {}).get(key, key)


def check_model_outputs(out: str | os.PathLike | None, cache_dir: str | os.PathLike | None, *, out_key: str,
                        overwrite: bool = False, data_dir: str | os.PathLike | None = None,
                        inputs: Sequence[tuple[str, str | os.PathLike]] = (), cache_inputs: bool = False,
                        names: Mapping[str, str] | None = None) -> None:
    """The file `out` (the argument `out_key`) and the directory `cache_dir` of a verb that reads a model, checked
    before any work (module docstring). `inputs`: (argument, path) pairs of the runs or files read, whose files
    must not be replaced (by the cache too when `cache_inputs`); `data_dir`: a data directory nothing may be
    written into."""
    from graphcost.guards.atomic import check_dir_option, check_output_path
    from graphcost.guards.outputs import check_outside_inputs

    name = _namer(names)
    data = [(name("data_dir"), data_dir)]
    files = [(name(key), path) for key, path in inputs]
    if out is not None:
        check_output_path(out, name(out_key), overwrite, **MODEL_OUTPUT_WORDING)
        check_outside_inputs(out, name(out_key), data=data, files=files)
    if cache_dir is not None:
        check_dir_option(cache_dir, name("cache_dir"))
        check_outside_inputs(cache_dir, name("cache_dir"), data=data, files=files if cache_inputs else ())


def _check_outside_data(outputs: Mapping[str, str | os.PathLike | None], root: Path,
                        names: Mapping[str, str] | None) -> None:
    """Each output outside the data the run's data resolved to (`root`)."""
    from graphcost.guards.outputs import check_outside_inputs

    for key, path in outputs.items():
        if path is not None:
            check_outside_inputs(path, _namer(names)(key), data=[("data", root)])


def _run_data(data_dir: str | os.PathLike | None, info: dict, run: str | os.PathLike) -> tuple[Any, Path | None]:
    """(data dir, the run.json it was recorded in or None): `data_dir` wins over the run's record."""
    from graphcost.runs.run_json import find_run_info_file

    if data_dir is not None or not info.get("data_dir"):
        return data_dir, None
    return info["data_dir"], find_run_info_file(Path(run))


def _check_split(split: str | None, names: Mapping[str, str] | None) -> None:
    if split is not None and split not in SPLIT_NAMES:
        raise ValueError(f"{_namer(names)('split')} must be train, valid or test, got {split!r}")


def _default_load(tta: int, batch: int, device: str, precision: str) -> Callable[[list[Path]], Any]:
    def load(paths: list[Path]) -> Any:
        from graphcost.inference.ensemble import load_predictor

        return load_predictor(paths, tta, batch, device, precision)

    return load


def _write(write: Callable[[], Any], path: str | os.PathLike, option: str) -> None:
    """Run the atomic `write` of `path`; a failure as an OutputWriteError naming `option` and the file."""
    try:
        write()
    except (OSError, ValueError) as exc:
        raise OutputWriteError(f"{option} {path}: {exc}") from exc


@dataclass
class Evaluation:
    """What `evaluate_run` scored: the report (`graphcost.inference.ranking.EvalReport`), the split, its files
    and the data root they came from."""

    report: Any
    split: str
    files: list = field(repr=False, default_factory=list)
    root: Path | None = None


def evaluate_run(run: str | os.PathLike, split: str | None = None, data_dir: str | os.PathLike | None = None,
                 collection: str | None = None, json_out: str | os.PathLike | None = None,
                 cache_dir: str | os.PathLike | None = None, overwrite: bool = False, tta: int = 10, batch: int = 128,
                 max_graphs: int | None = None, device: str = "auto", precision: str = "auto", *,
                 load: Callable[[list[Path]], Any] | None = None, say: Say | None = None, progress: bool = True,
                 names: Mapping[str, str] | None = None) -> Evaluation:
    """Per-graph Kendall tau / OPA / top-K (and tile score) over ALL configurations of `split`'s graphs, scored by
    the run (or checkpoint) `run`: `graphcost evaluate` from Python.

    `split`: train, valid or test; None: test when its graphs have runtimes, else valid (said through `say`).
    `data_dir`: default the run's data. `json_out`: also write the report there as JSON; `cache_dir`: a cache of
    preprocessed graphs. Both are checked before anything is read (module docstring). `load`: how the run is
    opened (default `graphcost.inference.ensemble.load_predictor` with `tta`, `batch`, `device`, `precision`).
    `say(kind, line)`: the notes and warnings (default: none). Errors: ValueError (a bad split, no graphs, a
    graph that cannot be scored), OutputPathError / OutputExistsError (the outputs), RunInfoError (a broken
    run.json), DatasetError (the data), OutputWriteError (the report could not be written).
    """
    import warnings

    from graphcost.guards.atomic import write_json
    from graphcost.data.io.locate import has_runtimes, resolve_splits
    from graphcost.data.transforms.preprocess import prepare_graph
    from graphcost.inference.ranking import evaluate_graphs
    from graphcost.inference.run_info import read_run_info

    name, tell = _namer(names), say or (lambda kind, line: None)
    _check_split(split, names)
    check_model_outputs(json_out, cache_dir, out_key="json_out", overwrite=overwrite, data_dir=data_dir,
                        inputs=[("run", run)], cache_inputs=True, names=names)
    info = read_run_info(Path(run))
    predictor = (load or _default_load(tta, batch, device, precision))([Path(run)])
    data, recorded_in = _run_data(data_dir, info, run)
    splits = resolve_splits(data, collection or info.get("collection"), seed=info.get("config", {}).get("seed", 0),
                            max_graphs=max_graphs, recorded_in=recorded_in)  # fmt: skip
    _check_outside_data({"json_out": json_out, "cache_dir": cache_dir}, splits.root, names)  # the run's data, too
    if split is None:
        split = "test" if has_runtimes(splits.files.get("test", [])) else "valid"
        if split == "valid":
            tell("note", "note: the test split has no runtimes here (e.g. the official TpuGraphs test set); reporting "
                 "valid, which also chose the best epoch, so the figures are optimistic")
    files = splits.files.get(split, [])
    if not files:
        raise ValueError(f"{splits.root}: no {split} graphs")
    purpose = {"test": "never used for training or model selection", "valid": "used to select the best epoch",
               "train": "used for training"}[split]
    tell("split", f"split: {split} ({len(files)} graphs of {splits.root}; {purpose})")
    if info.get("folds") and split != "test":
        tell("warning", "warning: a cross-validation ensemble was trained on train+valid; its valid score is "
             "optimistic (see ensemble.json for the held-out fold scores)")
    graphs = (prepare_graph(f, dedup=False, cache_dir=None if cache_dir is None else Path(cache_dir)) for f in files)  # all configs, one at a time
    with warnings.catch_warnings():  # skipped graphs are in the report
        warnings.simplefilter("ignore")
        report = evaluate_graphs(predictor, graphs, predictor.kind, progress=progress, total=len(files))
    if json_out is not None:
        _write(lambda: write_json({"split": split, **report.to_json()}, json_out), json_out, name("json_out"))
    return Evaluation(report, split, list(files), splits.root)


@dataclass
class Submission:
    """What `predict_run` wrote: the CSV and its (ID, TopConfigs) rows (None for a combination)."""

    path: Path
    rows: list | None = None


def predict_run(models: Sequence[str | os.PathLike], out: str | os.PathLike, split: str = "test",
                data_dir: str | os.PathLike | None = None, collection: str | None = None,
                cache_dir: str | os.PathLike | None = None, overwrite: bool = False, tta: int = 10, batch: int = 128,
                max_graphs: int | None = None, device: str = "auto", precision: str = "auto", *,
                combine: bool = False, load: Callable[[list[Path]], Any] | None = None, progress: bool = True,
                names: Mapping[str, str] | None = None) -> Submission:
    """The Kaggle-format ``ID,TopConfigs`` CSV `out` of `split`'s graphs, ranked by the ensemble of `models` (run
    directories or checkpoints): `graphcost predict` from Python. With `combine`, `models` are per-collection CSVs
    merged into `out`.

    `out` and `cache_dir` are checked before anything is read (module docstring); `collection` (default the first
    model's) names the submission IDs. `load`: how the models are opened (default
    `graphcost.inference.ensemble.load_predictor`). Errors: FileNotFoundError (a model that is not there),
    ValueError (a bad split or collection, no graphs, a bad CSV to combine), OutputPathError / OutputExistsError,
    RunInfoError, DatasetError, OutputWriteError (the CSV could not be written).
    """
    from graphcost.data.io.locate import resolve_splits
    from graphcost.inference.predict import combine_submissions, submission_rows, write_csv_rows
    from graphcost.inference.run_info import read_run_info
    from graphcost.metrics import COLLECTIONS

    name = _namer(names)
    paths = [Path(m) for m in models]
    read = "csv" if combine else "model"
    check_model_outputs(out, cache_dir, out_key="out", overwrite=overwrite, data_dir=data_dir,
                        inputs=[(read, m) for m in paths], names=names)
    if combine:
        return Submission(combine_submissions(paths, Path(out)))
    for model in paths:
        if not model.exists():
            raise FileNotFoundError(f"{model}: no such model checkpoint or run directory")
    _check_split(split, names)
    info = read_run_info(paths[0])
    collection = collection or info.get("collection")
    if collection is not None and collection not in COLLECTIONS:
        raise ValueError(f"unknown collection {collection!r}; expected one of {' | '.join(COLLECTIONS)}")
    if collection is None:
        raise ValueError(f"cannot tell the collection for the submission IDs; pass {name('collection')}")
    predictor = (load or _default_load(tta, batch, device, precision))(paths)
    data, recorded_in = _run_data(data_dir, info, paths[0])
    splits = resolve_splits(data, collection, max_graphs=max_graphs, recorded_in=recorded_in,
                            seed=info.get("config", {}).get("seed", 0))  # fmt: skip
    _check_outside_data({"out": out, "cache_dir": cache_dir}, splits.root, names)  # the data the run recorded, too
    files = splits.files.get(split, [])
    if not files:
        raise ValueError(f"{splits.root}: no {split} graphs")
    rows = submission_rows(predictor, files, collection, cache_dir=None if cache_dir is None else Path(cache_dir), progress=progress)
    _write(lambda: write_csv_rows(rows, Path(out)), out, name("out"))
    return Submission(Path(out), rows)
