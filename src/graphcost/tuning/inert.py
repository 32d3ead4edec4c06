"""Options that change nothing in this program's executable, learnt from its compiles and dropped from the search.

Many XLA options do nothing to a given program (the zoo's flag collection: a median 16 distinct executables of
16 configurations, as few as 10; on a small loop program, 24 of its 31 single-option changes compiled to the
default's executable). A search that varies them spends compiles, and without `COPY` trials it spent
measurements, on configurations it has already timed.

What is learnt: per dimension, which of its choices are interchangeable. Two compiled configurations with the
same executable (`trial.Evaluator.fingerprints`) that differ in exactly one dimension show that that
dimension's two choices are interchangeable there; the classes of interchangeable choices are kept as a
union-find per dimension. A dimension whose choices all fall into one class is inert: it is dropped from the
search. A configuration is then known before it is compiled when its `canonical` form (every choice replaced
by the first of its class, the default's where the default is in it) equals that of a configuration already
measured: it is recorded as a copy of that one, at no cost in budget or compile time (`twins`).

Where the pairs come from: the single-option configurations, compiled (nothing run) before the search for as
long as `PROBE_SECONDS` allows (`probe`), and every compile of the search itself. A choice found interchangeable
next to the default is assumed so elsewhere: an option that only acts together with another (a fast-math
``honor_*`` option) would be dropped wrongly, so the fast-math family stays out of the default space.
"""

from __future__ import annotations

import time
from collections import defaultdict
from itertools import combinations
from typing import TYPE_CHECKING, Any, Callable

from graphcost.tuning.space import Codes, Space

if TYPE_CHECKING:
    from graphcost.tuning.trial import Trial

PROBE_SECONDS = 8.0  # compile time spent on single-option probes before a search (2 threads)
GROUP_PAIRS_MAX = 256  # configurations of one executable compared pairwise (the rest only to the first)


class InertOptions:
    """Interchangeable choices of each dimension of `space`, learnt from compiled executables (module docstring)."""

    def __init__(self, space: Space):
        self.space = space
        self.parent = [list(range(len(d.choices))) for d in space.dims]  # per dimension: union-find over codes

    def _root(self, dim: int, code: int) -> int:
        parent = self.parent[dim]
        while parent[code] != code:
            parent[code] = parent[parent[code]]
            code = parent[code]
        return code

    def _join(self, dim: int, a: int, b: int) -> None:
        ra, rb = self._root(dim, a), self._root(dim, b)
        if ra != rb:  # the smaller code represents the class, so the default (0) represents its own
            lo, hi = min(ra, rb), max(ra, rb)
            self.parent[dim][hi] = lo

    def learn(self, fingerprints: dict[Codes, str]) -> None:
        """Join the choices of every pair of configurations with one executable that differ in one dimension."""
        groups: dict[str, list[Codes]] = defaultdict(list)
        for codes, fp in fingerprints.items():
            groups[fp].append(tuple(codes))
        for members in groups.values():
            pairs = combinations(members[:GROUP_PAIRS_MAX], 2)
            for a, b in pairs:
                diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
                if len(diff) == 1:
                    self._join(diff[0], a[diff[0]], b[diff[0]])

    def canonical(self, codes: Codes) -> Codes:
        """`codes` with each choice replaced by the representative of its class."""
        return tuple(self._root(i, int(c)) for i, c in enumerate(codes))

    def inert(self) -> list[str]:
        """Names of the dimensions whose choices are all interchangeable: dropped from the search."""
        return [d.name for i, d in enumerate(self.space.dims)
                if len(d.choices) > 1 and all(self._root(i, c) == 0 for c in range(len(d.choices)))]

    def twins(self, batch: list[Codes], known: list[Trial]) -> list[Trial | str | None]:
        """For each configuration of `batch`: the measured trial of `known` (or ``"default"``) whose executable
        it must share by what was learnt, else None (it has to be compiled)."""
        default = self.space.default()
        seen: dict[Codes, Any] = {self.canonical(default): "default"}
        for t in known:
            seen.setdefault(self.canonical(t.codes), t)
        return [seen.get(self.canonical(c)) if tuple(c) != default else None for c in batch]

    def probe(self, compile_many: Callable[[list[Codes]], list], fingerprints: dict[Codes, str],
              seconds: float = PROBE_SECONDS, chunk: int = 4) -> int:
        """Compile the single-option configurations (each non-default choice of each dimension, the default
        elsewhere) not compiled yet, `chunk` at a time, until `seconds` have been spent; learn from their
        executables. `compile_many` is `trial.Evaluator.compile_many` (it notes `fingerprints`). How many were
        compiled now."""
        from graphcost.tuning.learners.effects import single_option_configs

        probes = [c for c in single_option_configs(self.space) if c not in fingerprints]  # (the prior's are known)
        done = compile_for(probes, compile_many, seconds, chunk)
        self.learn(fingerprints)
        return len(done)


def compile_for(configs: list[Codes], compile_many: Callable[[list[Codes]], Any], seconds: float,
                chunk: int = 4) -> list[Codes]:
    """Compile `configs` `chunk` at a time (`compile_many` of each chunk) until `seconds` have been spent, the first
    chunk always; the configurations compiled, in order. What the inert-option probe and the kernel prior
    (`graphcost.tuning.kernel_prior`) spend their compile time with."""
    start = time.perf_counter()
    done: list[Codes] = []
    for k in range(0, len(configs), chunk):
        if done and time.perf_counter() - start > seconds:
            break
        compile_many(configs[k:k + chunk])
        done += configs[k:k + chunk]
    return done
