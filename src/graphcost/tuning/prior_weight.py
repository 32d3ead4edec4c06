"""How much of a round the learned prior earns: its weight from how its picks fare on this program.

A cost model trained on other programs is a guess about this one. Prior-guided Bayesian optimisation lets
such a guess speed a search up where it is right and cost little where it is wrong: piBO (Hvarfner et al.,
"piBO: Augmenting Acquisition Functions with User Beliefs for Bayesian Optimization", ICLR 2022,
https://arxiv.org/abs/2204.11051) multiplies the acquisition by the prior raised to beta / n, so its pull
fades as measurements accumulate, whatever the prior says. Here the pull is not decayed on a schedule but
earned: after every round, the evidence z (below) that the model's proposals beat its model-free partner's
on this program sets the share of the next round the model proposes,

    w = w_max * Phi(z + Phi^-1(w_start / w_max)).

Before any evidence (z None or 0) the model proposes `w_start` of a round; the weight rises towards `w_max`
as the evidence for the model becomes certain and falls towards 0 as the evidence against it does. The rest
of every round is model-free (TPE, which also learns from the model's measurements), so a prior that points
the wrong way cannot confine the search, and the model keeps no more than `w_max` of a round even when it
has earned it.

The evidence (`EVIDENCE`; `PRIOR_EVIDENCE` is the default):

* ``top``: are the model's own proposals among the fastest measured? Of the m configurations proposed so far
  (K of them by the model), the k = ceil(m / 4) fastest hold X of the model's. Were the model's proposals no
  better than its partner's, X would be hypergeometric (k draws from m, K marked), so

      z = (X - k K / m) / sqrt(k (K / m) (1 - K / m) (m - k) / (m - 1))

  (ties at the k-th time shared fractionally). It credits the model (with its online learner) for finding
  fast configurations, which is what a search keeps.
* ``tau``: Kendall's tau between the prior's scores and the measured ratios of every configuration measured
  (the default included, at ratio 1), in standard errors under no association (Kendall 1938):
  z = tau / se_0(n), se_0(n)^2 = 2 (2n + 5) / (9 n (n - 1)). It rewards a prior for ranking the slow bulk of
  a space (it knows that optimisation level 0 is slow) even when it misses the few large wins.
* ``both``: z = (z_tau + z_top) / sqrt(2).

``top`` is the default: on the development tables it matched ``tau`` with the real prior and did better with
a negated or random one (BENCHMARKS.md, "graphcost tune with no options").
"""

from __future__ import annotations

import math

from graphcost.guards.bounds import ArgumentError

PRIOR_WEIGHT_START = 0.5  # the model's share of a round before any measurement
PRIOR_WEIGHT_MAX = 0.75  # the most it can earn: a quarter of every round stays model-free
MIN_MEASURED = 3  # configurations (the default included) before the agreement counts
EVIDENCE = ("tau", "top", "both")  # what the weight is earned on (module docstring)
PRIOR_EVIDENCE = "top"


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


def top_share_z(model_ratios: list[float], partner_ratios: list[float]) -> float | None:
    """The evidence that the model's proposals are among the fastest measured (module docstring, ``top``):
    the count of the model's configurations among the ceil(m / 4) smallest time ratios, standardised by its
    hypergeometric mean and deviation; None unless both sides have a measured proposal."""
    K, m = len(model_ratios), len(model_ratios) + len(partner_ratios)
    if K == 0 or K == m:
        return None
    k = math.ceil(m / 4)
    ratios = sorted(model_ratios + partner_ratios)
    cut = ratios[k - 1]
    below_all = sum(r < cut for r in ratios)
    at_all = sum(r == cut for r in ratios)
    below = sum(r < cut for r in model_ratios)
    at = sum(r == cut for r in model_ratios)
    x = below + (k - below_all) * at / at_all  # ties at the k-th time share its remaining places
    p = K / m
    var = k * p * (1.0 - p) * (m - k) / (m - 1)
    return (x - k * p) / math.sqrt(var) if var > 0 else None


def evidence_z(tau: float | None, n: int, model_ratios: list[float], partner_ratios: list[float],
               evidence: str = "top") -> float | None:
    """z of `EVIDENCE` `evidence`: Kendall's `tau` over `n` configurations in its null standard errors, the
    top share of the model's proposals (`top_share_z`), or their mean times sqrt(2); None without evidence."""
    z_tau = tau / null_se(n) if tau is not None and math.isfinite(tau) and n >= MIN_MEASURED else None
    if evidence == "tau":
        return z_tau
    z_top = top_share_z(model_ratios, partner_ratios)
    if evidence == "top":
        return z_top
    if evidence != "both":
        raise ArgumentError(f"the prior's evidence must be one of {', '.join(EVIDENCE)}, got {evidence!r}")
    if z_tau is None or z_top is None:
        return z_top if z_tau is None else z_tau
    return (z_tau + z_top) / math.sqrt(2.0)


def weight_from_z(z: float | None, start: float = PRIOR_WEIGHT_START, most: float = PRIOR_WEIGHT_MAX) -> float:
    """w = most * Phi(z + Phi^-1(start / most)); `start` when there is no evidence (z None)."""
    if z is None:
        return start
    if start >= most:
        return most
    from scipy.special import ndtr, ndtri  # the standard normal distribution function and its inverse

    return float(most * ndtr(z + ndtri(start / most)))
