"""How configurations spread over a space of categorical dimensions, each a number of choices with
code 0 its default: what `graphcost tune`'s searches propose (`graphcost.tuning.space.Space`) and what
``graphcost collect --space flags --mode tuner`` measures (`flags.tuner_flag_configs`).

- `rho_sample`: a share rho ~ U(0, 1) of the dimensions leave their default, each to a uniform
  non-default choice, so samples spread from near the default to far from it;
- `mutate`: 1..max_changes random dimensions moved to another choice;
- `spread_pool`: distinct non-default configurations, alternately a sample and a mutation of the default.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

Codes = tuple[int, ...]


def rho_sample(sizes: Sequence[int], rng: np.random.Generator) -> Codes:
    """One configuration of dimensions with `sizes` choices: each dimension with more than one choice
    leaves its default with probability rho ~ U(0, 1), drawn once per configuration."""
    rho = rng.uniform()
    return tuple(int(rng.integers(1, n)) if n > 1 and rng.uniform() < rho else 0 for n in sizes)


def mutate(codes: Codes, sizes: Sequence[int], rng: np.random.Generator, max_changes: int = 3) -> Codes:
    """`codes` with 1..`max_changes` random dimensions (of more than one choice) moved to another choice."""
    free = [i for i, n in enumerate(sizes) if n > 1]
    if not free:
        return tuple(codes)
    out = list(codes)
    k = int(rng.integers(1, min(max_changes, len(free)) + 1))
    for i in rng.choice(free, size=k, replace=False):
        other = [c for c in range(sizes[i]) if c != out[i]]
        out[i] = int(other[rng.integers(len(other))])
    return tuple(out)


def spread_pool(sample: Callable[[np.random.Generator], Codes], mutate_default: Callable[[np.random.Generator], Codes],
                default: Codes, size: int, seed: int) -> tuple[list[Codes], list[str]]:
    """`size` distinct non-default configurations, alternately `sample` and `mutate_default` (fewer only
    when the space runs out), and the origin of each: ``"random"`` for a sample, ``"default"`` for a
    mutation of the default."""
    rng = np.random.default_rng(seed)
    seen = {tuple(default)}
    out: list[Codes] = []
    origin: list[str] = []
    for i in range(100 * size):
        if len(out) == size:
            break
        c = sample(rng) if i % 2 == 0 else mutate_default(rng)
        if c not in seen:
            seen.add(c)
            out.append(c)
            origin.append("random" if i % 2 == 0 else "default")
    return out, origin
