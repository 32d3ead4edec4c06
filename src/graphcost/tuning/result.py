"""What `graphcost tune` returns and writes: the tuned configuration as plain data (`TunedConfig`,
best.json, what `graphcost.compile_with` applies), the run's result (`TuneResult`, result.json), every
trial (trials.csv / trials.json) and the progress plot; and best.json read back, checked field by field.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphcost.tuning.space import Codes, Space
from graphcost.tuning.trial import OK, Trial


@dataclass
class TunedConfig:
    """A configuration as plain data: what `graphcost.compile_with` applies (best.json holds its fields).

    Attributes:
        space: the space it belongs to: flags, layout or both.
        codes: one choice index per dimension of the space (0 = the compiler's default).
        compiler_options: the XLA options passed to `Lowered.compile` (flags).
        flags: the flag columns' values (`graphcost.frontend.programs.flags.FLAG_COLUMNS`).
        layouts: the tensors moved off their default layout, each
            `{"site", "primitive", "tensor", "minor_to_major"}`.
    """

    space: str
    codes: list[int]
    compiler_options: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, int] = field(default_factory=dict)
    layouts: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, space: Space, codes: Codes) -> "TunedConfig":
        d = space.describe(codes)
        return cls(space.name, list(codes), d.get("compiler_options", {}), d.get("flags", {}), d.get("layouts", []))

    @property
    def is_default(self) -> bool:
        return not any(self.codes)

    def to_json(self) -> dict[str, Any]:
        return {"space": self.space, "codes": self.codes, "compiler_options": self.compiler_options,
                "flags": self.flags, "layouts": self.layouts}


@dataclass
class TuneResult:
    """What `tune` found: the accepted configuration, its re-measured speedup, and every trial.

    Attributes:
        best: the configuration to use (the default itself when nothing beat it beyond the noise).
        speedup: THE speedup of the run: the median over processes of default runtime / best runtime on the
            confirmation batch, timings made after `best` was chosen and not used to choose it
            (`ablation.confirmation`); 1.0 for the default.
        speedup_range: that speedup's 95% prediction interval for one more process (`ablation.confirmation`).
        confirmation: the confirmation batch's data: its per-process speedups and its timing protocol.
        selected_speedup, selected_range: the final check's figure of `best`, the one that chose it (biased up:
            the best of several noisy candidates); None when the default was kept.
        beats_default: whether `best` was faster than the default in every process by `min_gain`.
        default_runtime_ns: the default configuration's runtime in nanoseconds.
        trials: every measured or failed configuration, all strategies, in order.
        remeasure: the final check's raw figures (runtimes per process, protocol).
        message: one line for people: the speedup and its range, or why the default was kept.
        strategies: the strategies that searched, in order.
        model: the cost model runs that guided them (paths), ``"shipped"`` for the models that ship
            with graphcost, or None for a model-free search.
        search_vs_final: each re-measured candidate's in-search estimate beside its final-check
            median, and their Spearman correlation (None below two candidates).
            result.json also gives ``in_search_best``, the best in-search estimate (what the bar and
            progress.png show); ``speedup`` is the confirmation's figure of the kept configuration.
        kernels: the default's top kernels before the search and, when a configuration was kept,
            the same kernels in it (`graphcost.kernels.report.kernels_summary`); None when not profiled.
        ablation: per change of the kept configuration, the speedup kept without it
            (`ablation.ablation_report`); None when the default was kept or ablation was off.
        program: the program's reference (`file.py:make`, an XLA module) when it has one, so the run can be
            reproduced (`graphcost verify`); None for a program given as a Python object.
        program_sha256: the SHA-256 of the program's file when the run was made (`verify` runs the program only
            while its file still has it).
        kernel_profile: the final profile of the default and the kept configuration (kernels.png).
    """

    best: TunedConfig
    speedup: float
    speedup_range: tuple[float, float]
    beats_default: bool
    default_runtime_ns: float
    trials: list[Trial]
    remeasure: dict[str, Any]
    message: str
    strategies: list[str] = field(default_factory=list)
    model: str | list[str] | None = None
    search_vs_final: dict[str, Any] | None = None
    kernels: dict[str, Any] | None = None
    ablation: dict[str, Any] | None = None
    program: str | None = None
    program_sha256: str | None = None
    kernel_profile: Any = field(default=None, repr=False)
    selected_speedup: float | None = None
    selected_range: tuple[float, float] | None = None
    confirmation: dict[str, Any] | None = None  # `ablation.confirmation`'s data: per-process figures, timing

    def confirm(self, confirmed: dict[str, Any]) -> None:
        """Report the confirmation batch's figure (`ablation.confirmation`) of the kept configuration as the
        run's speedup; the final check's, which chose it, is kept as ``selected_speedup``."""
        self.selected_speedup, self.selected_range = self.speedup, self.speedup_range
        self.confirmation = confirmed
        self.speedup, self.speedup_range = confirmed["speedup"], (confirmed["range"][0], confirmed["range"][1])
        what = "processes" if confirmed["protocol"] == "cross-process" else "in-process passes"
        self.message = (f"{self.speedup:.3f}x faster than the default (95% interval {self.speedup_range[0]:.3f}-"
                        f"{self.speedup_range[1]:.3f}x from {confirmed['processes']} {what}, timed after it was "
                        f"chosen; {self.selected_speedup:.3f}x in the final check that chose it)")

    def to_json(self) -> dict[str, Any]:
        return {"best": self.best.to_json(), "speedup": self.speedup, "speedup_range": list(self.speedup_range),
                "selected_speedup": self.selected_speedup,
                "selected_range": list(self.selected_range) if self.selected_range else None,
                "beats_default": self.beats_default, "default_runtime_ns": self.default_runtime_ns,
                "message": self.message, "remeasure": self.remeasure,
                "num_trials": len(self.trials), "num_failed": sum(t.status != OK for t in self.trials),
                "strategy": self.strategies[0] if len(self.strategies) == 1 else self.strategies,
                "in_search_best": round(max([1.0] + [1.0 / t.ratio for t in self.trials if t.status == OK and t.ratio]), 4),
                "model": self.model, "search_vs_final": self.search_vs_final, "kernels": self.kernels,
                "ablation": self.ablation, "confirmation": self.confirmation, "program": self.program,
                "program_sha256": self.program_sha256}


TRIAL_FIELDS = ("strategy", "number", "round", "status", "ratio", "speedup", "timings", "runtime_ns", "default_ns")


def trials_csv(trials: list[Trial], space: Space) -> str:
    """One row per trial: `TRIAL_FIELDS`, then one column per space dimension named by its study
    parameter (the XLA option; a layout site's tensor) holding the value compiled, then the error.
    ``ratio``: the geometric mean over the configuration's ``timings`` (more than one when racing
    timed it again); ``runtime_ns`` / ``default_ns``: its first timing. A trial whose executable was
    timed before (`trial.same_executable`) has 0 timings and ``same_executable_as`` = the trial number
    it copies ("default" for the default's executable)."""
    number = {t.codes: t.number for t in trials}
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*TRIAL_FIELDS, "same_executable_as", *(d.param_name for d in space.dims), "error"])
    for t in trials:
        values = [d.param_values[int(c)] for d, c in zip(space.dims, t.codes)]
        twin = t.extra.get("same_executable_as")
        timings = 0 if twin is not None else len(t.extra.get("ratios", ())) or int(t.status == OK)
        same = "" if twin is None else twin if isinstance(twin, str) else number.get(tuple(twin), "")
        w.writerow([t.strategy, t.number, t.round, t.status, t.ratio, 1 / t.ratio if t.ratio else "", timings,
                    t.runtime_ns, t.default_ns, same, *values, t.error])
    return buf.getvalue()


def trials_kernels_csv(trials: list[Trial]) -> str:
    """kernels.csv: one row per (profiled trial, kernel): strategy, number, status, then
    `graphcost.kernels.report.KERNEL_ROW`."""
    from graphcost.kernels.report import kernels_csv

    return kernels_csv(("strategy", "number", "status"),
                       (((t.strategy, t.number, t.status), t.extra.get("kernels", ())) for t in trials))


def write_outputs(out: Path, space: Space, result: TuneResult) -> None:
    """trials.csv / trials.json, best.json (plain data for `compile_with`), result.json, progress.png;
    with profiled trials kernels.csv, and with a kernel profile kernels.png."""
    from graphcost.guards.atomic import atomic_write_json, atomic_write_text
    from graphcost.tuning.plot import plot_progress

    atomic_write_text(out / "trials.csv", trials_csv(result.trials, space))
    if any("kernels" in t.extra for t in result.trials):
        atomic_write_text(out / "kernels.csv", trials_kernels_csv(result.trials))
    if result.kernel_profile is not None:
        from graphcost.tuning.plot import plot_profile

        plot_profile(result.kernel_profile, out / "kernels.png")
    dims = [{"name": d.name, "choices": [list(c) if isinstance(c, tuple) else c for c in d.choices]} for d in space.dims]
    atomic_write_json({"space": space.name, "dims": dims, "trials": [t.to_json() for t in result.trials]},
                      out / "trials.json", indent=1)
    atomic_write_json(result.best.to_json(), out / "best.json")
    atomic_write_json(result.to_json(), out / "result.json")
    plot_progress(result.trials, out / "progress.png", final_point(result))


def final_point(result: TuneResult) -> dict[str, Any] | None:
    """The final figure as progress.png marks it: the KEPT configuration's speedup and range when one was
    kept (the confirmation batch's once confirmed), else the best re-measured candidate's (``kept`` False: the default was kept); None without a
    final check."""
    if result.beats_default:
        return {"median": result.speedup, "min": result.speedup_range[0], "max": result.speedup_range[1], "kept": True,
                "confirmed": result.selected_speedup is not None}
    if not result.remeasure:
        return None
    k = int(np.argmax(result.remeasure["speedup_median"]))
    return {"median": result.remeasure["speedup_median"][k], "min": result.remeasure["speedup_min"][k],
            "max": result.remeasure["speedup_max"][k], "kept": False}


def load_best(path: str | Path) -> TunedConfig:
    """A `TunedConfig` from a best.json written by `graphcost tune` (checked field by field)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: unreadable tuned configuration ({type(exc).__name__}: {exc})") from None
    return check_best(data, str(path))


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def check_best(data: Any, where: str = "best.json", defaults: bool = False) -> TunedConfig:
    """A `TunedConfig` from best.json's data, every field checked; ValueError naming `where` and the
    field (``layouts[0].minor_to_major``, ``compiler_options.NAME``...). defaults: missing fields take
    their defaults (a dict given to `compile_with`) instead of being refused."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
    checks = {"space": (str, "flags"), "codes": (list, []), "compiler_options": (dict, {}), "flags": (dict, {}),
              "layouts": (list, [])}
    fields: dict[str, Any] = {}
    for key, (typ, default) in checks.items():
        value = data.get(key, default) if defaults else data.get(key)
        if not isinstance(value, typ):
            raise ValueError(f"{where}: field {key!r} must be a {typ.__name__}, got {type(value).__name__}")
        fields[key] = value
    for i, c in enumerate(fields["codes"]):
        if not _is_int(c) or c < 0:
            raise ValueError(f"{where}: field 'codes[{i}]' must be an integer >= 0, got {c!r}")
    for name, value in fields["compiler_options"].items():
        if not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"{where}: field 'compiler_options.{name}' must be a number, string or boolean, "
                             f"got {type(value).__name__}")
    for name, value in fields["flags"].items():
        if not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"{where}: field 'flags.{name}' must be a number, string or boolean, "
                             f"got {type(value).__name__}")
    for i, entry in enumerate(fields["layouts"]):
        at = f"{where}: field 'layouts[{i}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{at}' must be an object, got {type(entry).__name__}")
        for key, ok, what in (("site", _is_int, "an integer"), ("primitive", lambda v: isinstance(v, str), "a string"),
                              ("tensor", lambda v: isinstance(v, str), "a string")):
            if key not in entry:
                raise ValueError(f"{at}.{key}' is missing")
            if not ok(entry[key]):
                raise ValueError(f"{at}.{key}' must be {what}, got {entry[key]!r}")
        perm = entry.get("minor_to_major")
        if not isinstance(perm, list) or not all(_is_int(x) for x in perm):
            raise ValueError(f"{at}.minor_to_major' must be a list of integers, got {perm!r}")
    return TunedConfig(**fields)
