"""The checks of the Python API's arguments: `TuneConfig` (run by its `__post_init__`, so
`graphcost.tune(..., **overrides)` and `dataclasses.replace` are checked too), the `fn` of
`graphcost.tune` and `compile_with`, and a tuned configuration before `compile_with` applies it.

Every check raises `graphcost.guards.bounds.ArgumentError` (a ValueError and a TypeError) whose message
starts with the argument's name: the same bounds as the `graphcost tune` options.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from graphcost.guards.bounds import MEASUREMENTS_MAX, PROCESSES_MAX, REPEATS_MAX, ArgumentError, check_int, check_real, check_seed
from graphcost.guards.outputs import OutputPathError, check_target_kind, check_writable_place

DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")


def _one_of(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in choices:
        raise ArgumentError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


def _optional(name: str, value: Any, types: tuple[type, ...], what: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
        raise ArgumentError(f"{name} must be {what} or None, got {value!r} ({type(value).__name__})")


def _check_names(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """A list of names (`strategies`): a bare string is refused, not read letter by letter."""
    if value is None:
        return
    if isinstance(value, str):
        raise ArgumentError(f"{name} must be a list of names, got the string {value!r} (did you mean [{value!r}]?)")
    if not isinstance(value, (list, tuple)) or not value:
        raise ArgumentError(f"{name} must be a non-empty list of names from {', '.join(choices)}, got {value!r}")
    for item in value:
        _one_of(f"{name} entry", item, choices)


def check_out_dir(name: str, out: Any) -> None:
    """`out`: None or a directory path that can be written (not a file, a device, /proc)."""
    _optional(name, out, (str, os.PathLike), "a directory path (str or Path)")
    if out is None:
        return
    try:
        check_target_kind(out, name)
        check_writable_place(out, name)
    except OutputPathError as exc:
        raise ArgumentError(str(exc)) from None
    if Path(out).exists() and not Path(out).is_dir():
        raise ArgumentError(f"{name} {out}: is a file, but {name} must be a directory")
    from graphcost.guards.atomic import RUN_MARKERS

    held = [m for m in RUN_MARKERS if (Path(out) / m).exists()]
    if held:  # tune(out=A_TRAINING_RUN) wrote its study and plots into a cost-model run
        raise ArgumentError(f"{name} {out}: holds a training run ({held[0]}), not a tuning run; choose another directory")


def check_program_ref(ref: Any) -> None:
    """`program_ref` (None, ``FILE.py:FUNCTION``, ``MODULE:FUNCTION`` or an XLA module: ``MODULE.pb``,
    ``MODULE.hlo``, a dump directory): the fresh processes of the final check rebuild the program from it,
    so its file must exist (a missing file was recorded)."""
    if ref is None:
        return
    from graphcost.frontend.programs.hlo_program import is_hlo_reference
    from graphcost.frontend.programs.user_program import program_file

    if isinstance(ref, str) and is_hlo_reference(ref):
        if program_file(ref) is None:
            raise ArgumentError(f"program_ref {ref!r}: no such file or directory")
        return

    target, sep, attr = ref.rpartition(":")
    if not sep or not target or not attr.isidentifier():
        raise ArgumentError(f"program_ref {ref!r}: expected FILE.py:FUNCTION or MODULE:FUNCTION (e.g. my_model.py:make)")
    path = program_file(ref)
    if path is not None and not path.is_file():
        raise ArgumentError(f"program_ref {ref!r}: no such file {path}")


def check_tune_config(cfg: Any) -> None:
    """Every field of a `TuneConfig`; ArgumentError naming the first one that cannot be used."""
    from graphcost.measure.interleaved import TimingProtocol
    from graphcost.tuning.space import SPACES
    from graphcost.tuning.strategies import ONLINE_LEARNERS, strategy_names

    _one_of("space", cfg.space, SPACES)
    for name in ("budget", "round_size", "finalists"):
        check_int(name, getattr(cfg, name), 1, MEASUREMENTS_MAX)
    check_int("race", cfg.race, 0, MEASUREMENTS_MAX)
    check_int("processes", cfg.processes, 1, PROCESSES_MAX)
    check_int("confirm_processes", cfg.confirm_processes, 1, PROCESSES_MAX)
    check_seed("seed", cfg.seed)
    check_real("min_gain", cfg.min_gain, 0.0)
    check_real("rtol", cfg.rtol, 0.0)
    check_real("atol", cfg.atol, 0.0)
    models = cfg.model if isinstance(cfg.model, (list, tuple)) else [cfg.model]
    for model in models:
        _optional("model", model, (str, os.PathLike), "a run directory or checkpoint path (or a list of them)")
    _check_names("strategies", cfg.strategies, strategy_names())
    check_out_dir("out", cfg.out)
    for name in ("storage", "program_ref", "name"):
        _optional(name, getattr(cfg, name), (str,), "a string")
    check_program_ref(cfg.program_ref)
    _optional("protocol", cfg.protocol, (TimingProtocol,), "a TimingProtocol")
    if cfg.protocol is not None:
        for name, low in (("rounds", 1), ("calls", 1), ("warmup", 0)):
            check_int(f"protocol.{name}", getattr(cfg.protocol, name), low, REPEATS_MAX)
    _optional("pool_kwargs", cfg.pool_kwargs, (dict,), "a dict")
    for name in ("allow_fast_math", "kernels", "ablation", "progress"):
        if not isinstance(getattr(cfg, name), bool):
            raise ArgumentError(f"{name} must be True or False, got {getattr(cfg, name)!r}")
    if not isinstance(cfg.device, str) or not DEVICE.fullmatch(cfg.device):
        raise ArgumentError(f"device must be auto, cpu, cuda or cuda:N, got {cfg.device!r}")
    _one_of("learner", cfg.learner, ONLINE_LEARNERS)


def check_fn(fn: Any) -> None:
    """`fn` of `tune` / `compile_with`: a callable (a JAX function)."""
    if not callable(fn):
        raise ArgumentError(f"fn must be a JAX function (a callable), got {fn!r} ({type(fn).__name__})")


def check_tuned(cfg: Any, where: object) -> None:
    """A tuned configuration before it is applied: a known space; for the flag space, codes inside
    its dimensions; flag names the space knows; and `compiler_options` that agree with the codes
    and flags. ArgumentError naming `where` and the field."""
    from graphcost.tuning.space import SPACES, FlagSpace

    if cfg.space not in SPACES:
        raise ArgumentError(f"{where}: field 'space' must be one of {', '.join(SPACES)}, got {cfg.space!r}")
    if cfg.space == "layout":
        if cfg.flags or cfg.compiler_options:
            raise ArgumentError(f"{where}: a layout configuration holds no flags or compiler_options, got "
                                f"{sorted({**cfg.flags, **cfg.compiler_options})}")
        return
    space = FlagSpace(allow_fast_math=True)
    domain = option_domain(space)
    for key, value in cfg.compiler_options.items():  # no option from a file that the space does not set
        if key not in domain:
            raise ArgumentError(f"{where}: field 'compiler_options.{key}' is not an option of the flag space "
                                f"(graphcost applies only the options it searches: {', '.join(sorted(domain))})")
        if (type(value), value) not in domain[key]:
            allowed = ", ".join(repr(v) for _, v in sorted(domain[key], key=repr))
            raise ArgumentError(f"{where}: field 'compiler_options.{key}' is {value!r}, not one of the values the "
                                f"flag space gives it ({allowed})")
    names = [d.name for d in space.dims]
    unknown = sorted(set(cfg.flags) - set(names))
    if unknown:
        raise ArgumentError(f"{where}: field 'flags' names {unknown[0]!r}, not a flag of this jaxlib "
                            f"(known: {', '.join(names)})")
    if cfg.space != "flags" or not cfg.codes:
        return
    if len(cfg.codes) != len(space.dims):
        raise ArgumentError(f"{where}: field 'codes' holds {len(cfg.codes)} codes, the flag space has {len(space.dims)}")
    for i, (code, dim) in enumerate(zip(cfg.codes, space.dims)):
        if not 0 <= code < len(dim.choices):
            raise ArgumentError(f"{where}: field 'codes[{i}]' ({dim.name}) is {code}, outside 0..{len(dim.choices) - 1}")
    implied = space.describe(tuple(cfg.codes))
    searched = {d.param for d in space.dims}  # XLA options the codes decide (absent: the compiler's default)
    for field in ("flags", "compiler_options"):
        given, expected = getattr(cfg, field), implied[field]
        for key, value in given.items():
            if key in expected and expected[key] != value:
                raise ArgumentError(f"{where}: field '{field}.{key}' is {value!r}, but the codes set it to "
                                    f"{expected[key]!r}")
            if field == "compiler_options" and key in searched and key not in expected:
                raise ArgumentError(f"{where}: field 'compiler_options.{key}' is {value!r}, but the codes leave it "
                                    "at the compiler's default")


def option_domain(space) -> dict[str, set]:
    """{XLA option: {(type, value)}} every value the flag `space` gives each option it sets (one
    dimension moved at a time; the options are independent of one another)."""
    domain: dict[str, set] = {}
    for i, dim in enumerate(space.dims):
        for k in range(len(dim.choices)):
            codes = [0] * len(space.dims)
            codes[i] = k
            for key, value in space.compiler_options(tuple(codes)).items():
                domain.setdefault(key, set()).add((type(value), value))
    return domain
