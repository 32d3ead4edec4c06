"""How much of a round the learned prior earns: its weight from its agreement with this program's measurements.

A cost model trained on other programs is a guess about this one. Prior-guided Bayesian optimisation lets
such a guess speed a search up where it is right and cost little where it is wrong: piBO (Hvarfner et al.,
"piBO: Augmenting Acquisition Functions with User Beliefs for Bayesian Optimization", ICLR 2022,
https://arxiv.org/abs/2204.11051) multiplies the acquisition by the prior raised to beta / n, so its pull
fades as measurements accumulate, whatever the prior says. Here the pull is not decayed on a schedule but
earned: after every round, the prior's scores of the configurations measured so far (the default included,
at ratio 1) are compared with their measured ratios by Kendall's tau, and the share of the next round the
model proposes is

    w = w_max * Phi(z + Phi^-1(w_start / w_max)),    z = tau / se_0(n),    se_0(n)^2 = 2 (2n + 5) / (9 n (n - 1)),

where se_0 is tau's standard deviation over n configurations under no association (Kendall 1938), so z is
the evidence that the prior ranks this program's configurations the right way round, in standard errors.
Before any evidence (fewer than `MIN_MEASURED` configurations, or z = 0) the model proposes `w_start` of a
round; the weight rises towards `w_max` as the agreement becomes certain and falls towards 0 as the
disagreement does. The rest of every round is model-free (TPE, which also learns from the model's
measurements), so a prior that points the wrong way cannot confine the search, and the model keeps no more
than `w_max` of a round even when it has earned it: a prior can rank the bulk of a space well (it knows
that optimisation level 0 is slow) and still miss the few large wins.
"""

from __future__ import annotations

import math

from graphcost.bounds import ArgumentError

PRIOR_WEIGHT_START = 0.5  # the model's share of a round before any measurement
PRIOR_WEIGHT_MAX = 0.75  # the most it can earn: a quarter of every round stays model-free
MIN_MEASURED = 3  # configurations (the default included) before the agreement counts


def check_weights(start: float | None, most: float | None) -> tuple[float, float]:
    """(start, most) with None meaning the defaults; ArgumentError unless 0 < start <= most <= 1."""
    s = PRIOR_WEIGHT_START if start is None else float(start)
    m = PRIOR_WEIGHT_MAX if most is None else float(most)
    if not (0.0 < s <= m <= 1.0):
        raise ArgumentError(f"the prior's weights must satisfy 0 < start <= most <= 1, got start {start}, most {most}")
    return s, m


def null_se(n: int) -> float:
    """Kendall's tau's standard deviation over `n` pairs of independent rankings (no ties)."""
    return math.sqrt(2.0 * (2 * n + 5) / (9.0 * n * (n - 1)))


def earned_weight(tau: float | None, n: int, start: float = PRIOR_WEIGHT_START,
                  most: float = PRIOR_WEIGHT_MAX) -> float:
    """The model's share of the next round (module docstring) given Kendall's `tau` between the prior and
    the measurements of `n` configurations; `start` when tau is None or n < `MIN_MEASURED`."""
    if tau is None or not math.isfinite(tau) or n < MIN_MEASURED:
        return start
    if start >= most:
        return most
    from scipy.special import ndtr, ndtri  # the standard normal distribution function and its inverse

    z = tau / null_se(n)
    return float(most * ndtr(z + ndtri(start / most)))
