"""The ``effects`` online learner of ``model+online``: what each option does to this program, with
its uncertainty, learned from the program's own measurements.

Why not trees alone: trees fitted on a handful of measurements blame whichever feature splits
the slow trials first. On an MLP-Mixer-style program, O1 trials ran 2.6-3.8x slower and the
trees blamed the flag that came with them (YNN fusion off, which alone was the best change,
1.33x), so the search never went back to it (seen when replaying measured tables of the widened
flag space). This learner is built to tell effects apart:

* **Main effects and interactions, Bayesian.** For a configuration c (one code per dimension,
  0 = default), with s(c) the graph model's standardised score (lower = predicted faster):

  ```text
  log t(c) / t(default) = beta s(c) + sum_{d: c_d != 0} w[d, c_d]
                          + sum_{((d,k), (e,l)) in P} v[dk, el] [c_d = k] [c_e = l] + eps
  w ~ N(0, tau^2),  v ~ N(0, tau_I^2),  beta ~ N(beta_0, tau_beta^2),  eps ~ N(0, sigma^2)
  ```

  The default configuration is an observation with log ratio 0 (every batch is timed against
  it). The interaction pairs P are all pairs of non-default choices of two different dimensions
  (``all_pairs``, while there are at most ``max_pairs``; else, as in layout spaces with hundreds
  of choices, only those measured together at least twice): a pair never measured
  together keeps its prior uncertainty, so Thompson sampling still tries combinations whose
  parts looked bad alone (on one U-Net, two options that each slowed it alone sped it up by far
  together; the guide's "Tuning your program" page). The
  posterior is Gaussian (conjugate): with feature matrix Phi (N, F), targets y, prior mean mu_0
  and diagonal prior covariance Lambda,

  ```text
  A = Phi^T Phi / sigma^2 + Lambda^-1,   Sigma = A^-1,   m = Sigma (Phi^T y / sigma^2 + Lambda^-1 mu_0)
  ```

  An option that was only ever measured together with a slow one keeps a wide posterior instead
  of taking the blame: only the sum of the two is pinned down.
* **Thompson sampling** as the acquisition: the first configuration of a round is the best under
  the posterior mean (exploitation), each other one the best under its own draw of the weights
  from the posterior, so uncertain effects get measured (exploration) in proportion to the
  chance that they are the best, and a batch spreads over hypotheses. (Draws alone explored too
  far with a good zero-shot model: many uncertain options make a wide, optimistic spread.)
* **A first round of probes and top picks** (`single_option_probes`; `strategies.FIRST_ROUND_PROBES`):
  half of the first round measures one non-default choice of each of the most promising dimensions
  (by the graph model), so main effects start to be identified before they are combined; the other
  half measures the graph model's best configurations, so a good zero-shot model pays off at once.
  Chosen on development programs apart from the evaluation suite (the guide's "Tuning your program" page, "The first round").

Hyperparameters (log-ratio units): σ = 0.05 (timing noise of one interleaved measurement),
τ = 0.3 (one option rarely moves runtime by more than ±35%), τ_I = 0.15, β₀ = 0.05, τ_β = 0.1
(one standard deviation of the zero-shot score is worth about 5% of runtime, uncertain).
"""

from __future__ import annotations

import numpy as np

from graphcost.tuning.space import Codes, Space


class EffectsModel:
    """Bayesian main effects + interactions of the options on log runtime ratio (module docstring).

    Args:
        space: the space whose configurations it models.
        sigma: noise standard deviation of a measured log ratio.
        tau: prior standard deviation of a main effect.
        tau_interaction: prior standard deviation of an interaction.
        all_pairs: interactions of every pair of choices of two dimensions (else only of pairs
            measured together at least twice).
        max_pairs: above this many possible pairs (a layout space: hundreds of choices), only the
            pairs measured together at least twice (the posterior is a dense F x F matrix).
        beta0: prior mean of the weight of the graph model's score.
        tau_beta: prior standard deviation of that weight.

    Example:
        ```python
        model = EffectsModel(space)
        model.fit(codes, prior_scores, ratios)       # measured configurations
        draws = model.sample(pool, pool_prior, rng, n=4)   # (4, len(pool)) Thompson draws
        ```
    """

    MIN_TRAIN = 0  # the prior alone is a posterior: it fits from the first measurement (the default is one)

    def __init__(self, space: Space, sigma: float = 0.05, tau: float = 0.3, tau_interaction: float = 0.15,
                 beta0: float = 0.05, tau_beta: float = 0.1, all_pairs: bool = True, max_pairs: int = 2000):
        self.space, self.all_pairs, self.max_pairs = space, all_pairs, max_pairs
        self.sigma, self.tau, self.tau_i, self.beta0, self.tau_beta = sigma, tau, tau_interaction, beta0, tau_beta
        # one column per (dimension, non-default choice)
        self.main = [(d, k) for d, dim in enumerate(space.dims) for k in range(1, len(dim.choices))]
        self.main_index = {dk: i for i, dk in enumerate(self.main)}
        self.pairs: list[tuple[tuple[int, int], tuple[int, int]]] = []
        self.mean: np.ndarray | None = None  # (F,) posterior mean, once fitted
        self.cov: np.ndarray | None = None  # (F, F) posterior covariance

    def _active(self, codes: Codes) -> list[int]:
        return [self.main_index[(d, int(c))] for d, c in enumerate(codes) if c]

    def features(self, codes: list[Codes], prior: np.ndarray) -> np.ndarray:
        """(K, 1 + M + P) features: the prior score, one-hot main effects, interaction products."""
        codes_arr = np.asarray(codes, np.int64).reshape(len(codes), len(self.space.dims))  # (K, D)
        out = np.zeros((len(codes), 1 + len(self.main) + len(self.pairs)))
        out[:, 0] = prior
        for i, (d, k) in enumerate(self.main):
            out[:, 1 + i] = codes_arr[:, d] == k
        for j, ((d, k), (e, l)) in enumerate(self.pairs):
            out[:, 1 + len(self.main) + j] = (codes_arr[:, d] == k) & (codes_arr[:, e] == l)
        return out

    def fit(self, codes: list[Codes], prior: np.ndarray, ratio: np.ndarray) -> bool:
        """The posterior given measured `codes` (with graph-model scores `prior`) and their runtime
        ratios to the default; the default itself is added as log ratio 0. Always True."""
        default = self.space.default()
        codes = [tuple(c) for c in codes]
        prior = np.asarray(prior, np.float64)
        y = np.log(np.asarray(ratio, np.float64))
        if default not in codes:  # its score: the prior score the graph model gives the default is unknown here;
            codes, prior, y = codes + [default], np.append(prior, 0.0), np.append(y, 0.0)  # 0 = the mean score
        every = len(self.main) * (len(self.main) - 1) // 2  # an upper bound of the number of pairs
        if self.all_pairs and every <= self.max_pairs:  # every pair of choices of two dimensions, measured or not
            self.pairs = [(a, b) for i, a in enumerate(self.main) for b in self.main[i + 1:] if a[0] != b[0]]
        else:
            counts: dict = {}
            for c in codes:
                act = [(d, int(v)) for d, v in enumerate(c) if v]
                for a in range(len(act)):
                    for b in range(a + 1, len(act)):
                        counts[(act[a], act[b])] = counts.get((act[a], act[b]), 0) + 1
            self.pairs = sorted(p for p, n in counts.items() if n >= 2)
        phi = self.features(codes, prior)  # (N, F)
        mu0 = np.zeros(phi.shape[1])
        mu0[0] = self.beta0
        var0 = np.concatenate([[self.tau_beta ** 2], np.full(len(self.main), self.tau ** 2),
                               np.full(len(self.pairs), self.tau_i ** 2)])
        a = phi.T @ phi / self.sigma ** 2 + np.diag(1.0 / var0)
        cov = np.linalg.inv(a)
        self.cov = (cov + cov.T) / 2  # symmetric to rounding, for the draws
        self.mean = self.cov @ (phi.T @ y / self.sigma ** 2 + mu0 / var0)
        return True

    def predict(self, codes: list[Codes], prior: np.ndarray) -> np.ndarray:
        """(K,) posterior mean log ratios (the prior's β₀ s when nothing is fitted)."""
        if self.mean is None:
            return self.beta0 * np.asarray(prior, np.float64)
        return self.features(codes, prior) @ self.mean

    def sample(self, codes: list[Codes], prior: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, K) log ratios of `codes` under `n` draws of the weights from the posterior."""
        if self.mean is None:
            raise ValueError("EffectsModel.sample before fit")
        return self.draw_weights(rng, n) @ self.features(codes, prior).T

    def best_combination(self, draw: np.ndarray) -> Codes:
        """The configuration whose main effects are all best under weights `draw` (one per dimension,
        the default where no choice has a negative effect): separable, so it is found exactly."""
        out = [0] * len(self.space.dims)
        best = [0.0] * len(self.space.dims)
        for i, (d, k) in enumerate(self.main):
            w = draw[1 + i]
            if w < best[d]:
                best[d], out[d] = w, k
        return tuple(out)

    def draw_weights(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, F) weight draws from the posterior (the same for the same `rng` state)."""
        if self.mean is None or self.cov is None:
            raise ValueError("EffectsModel.draw_weights before fit")
        return rng.multivariate_normal(self.mean, self.cov, size=n, method="cholesky")


def single_option_probes(space: Space, pool: list[Codes], prior: np.ndarray, n: int, exclude: set) -> list[Codes]:
    """Up to `n` configurations that move exactly one dimension off its default: for each
    dimension its best such configuration by the graph model, the dimensions in the order of those
    scores (lower = predicted faster), taken from `pool` (scored) where present."""
    best: dict[int, tuple[float, Codes]] = {}
    for c, s in zip(pool, prior):
        moved = [d for d, v in enumerate(c) if v]
        if len(moved) == 1 and c not in exclude and (moved[0] not in best or s < best[moved[0]][0]):
            best[moved[0]] = (float(s), c)
    ranked = sorted(best.values(), key=lambda t: t[0])
    return [c for _, c in ranked[:n]]


def single_option_configs(space: Space) -> list[Codes]:
    """Every configuration with exactly one dimension off its default."""
    out = []
    for d, dim in enumerate(space.dims):
        for k in range(1, len(dim.choices)):
            c = [0] * len(space.dims)
            c[d] = k
            out.append(tuple(c))
    return out
