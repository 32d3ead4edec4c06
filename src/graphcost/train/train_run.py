"""`train_run`: `graphcost train`'s one library verb, the run's settings in and its `FitResult` out.

Every check runs once, before any graph is read or anything is written: the device, the settings (one
`TrainConfig` and one `RunSpec`, which check themselves), `fit`'s arguments, on a resume the interrupted run's
recorded settings and the options that must agree with them (`spec.contradiction`), the model (a shipped one or
one registered with `graphcost.models.registry.register`) and its options, then `fit.plan_fit`'s checks (the
model's sizes and loss, the data, the run directory and cache, the model against the graph kind and, on
PyTorch's meta device, against ``max_memory_gb``). Then the data-parallel group is joined (under torchrun) and
`fit.run_fit` trains. Errors are `graphcost.GraphcostError`s (or the builtin errors of the checks they come from)
in one line naming the argument; `names` maps an argument to the name the caller's user knows (``graphcost
train`` passes ``{"lr": "--lr", "model_config": "--model-opt", ...}``), so the Python API's messages name fields
and the command's name options.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, NoReturn

from graphcost.errors import GraphcostError
from graphcost.guards.bounds import ArgumentError
from graphcost.runs.distributed import DEFAULT_TIMEOUT_S
from graphcost.train import recipe
from graphcost.train.fit import FitResult
from graphcost.train.spec import RunSpec
from graphcost.train.trainer import TrainConfig

log = logging.getLogger(__name__)

_CONFIG_FIELDS = {f.name for f in dataclasses.fields(TrainConfig)} - {"model_config"}  # model options: model_opts
_SPEC_FIELDS = {f.name for f in dataclasses.fields(RunSpec)} - {"config", "recorded_in"}
_RESUME_CHANGES = ("device", "checkpoint_every", "progress", "loader_workers")  # taken from the call on a resume


class DataParallelStopped(GraphcostError, RuntimeError):
    """A torch.distributed failure (a peer died or never started, a collective timed out), naming the rank."""


def train_run(*, out: str | Path | None = None, resume: bool = False, overwrite: bool = False,
              cache_dir: str | Path | None = None, max_memory_gb: float = 8.0,
              model_opts: Mapping[str, Any] | None = None, given: Collection[str] = (),
              dist_timeout: float = DEFAULT_TIMEOUT_S, names: Mapping[str, str] | None = None,
              report: Callable[[str], None] | None = None, ready: Callable[[], None] | None = None,
              **fields: Any) -> FitResult:
    """Train the run the `TrainConfig` and `RunSpec` `fields` describe (``model``, ``epochs``, ``collection``,
    ...; those not given as ``graphcost train`` has them) into `out`, as `graphcost.fit` does.

    model_opts: the model's options over the recipe's (`recipe.MODEL_CONFIG` for the recipe's model).
    resume: continue the run in `out` (default: the one runs/latest points to) with the settings its run.json
    recorded; `given`: the fields the user set, each of which must agree with them. overwrite, cache_dir,
    max_memory_gb: as `graphcost.fit` has them. dist_timeout: seconds a data-parallel rank waits for the
    others (under torchrun). ready: called once every check has passed, before the data-parallel group is
    joined and any graph is read (``graphcost train``: sets --threads). report: where the progress lines go
    (default: this module's logger, INFO). A torch.distributed failure is `DataParallelStopped`."""
    from graphcost.models.registry import coerce_config, model_names
    from graphcost.runs.distributed import check_device, init_from_env, shutdown
    from graphcost.train.checks import naming
    from graphcost.train.fit import check_fit_arguments, plan_fit, run_fit

    def name(key: str) -> str:
        return (names or {}).get(key, key)

    say = report or log.info
    unknown = sorted(set(fields) - _CONFIG_FIELDS - _SPEC_FIELDS)
    if unknown:
        raise ArgumentError(f"unknown setting(s) {unknown}; the fields of TrainConfig and RunSpec, model options "
                            "as model_opts")
    try:
        fields["device"] = check_device(fields.get("device", "auto"))
    except ValueError as exc:  # "device X: ..." names the field
        raise ArgumentError(name("device") + str(exc)[len("device"):]) from None
    _check_collection(fields.get("collection"))
    with naming(names):
        config = TrainConfig(**{"model": recipe.MODEL, "batch_configs": None,
                                **{k: v for k, v in fields.items() if k in _CONFIG_FIELDS}})
        spec = RunSpec(config=config, **{k: v for k, v in fields.items() if k in _SPEC_FIELDS})
        check_fit_arguments(out, resume, overwrite, cache_dir, max_memory_gb, None, report)
    model_config = None  # recorded in run.json on a resume; else the recipe's with model_opts
    if resume:
        spec, model_config = _resumed(spec, out, given, model_opts, say)
    model = spec.config.model  # the model to train: the call's, or on a resume the recorded one
    if model not in model_names():  # shipped or registered; before any data is read
        raise ArgumentError(f"unknown model {model!r}; choose one of {', '.join(model_names())}")
    if model_config is None:
        try:
            model_config = coerce_config(model, {**(recipe.MODEL_CONFIG if model == recipe.MODEL else {}),
                                                 **(model_opts or {})})
        except ValueError as exc:
            raise ArgumentError(f"{name('model_config')}: {exc}") from None
    spec.config.model_config = model_config
    plan = plan_fit(spec, out, resume=resume, overwrite=overwrite, cache_dir=cache_dir, max_memory_gb=max_memory_gb,
                    names=names)
    if ready is not None:
        ready()
    try:
        ctx = init_from_env(spec.config.device, timeout_s=dist_timeout)
    except RuntimeError as exc:  # a peer never joined the rendezvous
        _raise_stopped(exc, os.environ.get("RANK", "0"), dist_timeout, name("dist_timeout"))
    try:
        return run_fit(plan, ctx, report)
    except RuntimeError as exc:
        if not ctx.enabled:
            raise
        _raise_stopped(exc, ctx.rank, dist_timeout, name("dist_timeout"))
    finally:
        shutdown(ctx)


def _check_collection(collection: Any) -> None:
    """A collection name graphcost knows (`graphcost.metrics.COLLECTIONS`), or None."""
    from graphcost.metrics import COLLECTIONS

    if collection is not None and collection not in COLLECTIONS:
        raise ArgumentError(f"unknown collection {collection!r}; expected one of {' | '.join(COLLECTIONS)}")


def _resumed(spec: RunSpec, out: str | Path | None, given: Collection[str], model_opts: Mapping[str, Any] | None,
             say: Callable[[str], None]) -> tuple[RunSpec, dict | None]:
    """(the spec to resume with, its recorded model options): the interrupted run's, read back from its run.json,
    with what may change on a resume taken from `spec`; a `given` setting that contradicts it is an error. A run
    without run.json resumes with `spec` (None: the model options still to be made)."""
    from graphcost.inference.run_info import read_run_info
    from graphcost.runs.run_dir import LATEST, check_resumable
    from graphcost.runs.run_json import RUN_INFO
    from graphcost.train.spec import contradiction

    run_dir = Path(out) if out is not None else (LATEST.resolve() if LATEST.exists() else None)
    check_resumable(run_dir)
    if run_dir is None or not (run_dir / RUN_INFO).is_file():
        return spec, None
    previous = read_run_info(run_dir)
    if not previous:
        return spec, None
    recorded = RunSpec.from_json(previous, run_dir, **{k: getattr(spec.config, k) for k in _RESUME_CHANGES})
    why = contradiction(recorded, spec, set(given), run_dir / RUN_INFO, dict(model_opts) if model_opts else None)
    if why is not None:  # a contradicting --collection / --epochs would be silently ignored
        raise ArgumentError(why)
    say(f"resuming {run_dir} with its recorded data and settings ({RUN_INFO})")
    return recorded, recorded.config.model_config


def _raise_stopped(exc: RuntimeError, rank: Any, timeout_s: float, timeout_name: str) -> NoReturn:
    """A torch.distributed failure as `DataParallelStopped` naming the rank; anything else re-raised."""
    from graphcost.runs.distributed import collective_failure

    why = collective_failure(exc)
    if why is None:
        raise exc
    raise DataParallelStopped(f"rank {rank}: data-parallel training stopped: {why} (another process died or never "
                              f"started, or a collective waited longer than {timeout_name} {timeout_s:g} s)") from None
