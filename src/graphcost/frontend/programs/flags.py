"""The XLA CPU compiler-option space (`graphcost tune --space flags`, `graphcost collect --space flags`).

A configuration is a set of per-compilation XLA options passed as
``jax.jit(f).lower(*args).compile(compiler_options=...)``. Which options exist, their types,
enum values and defaults are read from the installed jaxlib (`graphcost.frontend.programs.xla_options`:
its XLA ``DebugOptions`` descriptor and a fresh ``CompileOptions``); this module holds the
curated *candidates* — the CPU options worth searching, each with its value domain and how it
is stored — and keeps each only if the installed jaxlib knows it (and its default is one of the
candidate's values); the others are skipped with a warning, never a crash. Options left at the
jaxlib's default are not passed, except ``xla_cpu_multi_thread_eigen`` and any option named in
``XLA_FLAGS`` (``graphcost collect --single-thread`` sets it there), which are always passed
explicitly and take their built-in default as choice 0 (`env_options`).

Stored in the TpuGraphs TILE schema, with ``config_feat`` (K, 24) float32 holding the flag
vector (non-negative). Columns 0-6 are the ones the first ``cpu_flags`` collection varied and
keep their meaning; every later column stores 0 for the value jaxlib 0.10.2 compiles with by
default, so a vector of that collection (zeros there) still says exactly what was compiled. The
shipped ``cpu_flags`` data now varies every column (`flag_configs`). A stored value is a fixed function of the option's value, not of "the default": on a
jaxlib with other defaults, the default configuration simply has other features.

| col | XLA option | value stored | 0.10.2 default |
| --- | --- | --- | --- |
| 0 | xla_backend_optimization_level | 0, 1, 2, 3 | 3 |
| 1 | xla_cpu_experimental_ynn_fusion_type | 0 = "" (off); 1 = INDIVIDUAL_DOT, INDIVIDUAL_CONVOLUTION, REDUCE (0.10.2's default); 2 = INDIVIDUAL_DOT, INDIVIDUAL_CONVOLUTION; 3 = DOT, ELTWISE | 1 |
| 2 | xla_cpu_use_fusion_emitters | 0 / 1 | 1 |
| 3 | xla_cpu_enable_fast_math (fast-math) | 0 / 1 | 0 |
| 4 | xla_cpu_multi_thread_eigen | 0 / 1 | 1 |
| 5 | xla_cpu_prefer_vector_width | log2(width / 128): 0, 1, 2 | 1 (256) |
| 6 | xla_llvm_disable_expensive_passes | 0 / 1 | 0 |
| 7 | xla_cpu_parallel_codegen_split_count | log2(32 / count): 0, 2, 3, 5 (counts 32, 8, 4, 1) | 0 (32) |
| 8 | xla_cpu_scheduler_type | the enum's number (every value) | 0 |
| 9 | xla_cpu_opt_preset | the enum's number (every value) | 0 |
| 10 | xla_cpu_enable_platform_dependent_math | 1 = disabled | 0 |
| 11 | xla_cpu_copy_insertion_use_region_analysis | 0 / 1 | 0 |
| 12 | xla_llvm_enable_invariant_load_metadata | 1 = disabled | 0 |
| 13 | xla_cpu_experimental_enable_tiling_propagation | 0 / 1 | 0 |
| 14 | xla_cpu_use_xnnpack | 1 = disabled | 0 |
| 15 | xla_cpu_experimental_xnn_graph_fusion_mode | the enum's number (every value) | 0 |
| 16 | xla_cpu_use_onednn | 0 / 1 | 0 |
| 17 | xla_cpu_max_isa | ISA cap: 0 = none, 1 = AVX2, 2 = AVX, 3 = SSE4_2 | 0 |
| 18 | xla_cpu_ftz | 1 = disabled (denormals kept) | 0 |
| 19 | xla_cpu_enable_fast_min_max (fast-math) | 0 / 1 | 0 |
| 20 | xla_cpu_fast_math_honor_nans (fast-math) | 1 = not honoured | 0 |
| 21 | xla_cpu_fast_math_honor_infs (fast-math) | 1 = not honoured | 0 |
| 22 | xla_cpu_fast_math_honor_division (fast-math) | 1 = not honoured | 0 |
| 23 | xla_cpu_fast_math_honor_functions (fast-math) | 1 = not honoured | 0 |

The fast-math family may change results, so the tuner searches it only with
``--allow-fast-math``. What it changes on jaxlib 0.10.2 (x86-64 CPU; LLVM IR and object code
of small programs compared): ``enable_fast_math`` changes code;
each ``honor_*`` option changes it further only with ``enable_fast_math`` on (with it off they are
inert); ``enable_fast_min_max`` changes code on its own (max / min lose NaN propagation). On the
same programs, columns 14-17 changed nothing on this jaxlib and CPU (the per-compilation ISA cap
is not applied, XNNPACK fusions are superseded by YNN, oneDNN is not built in), nor did column 6
(``llvm_disable_expensive_passes``); column 4 changes threading at run time, not code. They are
kept because other builds, CPUs and programs differ, and an inert dimension costs a model little.

``config_runtime_normalizers`` holds the runtime of configuration 0, the compiler default, as
the TpuGraphs tile collection normalises by the default configuration's runtime.
"""

from __future__ import annotations

import functools
import math
import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

TILE_CONFIG_DIM = 24
_YNN_DEFAULT = "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION,LIBRARY_FUSION_TYPE_REDUCE"


@dataclass(frozen=True)
class Candidate:
    """One candidate option: a column of the flag vector.

    Attributes:
        column: its column in ``config_feat``.
        name: the column's name (what ``best.json``'s ``flags`` and the space's dimensions call it).
        option: the XLA DebugOptions field it sets.
        kind: the field's expected type in the descriptor (bool, int, string, enum).
        choices: ``(stored value, XLA value, label)`` per value searched; for an enum, empty: every
            value of the enum, stored as its number, compiled and labelled by its name.
        reference: the stored value of jaxlib 0.10.2's default (the old collection's constant).
        fast_math: part of the fast-math family (searched only with ``allow_fast_math``).
    """

    column: int
    name: str
    option: str
    kind: str
    choices: tuple = ()
    reference: int = 0
    fast_math: bool = False


def _bool(default_on: bool) -> tuple:
    """Choices of an on/off option: stored 1 = the value that differs from 0.10.2's default."""
    return ((0, default_on, default_on), (1, not default_on, not default_on))


CANDIDATES: tuple[Candidate, ...] = (
    Candidate(0, "backend_optimization_level", "xla_backend_optimization_level", "int",
              tuple((v, v, v) for v in range(4)), reference=3),
    Candidate(1, "ynn_library_fusion", "xla_cpu_experimental_ynn_fusion_type", "enum",
              ((0, "", "off"), (1, _YNN_DEFAULT, "default"),
               (2, "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION", "dot+conv"),
               (3, "LIBRARY_FUSION_TYPE_DOT,LIBRARY_FUSION_TYPE_ELTWISE", "fused dot+eltwise")), reference=1),
    Candidate(2, "fusion_emitters", "xla_cpu_use_fusion_emitters", "bool", ((0, False, False), (1, True, True)),
              reference=1),
    Candidate(3, "fast_math", "xla_cpu_enable_fast_math", "bool", _bool(False), fast_math=True),
    Candidate(4, "multi_thread_eigen", "xla_cpu_multi_thread_eigen", "bool", ((0, False, False), (1, True, True)),
              reference=1),
    Candidate(5, "log2_vector_width_over_128", "xla_cpu_prefer_vector_width", "int",
              tuple((v, 128 * 2 ** v, 128 * 2 ** v) for v in range(3)), reference=1),
    Candidate(6, "llvm_disable_expensive_passes", "xla_llvm_disable_expensive_passes", "bool", _bool(False)),
    Candidate(7, "log2_32_over_codegen_split_count", "xla_cpu_parallel_codegen_split_count", "int",
              tuple((v, 32 // 2 ** v, 32 // 2 ** v) for v in (0, 2, 3, 5))),
    Candidate(8, "scheduler_type", "xla_cpu_scheduler_type", "enum"),
    Candidate(9, "opt_preset", "xla_cpu_opt_preset", "enum"),
    Candidate(10, "no_platform_dependent_math", "xla_cpu_enable_platform_dependent_math", "bool", _bool(True)),
    Candidate(11, "copy_insertion_region_analysis", "xla_cpu_copy_insertion_use_region_analysis", "bool",
              _bool(False)),
    Candidate(12, "no_llvm_invariant_load_metadata", "xla_llvm_enable_invariant_load_metadata", "bool", _bool(True)),
    Candidate(13, "tiling_propagation", "xla_cpu_experimental_enable_tiling_propagation", "bool", _bool(False)),
    Candidate(14, "no_xnnpack", "xla_cpu_use_xnnpack", "bool", _bool(True)),
    Candidate(15, "xnn_graph_fusion_mode", "xla_cpu_experimental_xnn_graph_fusion_mode", "enum"),
    Candidate(16, "onednn", "xla_cpu_use_onednn", "bool", _bool(False)),
    Candidate(17, "max_isa_cap", "xla_cpu_max_isa", "string",
              ((0, "", "none"), (1, "AVX2", "AVX2"), (2, "AVX", "AVX"), (3, "SSE4_2", "SSE4_2"))),
    Candidate(18, "no_ftz", "xla_cpu_ftz", "bool", _bool(True)),
    Candidate(19, "fast_min_max", "xla_cpu_enable_fast_min_max", "bool", _bool(False), fast_math=True),
    Candidate(20, "no_honor_nans", "xla_cpu_fast_math_honor_nans", "bool", _bool(True), fast_math=True),
    Candidate(21, "no_honor_infs", "xla_cpu_fast_math_honor_infs", "bool", _bool(True), fast_math=True),
    Candidate(22, "no_honor_division", "xla_cpu_fast_math_honor_division", "bool", _bool(True), fast_math=True),
    Candidate(23, "no_honor_functions", "xla_cpu_fast_math_honor_functions", "bool", _bool(True), fast_math=True),
)
assert [c.column for c in CANDIDATES] == list(range(len(CANDIDATES))) and len(CANDIDATES) <= TILE_CONFIG_DIM

FLAG_COLUMNS = tuple(c.name for c in CANDIDATES)
OPTION_NAMES = tuple(c.option for c in CANDIDATES)
DEFAULT = tuple(c.reference for c in CANDIDATES)  # jaxlib 0.10.2's defaults, stored (the old collection's)
LEGACY_COLUMNS = 7  # the columns the first cpu_flags collection (before the space was widened) varied


@dataclass(frozen=True)
class FlagOption:
    """A candidate as the installed jaxlib knows it.

    Attributes:
        candidate: the candidate (column, name, XLA option...).
        stored: the stored values searched, the jaxlib's default first.
        values: the XLA value each stored value compiles with.
        labels: what a study or trials.csv shows for each (distinct bool / int / str).
    """

    candidate: Candidate
    stored: tuple[int, ...]
    values: tuple
    labels: tuple

    @property
    def default(self) -> int:
        """The stored value of the installed jaxlib's default."""
        return self.stored[0]

    def value(self, stored: int):
        """The XLA value of stored value `stored`; ValueError when it is not one of the option's."""
        if stored not in self.stored:
            raise ValueError(f"flag column {self.candidate.column} ({self.candidate.name}): stored value {stored} "
                             f"is not one of {list(self.stored)}")
        return self.values[self.stored.index(stored)]


def _same_value(kind: str, a, b) -> bool:
    if kind == "enum" and isinstance(a, (list, tuple)):  # a repeated enum: the default is a list of names
        return [x for x in a] == [x for x in str(b).split(",") if x]
    return a == b


def _resolve(cand: Candidate, info, default) -> tuple[FlagOption | None, str]:
    """The candidate as this jaxlib knows it, or None and why it is skipped."""
    if info is None:
        return None, "this jaxlib's XLA has no such option"
    if info.kind != cand.kind:
        return None, f"this jaxlib's XLA has it as a {info.kind}, not a {cand.kind}"
    names = {name for name, _ in info.enum_values}
    if cand.choices:
        choices = cand.choices
        if cand.kind == "enum":  # a list of enum names: every name must exist here
            choices = tuple(c for c in choices if all(n in names for n in str(c[1]).split(",") if n))
    else:
        choices = tuple((num, name, name) for name, num in info.enum_values if not name.endswith("_INVALID"))
    if default is not None:
        first = [c for c in choices if _same_value(cand.kind, default, c[1])]
        if not first:
            return None, f"its default here ({default!r}) is not one of the values graphcost stores"
        choices = (first[0], *[c for c in choices if c is not first[0]])
    stored, values, labels = zip(*choices)
    return FlagOption(cand, tuple(stored), tuple(values), tuple(labels)), ""


@functools.lru_cache(maxsize=None)
def known_options() -> tuple[FlagOption, ...]:
    """The candidates the installed jaxlib knows, in column order; each other one is skipped with a
    warning naming it and why. Without a readable DebugOptions descriptor the first 7 columns are
    used with their 0.10.2 defaults (a warning says so).

    Returns:
        The usable options (`FlagOption`), their default value first.
    """
    from graphcost.frontend.programs.xla_options import option_defaults, option_schema

    schema, defaults = option_schema(), option_defaults()
    out = []
    if schema is None:
        log.warning("cannot read XLA's DebugOptions from this jaxlib: the flag space keeps the 7 options of "
                    "jaxlib 0.10.2 with its defaults")
        for cand in CANDIDATES[:LEGACY_COLUMNS]:
            choices = cand.choices or ()
            first = [c for c in choices if c[0] == cand.reference]
            choices = (*first, *[c for c in choices if c[0] != cand.reference])
            stored, values, labels = zip(*choices)
            out.append(FlagOption(cand, stored, values, labels))
        return tuple(out)
    named = env_options()
    for cand in CANDIDATES:
        default = (defaults or {}).get(cand.option)
        if cand.option in named:  # XLA_FLAGS sets it (read once per process): use the built-in default, pass it always
            default = next((c[1] for c in cand.choices if c[0] == cand.reference), None)
        opt, why = _resolve(cand, schema.get(cand.option), default)
        if opt is None:
            log.warning(f"flag space: skipping {cand.option} (column {cand.column}): {why}")
        else:
            out.append(opt)
    return tuple(out)


def env_options() -> set[str]:
    """The XLA options named in the ``XLA_FLAGS`` environment variable (``--xla_cpu_ftz=false`` ...).

    XLA reads ``XLA_FLAGS`` once per process, so a default read from a process started before the
    variable changed (or a child started after) would disagree; the flag space therefore takes the
    built-in default for these options and always passes them explicitly."""
    import os
    import re

    return set(re.findall(r"--(xla_[A-Za-z0-9_]+)", os.environ.get("XLA_FLAGS", "")))


def skipped_options() -> tuple[str, ...]:
    """The candidate options the installed jaxlib does not offer (see `known_options`)."""
    known = {o.candidate.option for o in known_options()}
    return tuple(c.option for c in CANDIDATES if c.option not in known)


@dataclass(frozen=True)
class FlagConfig:
    """One point of the flag space, as stored values of the `FLAG_COLUMNS` (missing trailing
    columns take `DEFAULT`'s values, so a 7-value configuration of the old collection still works)."""

    values: tuple[int, ...] = DEFAULT

    def __post_init__(self):
        values = tuple(int(v) for v in self.values)
        if len(values) > len(DEFAULT):
            raise ValueError(f"a flag configuration has at most {len(DEFAULT)} values, got {len(values)}")
        object.__setattr__(self, "values", values + DEFAULT[len(values):])

    def compiler_options(self) -> dict[str, object]:
        """The `compiler_options` dict for `Lowered.compile`: every option whose stored value is not
        the installed jaxlib's default, plus ``xla_cpu_multi_thread_eigen`` always.

        Raises:
            ValueError: a column holds a value its option does not have, or a non-default value of
                an option this jaxlib does not know.
        """
        opts: dict[str, object] = {}
        known = {o.candidate.column: o for o in known_options()}
        explicit = env_options() | {"xla_cpu_multi_thread_eigen"}
        for col, v in enumerate(self.values):
            opt = known.get(col)
            if opt is None:
                if v != DEFAULT[col]:
                    raise ValueError(f"flag column {col} ({FLAG_COLUMNS[col]}) is set to {v}, but this jaxlib "
                                     f"has no {OPTION_NAMES[col]} option")
                continue
            value = opt.value(v)
            if v != opt.default or opt.candidate.option in explicit:
                opts[opt.candidate.option] = value
        return opts


def collect_columns() -> tuple[str, ...]:
    """The flag columns `flag_configs` varies: every option the installed jaxlib knows, the fast-math
    family included (a model that has seen them can rank them when the tuner is allowed them)."""
    return tuple(o.candidate.name for o in known_options())


FLAG_MODES = ("both", "tuner")  # how ``graphcost collect --space flags --mode`` spreads configurations


def varied_flag_columns(mode: str = "both") -> tuple[str, ...]:
    """The flag columns a flag collection of `mode` varies: every option the jaxlib knows for ``both``
    (`flag_configs`); for ``tuner`` those `graphcost tune` searches by default (the fast-math family stays
    at its default, as the tuner's flag space keeps it unless allowed)."""
    if mode == "tuner":
        return tuple(o.candidate.name for o in known_options() if not o.candidate.fast_math)
    return collect_columns()


def tuner_flag_configs(num: int, seed: int = 0) -> tuple[list[FlagConfig], list[str]]:
    """`num` configurations spread the way `graphcost tune` spreads its candidates over its default flag
    space (`graphcost.tuning.space.sample_pool` of `FlagSpace()`: the same draws): the default first,
    then alternately a share rho ~ U(0, 1) of the options changed and 1-3 options changed
    (`sampling.spread_pool`); the fast-math family at its default.

    Returns:
        (`FlagConfig`s, origin of each: ``"default"`` for the default and the 1-3 changes, ``"random"``).
    """
    from graphcost.frontend.programs import sampling

    options = known_options()
    sizes = [1 if o.candidate.fast_math else len(o.stored) for o in options]  # code c = o.stored[c]; 0 the default
    default = (0,) * len(options)
    pool, origin = sampling.spread_pool(lambda rng: sampling.rho_sample(sizes, rng),
                                        lambda rng: sampling.mutate(default, sizes, rng), default, num - 1, seed)
    configs = []
    for codes in [default, *pool]:
        vector = list(DEFAULT)
        for o, c in zip(options, codes):
            vector[o.candidate.column] = int(o.stored[c])
        configs.append(FlagConfig(tuple(vector)))
    return configs, ["default", *origin]


FIRST_COLLECTION_COLUMNS = 7  # the first cpu_flags collection varied columns 0-6 and did not record them


def trained_flag_columns(data_root) -> tuple[str, ...] | None:
    """The flag columns a flag collection at `data_root` varied: its manifest's
    ``collection.flag_columns`` (the first 7 columns for a collection made before they were
    recorded). None when `data_root` has no readable manifest of a flag collection (e.g. a
    TpuGraphs tile dataset), i.e. nothing is known about which options its labels vary."""
    import json
    from pathlib import Path

    try:
        manifest = json.loads((Path(data_root) / "manifest.json").read_text(encoding="utf-8"))
        collection = manifest["collection"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    if not isinstance(collection, dict) or collection.get("space") != "flags":
        return None
    columns = collection.get("flag_columns", FLAG_COLUMNS[:FIRST_COLLECTION_COLUMNS])
    if not isinstance(columns, list | tuple) or not all(isinstance(c, str) for c in columns):
        return None
    return tuple(c for c in columns if c in FLAG_COLUMNS)


def flag_configs(num: int, seed: int = 0) -> list[FlagConfig]:
    """`num` distinct configurations over every option of `collect_columns` (the widened space
    ``graphcost collect --space flags`` measures): the installed jaxlib's default first, then
    alternately a uniform random point (every option drawn from its values) and the default with
    1-3 options changed (local moves, which say what one option does on its own).

    Args:
        num: how many configurations (the default included); fewer only if the space is smaller.
        seed: the sampling seed (the same seed and jaxlib give the same configurations).

    Returns:
        `FlagConfig`s, the default first, no two equal.
    """
    rng = np.random.default_rng(seed)
    options = known_options()
    total = math.prod(len(o.stored) for o in options)
    base = list(DEFAULT)
    for o in options:
        base[o.candidate.column] = o.default
    default = tuple(base)
    movable = [o for o in options if len(o.stored) > 1]
    out, seen, misses = [FlagConfig(default)], {default}, 0
    while len(out) < min(num, total):
        values = list(default)
        if len(out) % 2 or misses >= 100:  # uniform over the whole space (also once the local moves run out)
            for o in options:
                values[o.candidate.column] = int(o.stored[rng.integers(len(o.stored))])
        else:  # 1-3 options away from the default
            for i in rng.choice(len(movable), size=min(len(movable), int(rng.integers(1, 4))), replace=False):
                o = movable[int(i)]
                values[o.candidate.column] = int(o.stored[1 + rng.integers(len(o.stored) - 1)])
        key = tuple(values)
        if key in seen:
            misses += 1
        else:
            seen.add(key)
            out.append(FlagConfig(key))
            misses = 0
    return out


def flag_features(configs: list[FlagConfig]) -> np.ndarray:
    """(K, 24) float32 flag vectors (columns in the module docstring)."""
    feat = np.zeros((len(configs), TILE_CONFIG_DIM), np.float32)
    for i, cfg in enumerate(configs):
        feat[i, : len(cfg.values)] = cfg.values
    return feat



def default_flag_vector() -> np.ndarray:
    """(24,) float32: the default configuration's flag vector, `flag_features` of `DEFAULT` (what every kernel of a
    layout collection ran under)."""
    return flag_features([FlagConfig(tuple(DEFAULT))])[0].astype(np.float32)

def config_from_features(row: np.ndarray) -> FlagConfig:
    """The configuration a (24,) flag vector stores (the inverse of `flag_features`)."""
    row = np.asarray(row)
    if row.shape != (TILE_CONFIG_DIM,) or np.any(row != np.round(row)) or np.any(row < 0):
        raise ValueError(f"a flag vector is {TILE_CONFIG_DIM} non-negative integers, got shape {row.shape}")
    return FlagConfig(tuple(int(v) for v in row[: len(DEFAULT)]))
