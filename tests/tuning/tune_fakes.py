"""Fast stand-ins for the tuning tests: an evaluator with a deterministic runtime model, no JAX calls."""

from __future__ import annotations

import numpy as np

from graphcost.tuning.trial import OK, RETIMED, Trial


class FakeEvaluator:
    """ratio = exp(sum(weights * codes) / 10) (code 0 = default), times exp(noise * N(0, 1)) per timing;
    codes in `crash` fail to compile.

    Records every configuration it is asked to measure (`measured`; re-timings in `retimed`), and can
    raise after `stop_after` batches (a kill in the middle of a run)."""

    def __init__(self, space, crash=(), stop_after: int | None = None, seed: int = 0, noise: float = 0.0):
        self.space = space
        self.weights = np.random.default_rng(seed).uniform(-1.0, 1.0, len(space.dims))
        self.crash = set(crash)
        self.measured: list[tuple] = []
        self.retimed: list[tuple] = []
        self.stop_after, self.batches = stop_after, 0
        self.noise, self.rng = noise, np.random.default_rng(seed + 1)

    def ratio(self, codes) -> float:
        return float(np.exp(np.dot(self.weights, np.asarray(codes, float)) / 10))

    def evaluate(self, batch, again=()):
        if self.stop_after is not None and self.batches >= self.stop_after:
            raise KeyboardInterrupt
        self.batches += 1
        out = []
        for k, c in enumerate([*batch, *again]):
            (self.measured if k < len(batch) else self.retimed).append(tuple(c))
            if tuple(c) in self.crash:
                out.append(Trial(tuple(c), "compile_error", error="XlaRuntimeError: boom"))
            else:
                r = self.ratio(c) * float(np.exp(self.noise * self.rng.normal()))
                out.append(Trial(tuple(c), OK if k < len(batch) else RETIMED, ratio=r, runtime_ns=1000.0 * r,
                                 default_ns=1000.0))
        return out


def fake_scorer(evaluator: FakeEvaluator, noise: float = 0.0, seed: int = 1):
    """A cost model that knows the fake runtime model up to Gaussian noise on the log ratio."""
    rng = np.random.default_rng(seed)

    def score(configs):
        return np.array([np.log(evaluator.ratio(c)) + noise * rng.normal() for c in configs])

    return score
