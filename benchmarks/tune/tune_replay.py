"""Replaying tuning strategies on configurations measured beforehand (bench_tune.py; not part of the package).

Comparing strategies on real hardware at several budgets and seeds costs far more measurements
than the strategies themselves spend. Instead, a program's configurations are measured once, in
one interleaved batch with the default (`Evaluator.evaluate`), and every strategy then draws its
measurements from that table (`ReplayEvaluator`): the exhaustive table for the flag space makes
the replay exact; for the layout space the table is a large random sample of the space, and
`PoolSpace` keeps every strategy inside it:

* random search and the model strategies choose among the measured configurations only
  (``enumerate`` is the pool; ``sample`` / ``mutate`` return pool members, a mutation being a
  random one of the nearest pool members by Hamming distance);
* TPE keeps its own search over the full space, and each proposal is snapped to the nearest
  measured configuration not measured yet (`snap`) — an approximation of TPE that the benchmark
  states next to its figures.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphcost.tuning.trial import OK, RETIMED, Trial
from graphcost.tuning.space import Codes, Space


class PoolSpace(Space):
    """`base` restricted to the configurations in `pool` (module docstring)."""

    def __init__(self, base: Space, pool: list[Codes], neighbours: int = 5):
        self.base, self.neighbours = base, neighbours
        self.name, self.kinds = base.name, base.kinds
        default = base.default()
        self.pool = [default] + [tuple(c) for c in dict.fromkeys(map(tuple, pool)) if tuple(c) != default]
        self._codes = np.asarray(self.pool, np.int64)  # (P, D)
        super().__init__(base.dims)

    def size(self) -> int:
        return len(self.pool)

    def enumerate(self) -> list[Codes]:
        return list(self.pool)

    def _nearest(self, codes: Codes, exclude=()) -> list[Codes]:
        dist = (self._codes != np.asarray(codes)).sum(axis=1)  # (P,) Hamming distances
        return [self.pool[i] for i in np.argsort(dist, kind="stable") if self.pool[i] not in exclude]

    def sample(self, rng):
        return self.pool[int(rng.integers(1, len(self.pool)))] if len(self.pool) > 1 else self.pool[0]

    def mutate(self, codes, rng, max_changes=3):
        near = self._nearest(codes, exclude={tuple(codes)})[: self.neighbours]
        return near[int(rng.integers(len(near)))] if near else tuple(codes)

    def crossover(self, a, b, rng):
        return self._nearest(self.base.crossover(a, b, rng))[0]

    def snap(self, codes: Codes, exclude) -> Codes | None:
        near = self._nearest(codes, exclude)
        return near[0] if near else None

    def lower(self, program, codes):
        return self.base.lower(program, codes)

    def compiler_options(self, codes):
        return self.base.compiler_options(codes)

    def describe(self, codes):
        return self.base.describe(codes)

    def graph_for(self, program, kind, configs):
        return self.base.graph_for(program, kind, configs)


class ReplayEvaluator:
    """Looks measurements up in a table instead of measuring; counts what it was asked for."""

    def __init__(self, space: Space, table: dict[Codes, Trial]):
        self.space, self.table = space, table
        self.asked = 0

    def evaluate(self, batch: list[Codes], again: Sequence[Codes] = ()) -> list[Trial]:
        """The table's trials of `batch` (counted as asked), then of `again` as re-timings (the same
        number again: a table has one measurement per configuration)."""
        out = []
        for k, codes in enumerate([*batch, *again]):
            if codes not in self.table:
                raise KeyError(f"configuration {list(codes)} was not measured: replay needs it in the table")
            t = self.table[codes]
            out.append(Trial(codes, t.status if k < len(batch) else RETIMED, t.ratio, t.runtime_ns, t.default_ns, t.error))
            self.asked += k < len(batch)
        return out


def best_known(table: dict[Codes, Trial]) -> float:
    """The best speedup over the default in the table (1.0 when nothing beats it)."""
    ratios = [t.ratio for t in table.values() if t.status == OK]
    return max(1.0, 1.0 / min(ratios)) if ratios else 1.0
