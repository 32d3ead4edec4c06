"""Search spaces of `graphcost tune`: XLA CPU compiler flags, per-node layouts, or both.

A space is a list of categorical *dimensions*; a configuration is a tuple of *codes*, one index
into each dimension's choices, and code 0 is always the compiler's default choice. This one
encoding serves every strategy: random and evolutionary search mutate codes, Optuna's TPE
suggests one categorical per dimension, the per-program tree model reads the codes as
categorical features, and the graph cost model gets the configuration in the TpuGraphs schema
(`graph_for`): a TILE graph for the flag vector (`graphcost.frontend.programs.flags`), a LAYOUT graph for
the per-node ``minor_to_major`` choices (`graphcost.frontend.programs.layouts`).

Applying a configuration (`TuneProgram.lower` + `Space.compiler_options`): flags are passed as
per-compilation XLA options, layouts as ``with_layout_constraint`` on the configurable nodes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from graphcost.frontend.programs import flags as flagspace
from graphcost.frontend.programs import sampling
from graphcost.frontend.programs.user_program import TuneProgram

Codes = tuple[int, ...]


@dataclass(frozen=True)
class Dim:
    """One categorical dimension: `choices[0]` is the compiler default.

    Attributes:
        name: the dimension's name in the space (a flag column, a layout site's tensor).
        choices: the values the space applies, the default first.
        param: the name of the study parameter (the XLA option, for a flag); `name` when empty.
        labels: the study parameter's value for each choice (bool, int, float or str, distinct), what
            a study opened in optuna-dashboard or `optuna.load_study` shows; from `choices` when empty.
    """

    name: str
    choices: tuple
    param: str = ""
    labels: tuple = ()

    @property
    def param_name(self) -> str:
        """The Optuna parameter name of this dimension."""
        return self.param or self.name

    @property
    def param_values(self) -> tuple:
        """The Optuna parameter value of each choice, in the order of `choices`."""
        if self.labels:
            return tuple(self.labels)
        return tuple(c if isinstance(c, (bool, int, float, str)) else str(c) for c in self.choices)


class Space:
    """A product of categorical dimensions (see the module docstring). Subclasses apply codes."""

    name = "space"
    kinds: tuple[str, ...] = ()  # graph kinds a cost model of this space scores: "tile", "layout"

    def __init__(self, dims: list[Dim]):
        if not dims:
            raise ValueError(f"the {self.name} space of this program is empty: nothing to tune")
        self.dims = dims

    # -- the code encoding -------------------------------------------------------------------
    def default(self) -> Codes:
        return (0,) * len(self.dims)

    def size(self) -> int:
        """Number of configurations (an exact Python int; may be astronomically large)."""
        return int(np.prod([len(d.choices) for d in self.dims], dtype=object))

    def enumerate(self) -> list[Codes]:
        """Every configuration, the default first (only for small spaces)."""
        return [tuple(c) for c in itertools.product(*(range(len(d.choices)) for d in self.dims))]

    def sample(self, rng: np.random.Generator) -> Codes:
        """A random configuration: a share rho ~ U(0, 1) of the dimensions leave their default,
        each to a uniform non-default choice (as `layouts.sample_configs` mode ``random``), so
        samples spread from near-default to far from it."""
        return sampling.rho_sample([len(d.choices) for d in self.dims], rng)

    def mutate(self, codes: Codes, rng: np.random.Generator, max_changes: int = 3) -> Codes:
        """`codes` with 1..`max_changes` random dimensions moved to another choice."""
        return sampling.mutate(codes, [len(d.choices) for d in self.dims], rng, max_changes)

    def crossover(self, a: Codes, b: Codes, rng: np.random.Generator) -> Codes:
        """Uniform crossover: each dimension from `a` or `b` with probability 1/2."""
        pick = rng.uniform(size=len(a)) < 0.5
        return tuple(int(x if p else y) for x, y, p in zip(a, b, pick))

    def snap(self, codes: Codes, exclude) -> Codes | None:
        """The configuration to measure for a sampler's proposal `codes` (itself here; the nearest
        unmeasured one in a space restricted to configurations measured beforehand, as the replay
        benchmark's), None when nothing is left."""
        return tuple(codes)

    def check(self, codes) -> Codes:
        """`codes` as a tuple of ints, or ValueError naming the offending dimension."""
        codes = tuple(int(c) for c in codes)
        if len(codes) != len(self.dims):
            raise ValueError(f"configuration has {len(codes)} codes, the {self.name} space has {len(self.dims)} dimensions")
        for c, d in zip(codes, self.dims):
            if not 0 <= c < len(d.choices):
                raise ValueError(f"dimension {d.name}: code {c} out of range [0, {len(d.choices)})")
        return codes

    # -- applying ----------------------------------------------------------------------------
    def lower(self, program: TuneProgram, codes: Codes):
        raise NotImplementedError

    def compiler_options(self, codes: Codes) -> dict[str, Any]:
        return {}

    def flag_vector(self, codes: Codes) -> np.ndarray:
        """(24,) the flag columns `codes` compiles with, as the kernel model reads them
        (`graphcost.kernels.scoring`): the default's in a space without flags (layouts alone)."""
        return flagspace.default_flag_vector()

    def describe(self, codes: Codes) -> dict[str, Any]:
        """The configuration as plain data (what `compile_with` and best.json carry)."""
        raise NotImplementedError

    def graph_for(self, program: TuneProgram, kind: str, configs: list[Codes]):
        """A TpuGraphs graph of `program` holding `configs` (placeholder runtimes) for a cost model."""
        raise NotImplementedError


def sample_pool(space: Space, size: int, seed: int) -> tuple[list[Codes], list[str]]:
    """`size` distinct non-default configurations the way the tuner's searches spread them, alternately
    `Space.sample` and `Space.mutate` of the default (`sampling.spread_pool`): the replay benchmark's
    pools. Returns (configurations, origin of each: ``"random"`` | ``"default"``)."""
    return sampling.spread_pool(space.sample, lambda rng: space.mutate(space.default(), rng), space.default(), size, seed)


class FlagSpace(Space):
    """XLA CPU compiler options (`graphcost.frontend.programs.flags`): one dimension per option the installed
    jaxlib knows, its choices the stored values (the jaxlib's default first). The fast-math family
    may change results, so it stays at its default unless `allow_fast_math`.

    Args:
        allow_fast_math: also search the fast-math family.
        columns: search only these flag columns (names in `flags.FLAG_COLUMNS`), the others at their
            default; None = every option (e.g. the 7 columns of a replay table measured before the
            space was widened).

    Raises:
        ValueError: a name in `columns` that is not a flag column.
    """

    name, kinds = "flags", ("tile",)

    def __init__(self, allow_fast_math: bool = False, columns: list[str] | tuple[str, ...] | None = None):
        if columns is not None:
            unknown = [c for c in columns if c not in flagspace.FLAG_COLUMNS]
            if unknown:
                raise ValueError(f"unknown flag column {unknown[0]!r}; expected names of graphcost.frontend.programs.flags."
                                 "FLAG_COLUMNS")
        self.options = flagspace.known_options()
        dims = []
        for opt in self.options:
            cand = opt.candidate
            n = len(opt.stored)
            if (cand.fast_math and not allow_fast_math) or (columns is not None and cand.name not in columns):
                n = 1
            dims.append(Dim(cand.name, opt.stored[:n], param=cand.option, labels=opt.labels[:n]))
        super().__init__(dims)
        self.allow_fast_math = allow_fast_math

    def values(self, codes: Codes) -> tuple[int, ...]:
        """The stored value of each dimension's choice."""
        return tuple(int(d.choices[c]) for d, c in zip(self.dims, codes))

    def config(self, codes: Codes) -> flagspace.FlagConfig:
        """The `FlagConfig` (all 24 columns) that `codes` compiles with."""
        vector = list(flagspace.DEFAULT)
        for opt, v in zip(self.options, self.values(codes)):
            vector[opt.candidate.column] = v
        return flagspace.FlagConfig(tuple(vector))

    def lower(self, program, codes):
        return program.lower(None)

    def compiler_options(self, codes):
        return self.config(codes).compiler_options()

    def flag_vector(self, codes):
        return flagspace.flag_features([self.config(codes)])[0]

    def describe(self, codes):
        return {"compiler_options": self.compiler_options(codes),
                "flags": {d.name: v for d, v in zip(self.dims, self.values(codes))}}

    def graph_for(self, program, kind, configs):
        from graphcost.data.graph import TileGraph
        from graphcost.data.io.tpugraphs_io import placeholder_runtimes

        if kind != "tile":
            raise ValueError(f"the flags space is scored by a tile model, not a {kind} model")
        fm = program.featurized()
        feat = flagspace.flag_features([self.config(c) for c in configs])  # (K, 24)
        return TileGraph(None, fm.node_feat.astype(np.float32), fm.node_opcode, fm.edge_index.astype(np.int64),
                         feat, **placeholder_runtimes("tile", len(configs)))


_SLOTS = ("out", "in0", "in1")


def minor_to_major_label(perm) -> str:
    """A layout's minor_to_major as HLO prints it: ``{1,0}``."""
    return "{" + ",".join(str(int(x)) for x in perm) + "}"


class LayoutSpace(Space):
    """Per-node layouts of the program's configurable dot / convolution / reshape nodes
    (`graphcost.frontend.programs.layouts`): one dimension per configurable tensor (output, operand 0,
    operand 1), choices = every ``minor_to_major`` permutation of its rank, row-major first."""

    name, kinds = "layout", ("layout",)

    def __init__(self, program: TuneProgram):
        from graphcost.frontend.programs.layouts import default_perm

        _, _, active, _ = program.layout_parts()
        self.active = active
        self.slots: list[tuple[int, int]] = []  # (position in active, tensor j)
        dims = []
        for a, site in enumerate(active):
            for j, rank in enumerate(site.ranks):
                if rank:
                    base = default_perm(rank)
                    perms = [base] + [p for p in itertools.permutations(range(rank)) if p != base]
                    dims.append(Dim(f"site{site.index}.{site.primitive}.{_SLOTS[j]}", tuple(perms),
                                    labels=tuple(minor_to_major_label(p) for p in perms)))
                    self.slots.append((a, j))
        super().__init__(dims)

    def triples(self, codes: Codes) -> list[tuple]:
        """Per active site, (out, in0, in1) minor_to_major permutations (None where absent)."""
        from graphcost.frontend.programs.layouts import default_config

        cfg = [list(t) for t in default_config(self.active)]
        for (a, j), d, c in zip(self.slots, self.dims, codes):
            cfg[a][j] = d.choices[c]
        return [tuple(t) for t in cfg]

    def lower(self, program, codes):
        if all(c == 0 for c in codes):  # the default layouts compile to the unconstrained program
            return program.lower(None)
        lp = program.layout_parts()[0]
        return program.lower(lp.full_config(self.active, self.triples(codes)))

    def describe(self, codes):
        # a non-zero code is exactly a tensor moved off the default layout (choice 0 is the default)
        return {"layouts": [{"site": self.active[a].index, "primitive": self.active[a].primitive, "tensor": _SLOTS[j],
                             "minor_to_major": list(d.choices[c])}
                            for (a, j), d, c in zip(self.slots, self.dims, codes) if c]}

    def graph_for(self, program, kind, configs):
        from graphcost.data.graph import LayoutGraph
        from graphcost.data.io.tpugraphs_io import placeholder_runtimes
        from graphcost.frontend.programs.layouts import config_features

        if kind != "layout":
            raise ValueError(f"the layout space is scored by a layout model, not a {kind} model")
        _, fm, _, node_ids = program.layout_parts()
        feat = config_features([self.triples(c) for c in configs])  # (K, C, 18)
        return LayoutGraph(None, fm.node_feat.astype(np.float32), fm.node_opcode, fm.edge_index.astype(np.int64),
                           node_ids, feat, node_splits=fm.node_splits.astype(np.int64),
                           **placeholder_runtimes("layout", len(configs)))


class JointSpace(Space):
    """Flags and layouts together: the flag dimensions first, then the layout dimensions."""

    name, kinds = "both", ("tile", "layout")

    def __init__(self, flags: FlagSpace, layout: LayoutSpace):
        self.flags, self.layout = flags, layout
        super().__init__(flags.dims + layout.dims)

    def split(self, codes: Codes) -> tuple[Codes, Codes]:
        n = len(self.flags.dims)
        return tuple(codes[:n]), tuple(codes[n:])

    def lower(self, program, codes):
        return self.layout.lower(program, self.split(codes)[1])

    def compiler_options(self, codes):
        return self.flags.compiler_options(self.split(codes)[0])

    def flag_vector(self, codes):
        return self.flags.flag_vector(self.split(codes)[0])

    def describe(self, codes):
        f, l = self.split(codes)
        return {**self.flags.describe(f), **self.layout.describe(l)}

    def graph_for(self, program, kind, configs):
        part = 0 if kind == "tile" else 1
        sub = self.flags if kind == "tile" else self.layout
        return sub.graph_for(program, kind, [self.split(c)[part] for c in configs])


SPACES = ("flags", "layout", "both")


def make_space(name: str, program: TuneProgram, allow_fast_math: bool = False) -> Space:
    """The space called `name` (flags | layout | both) for `program`."""
    if name == "flags":
        return FlagSpace(allow_fast_math)
    if name == "layout":
        return _layout_space(program)
    if name == "both":
        return JointSpace(FlagSpace(allow_fast_math), _layout_space(program))
    raise ValueError(f"unknown space {name!r}; expected one of {', '.join(SPACES)}")


def _layout_space(program: TuneProgram) -> LayoutSpace:
    try:
        return LayoutSpace(program)
    except ValueError:
        raise ValueError(f"{program.name}: no configurable dot / convolution / reshape of rank >= 2 found, "
                         "so the layout space is empty; use --space flags") from None

