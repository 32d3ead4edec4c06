"""Search strategies of `graphcost tune`. Every strategy gets the same hardware budget.

* ``random``: uniformly new configurations (`Space.sample`; the whole space in random order
  when it is small).
* ``tpe``: Optuna's TPE sampler (one categorical per dimension, constant liar for batches), the
  strong model-free baseline.
* ``model``: the cost model scores a large pool of candidates — the whole space when it is
  small, else thousands grown by an evolutionary search (random + near-default seeds, then
  generations of mutation and crossover of the predicted-best) — and the top few, kept diverse
  (pairwise Hamming distance >= 2 where possible), are measured; repeat with the next best.
  This is the autotuner use of a learned cost model (Kaufman et al. §6; TpuGraphs §1). When the
  model reads what the compiler did (the shipped layout model's copied-bytes prior, TGraph's term
  for the statistics), the `INFORMED_TOP` best of the pool are compiled (nothing run) and re-ordered
  among themselves by the model given their statistics (`ModelSearch.inform`), which ranks them
  better than the model without them (the guide's "Tuning your program" page has the measurement).
* ``model+online``: as ``model``, but between rounds a per-program tree model
  (`graphcost.tuning.learners`) is fitted on this program's own measurements with the graph model's
  score as a prior feature, and re-ranks the pool; the pool also grows with mutations of the
  best measured configurations (TVM-style online tuning). The per-program model (``learner``;
  ``auto``, the default, is ``effects`` in the flag space and ``tree`` in the others):
  ``effects`` (`learners.effects.EffectsModel`): Bayesian main effects and interactions of the
  options with the graph model's score as a prior feature; the first round measures
  single-option probes and the graph model's top picks, later rounds pick by Thompson sampling,
  and the pool also grows with the best combination of main effects under each draw. ``tree``:
  LightGBM on the codes with the graph model's score as a feature (`learners.tree.TreeModel`).
  ``finetune``: the graph model itself fine-tuned on the measurements (`learners.finetune.FineTunedModel`).
  Both model strategies can interleave uniform random draws with their picks (`EXPLORE_SHARE`,
  `EXPLORE_WHEN`; off by default, as chosen on development programs).

* ``hedged`` (the default with a model): each round, ``model+online`` proposes a share of the configurations
  and TPE the rest; the model's share is earned from how often its own proposals have been among this
  program's fastest so far (`graphcost.tuning.prior_weight`), so a prior that points the wrong way costs little
  against TPE (`HedgedSearch`).

A strategy proposes; the tuner measures and records. Every strategy is a `Strategy`:
`ask(study, history, n, busy, round)` reserves up to `n` new configurations in the study and returns
them, and `sampler(budget)` is the Optuna sampler its study asks with (TPE's; None for the others).
* ``kernels``: compiles a pool of candidates, costs each as the sum of its kernels with the shipped
  kernel model, corrected kernel by kernel on this program's profiled trials
  (`graphcost.tuning.kernel_search`; under evaluation: not the default).

`random` and `model` are `ProposingStrategy`s: `propose(history, n)` returns `n` distinct configurations
not in `history` (fewer only when the space is exhausted), reserved as proposed; `tpe` asks Optuna.
`make_strategy(name, ...)` builds one by its registered name (`strategy_names`); `register_strategy`
adds one.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
    [Kaufman et al.] S. J. Kaufman et al. A Learned Performance Model for Tensor Processing Units. MLSys 2021.
        https://arxiv.org/abs/2008.01040
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, cast

import numpy as np

from graphcost.tuning.prior_weight import EVIDENCE, PRIOR_EVIDENCE, check_weights, evidence_z, weight_from_z
from graphcost.tuning.trial import MEASURED, OK, Trial
from graphcost.tuning.space import Codes, Space

if TYPE_CHECKING:
    from graphcost.tuning.scoring import GraphModelScorer
    from graphcost.tuning.study import Study

# model+online's per-program learner: Bayesian option effects with probes and Thompson sampling
# (`learners.effects.EffectsModel`), trees with the graph model's score as a feature, or fine-tuning. "auto" (the
# default) is effects in the flag space and trees in the layout and joint spaces, the winners of the
# replay benchmark in each (the guide's "Tuning your program" page, "Which online learner")
ONLINE_LEARNERS = ("auto", "effects", "tree", "finetune")
# The share of the effects learner's first round spent on single-option probes; the rest are the graph
# model's top picks (kept diverse). Chosen on development programs apart from the evaluation suite
# (the guide's "Tuning your program" page, "The first round").
FIRST_ROUND_PROBES = 0.5
# Random interleaving (a hedge where the prior is weak): the share of every round of the
# model strategies drawn uniformly at random from the unmeasured space, as SMAC interleaves random
# configurations with its model's picks (Hutter et al. 2011, §4.3), so a prior that points the wrong way
# cannot confine the whole search. `EXPLORE_WHEN` says when: "always" (every round), "weak" (only once the
# measurements so far disagree with the prior: Kendall tau <= 0 between the graph model's scores and the
# measured ratios, the default included), or "never". Chosen on development programs apart from the
# evaluation suite (the guide's "Tuning your program" page, "When the prior is weak").
EXPLORE_SHARE = 0.0
EXPLORE_WHEN = "never"
EXPLORE_MODES = ("never", "always", "weak")


def check_explore(share: float | None, when: str | None) -> tuple[float, str]:
    """(share, when) of the model strategies' random interleaving, None meaning `EXPLORE_SHARE` /
    `EXPLORE_WHEN`; ValueError unless the share is in [0, 1] and `when` one of `EXPLORE_MODES`."""
    value = EXPLORE_SHARE if share is None else float(share)
    mode = EXPLORE_WHEN if when is None else when
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"explore (the share of a round drawn at random) must be in [0, 1], got {share}")
    if mode not in EXPLORE_MODES:
        raise ValueError(f"explore_when must be one of {', '.join(EXPLORE_MODES)}, got {when!r}")
    return value, mode
# How many of the model's best candidates are compiled and scored again with what the compiler did to them
# (`ModelSearch.inform`; only where the model reads the statistics). A compile is a small share of a
# measurement; 32 bounds the up-front cost on programs that compile slowly.
INFORMED_TOP = 32


def resolve_learner(learner: str, space: Space) -> str:
    """The online learner `learner` means in `space` ("auto": effects for flags, else tree)."""
    if learner not in ONLINE_LEARNERS:
        raise ValueError(f"unknown online learner {learner!r}; expected one of {', '.join(ONLINE_LEARNERS)}")
    if learner == "auto":
        return "effects" if space.name == "flags" else "tree"
    return learner
EXHAUSTIVE_LIMIT = 4096  # spaces up to this size are enumerated instead of searched


class Strategy(ABC):
    """A search strategy of `graphcost tune` over `space` (module docstring)."""

    name: str = "strategy"  # its registered name (`strategy_names`)

    def __init__(self, space: Space, seed: int = 0):
        self.space, self.seed = space, seed
        self.rng = np.random.default_rng(seed)

    def sampler(self, budget: int) -> Any:
        """The Optuna sampler this strategy's study asks with; None: the study only records."""
        return None

    @abstractmethod
    def ask(self, study: Study, history: list[Trial], n: int, busy: frozenset, rnd: int) -> tuple[list, list[Codes]]:
        """(handles, configurations): up to `n` new configurations reserved in `study` (a
        `graphcost.tuning.study.Study`), none in `history` nor in `busy` (being measured by another
        worker); `rnd` is the round's number. Empty: the space is exhausted."""


class ProposingStrategy(Strategy):
    """A strategy that chooses configurations itself; the study records what it proposes."""

    @abstractmethod
    def propose(self, history: list[Trial], n: int, busy: frozenset = frozenset()) -> list[Codes]:
        """Up to `n` new configurations, none in `history` nor in `busy` (being measured by another worker)."""

    def ask(self, study: Study, history: list[Trial], n: int, busy: frozenset, rnd: int) -> tuple[list, list[Codes]]:
        batch = self.propose(history, n, busy)
        return (study.reserve(batch) if batch else []), batch


class RandomSearch(ProposingStrategy):
    name = "random"

    def __init__(self, space: Space, seed: int = 0):
        super().__init__(space, seed)
        self.order = None
        if space.size() <= EXHAUSTIVE_LIMIT:
            every = space.enumerate()[1:]  # the default is measured with every batch anyway
            self.order = [every[i] for i in self.rng.permutation(len(every))]

    def propose(self, history: list[Trial], n: int, busy: frozenset = frozenset()) -> list[Codes]:
        seen = {t.codes for t in history} | {self.space.default()} | set(busy)
        if self.order is not None:
            return [c for c in self.order if c not in seen][:n]
        out: list[Codes] = []
        for _ in range(1000 * max(n, 1)):
            if len(out) == n:
                break
            c = self.space.sample(self.rng)
            if c not in seen:
                seen.add(c)
                out.append(c)
        return out


class TPESearch(Strategy):
    """Optuna's TPE (``tpe``): random start-up trials for a quarter of the budget (4 to 10), constant
    liar for batched proposals; its proposals come through the study (`ask_new`)."""

    name = "tpe"

    def sampler(self, budget: int) -> Any:
        import optuna

        startup = int(min(10, max(4, budget // 4)))
        return optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=startup, constant_liar=True)

    def ask(self, study: Study, history: list[Trial], n: int, busy: frozenset, rnd: int) -> tuple[list, list[Codes]]:
        return ask_new(study, n, history, self.space, self.seed + rnd, busy)


def ask_new(study: Study, n: int, history: list[Trial], space: Space, seed: int,
            busy: frozenset = frozenset()) -> tuple[list, list[Codes]]:
    """Up to `n` new configurations from the study's sampler. A proposal of a known configuration
    (the default, a measured or failed one, or one already in this batch) is told its known
    result without measuring; one being measured by another worker (`busy`) is closed as a
    duplicate without a value; after 20 such repeats per wanted configuration the rest of the
    batch is drawn at random among the unseen and enqueued, so the budget is always spent."""
    known: dict[Codes, float | None] = {t.codes: t.ratio for t in history}
    known.update({c: None for c in busy if c not in known})
    known[space.default()] = 1.0
    handles: list = []
    batch: list[Codes] = []
    repeats = 0
    while len(batch) < n:
        if repeats > 20 * n:
            unseen = RandomSearch(space, seed).propose([Trial(c, OK) for c in [*known, *batch]], n - len(batch))
            if not unseen:
                break  # the space is exhausted
            for c in unseen:  # asked next, in this order
                study.study.enqueue_trial(study.params(c))
            repeats = 0
        handle, proposed = study.ask()
        codes = space.snap(proposed, set(known) | set(batch))
        if codes is not None and codes != proposed:  # the sampler learns its proposal; the study keeps what is measured
            study.measures(handle, codes)
        if codes is None:  # nothing left to measure
            study.tell_known(handle, None)
            break
        if codes in known or codes in batch:
            study.tell_known(handle, known.get(codes, 1.0))
            repeats += 1
            continue
        handles.append(handle)
        batch.append(codes)
    return handles, batch


@dataclass(frozen=True)
class StrategyEntry:
    """A registered strategy: its factory, called as ``factory(space, seed, scorer=..., evaluator=...,
    **model_options)`` (the one keyword set every factory gets; it takes what it needs), and what it needs.

    graph_model: guided by the graph cost model: the tuner gives it a scorer (the shipped models when none
    is given) and `ModelSearch`'s options. model_label: what result.json records as the model of a run of
    it without a graph model (``kernels``: the shipped kernel model)."""

    factory: Callable[..., Strategy]
    graph_model: bool = False
    model_label: str | None = None


_REGISTRY: dict[str, StrategyEntry] = {}


def register_strategy(name: str, factory: Callable[..., Strategy], *, graph_model: bool = False,
                      model_label: str | None = None) -> None:
    """Make `name` a strategy `make_strategy`, `graphcost.tune` and ``graphcost tune --strategy`` accept
    (`StrategyEntry`); a name registered before is replaced."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a strategy's name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise ValueError(f"strategy {name!r}: the factory must be callable, got {factory!r}")
    _REGISTRY[name] = StrategyEntry(factory, graph_model, model_label)


def strategy_names() -> tuple[str, ...]:
    """The registered strategies' names, in the order they were registered (the built-in ones first)."""
    return tuple(_REGISTRY)


def strategy_entry(name: str) -> StrategyEntry:
    """The registered strategy `name`; ValueError naming the known ones."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown strategy {name!r}; expected one of {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def make_strategy(name: str, space: Space, seed: int = 0, scorer: GraphModelScorer | None = None, *,
                  evaluator: Any = None, **model_options: Any) -> Strategy:
    """The registered strategy `name` (`strategy_names`) over `space`, from its factory given the one keyword
    set: the ``model`` ones score with `scorer` and take `model_options` (`ModelSearch`: pool_kwargs, learner,
    probes, compiled); ``kernels`` compiles its candidates with the tuner's `evaluator`
    (`graphcost.tuning.kernel_search`, registered when it is imported, as the tuner does)."""
    return strategy_entry(name).factory(space, seed, scorer=scorer, evaluator=evaluator, **model_options)


def _needs_scorer(name: str, scorer: GraphModelScorer | None) -> GraphModelScorer:
    if scorer is None:
        raise ValueError(f"strategy {name!r} needs a cost model")
    return scorer


def _model_search(name: str, online: bool) -> Callable[..., Strategy]:
    def factory(space: Space, seed: int, *, scorer: GraphModelScorer | None = None, evaluator: Any = None,
                **options: Any) -> Strategy:
        return ModelSearch(space, _needs_scorer(name, scorer), seed, online=online, **options)

    return factory


def _register_builtin() -> None:
    """The strategies of this module (``kernels`` registers itself: `graphcost.tuning.kernel_search`)."""
    register_strategy("hedged", lambda space, seed, *, scorer=None, evaluator=None, **options: HedgedSearch(
        space, _needs_scorer("hedged", scorer), seed, **options), graph_model=True)
    register_strategy("model+online", _model_search("model+online", online=True), graph_model=True)
    register_strategy("model", _model_search("model", online=False), graph_model=True)
    register_strategy("tpe", lambda space, seed, **_: TPESearch(space, seed))
    register_strategy("random", lambda space, seed, **_: RandomSearch(space, seed))


def diverse_top(order: np.ndarray, pool: list[Codes], n: int, exclude: set, min_distance: int = 2) -> list[Codes]:
    """The first `n` of `pool` in `order` not in `exclude`, greedily keeping pairwise Hamming
    distance >= `min_distance` (relaxed to plain distinctness when that leaves too few)."""
    chosen: list[Codes] = []
    for dist in (min_distance, 1):
        for i in order:
            c = pool[i]
            if len(chosen) == n:
                return chosen
            if c in exclude or c in chosen:
                continue
            if all(sum(a != b for a, b in zip(c, o)) >= dist for o in chosen):
                chosen.append(c)
    return chosen


def evolve_pool(space: Space, score: Callable[[list[Codes]], np.ndarray], rng: np.random.Generator, initial: int = 2048, generations: int = 3,
                elite: int = 64, children: int = 1024) -> tuple[list[Codes], np.ndarray]:
    """Candidates and their scores (lower = predicted faster): the whole space when small, else an
    evolutionary search: `initial` seeds (half random, half mutations of the default), then
    `generations` rounds of `children` mutations / crossovers of the `elite` best so far."""
    if space.size() <= EXHAUSTIVE_LIMIT:
        pool = space.enumerate()
        return pool, score(pool)
    seen: set = set()

    def fresh(cands: list[Codes]) -> list[Codes]:
        out = [c for c in cands if c not in seen]
        out = list(dict.fromkeys(out))
        seen.update(out)
        return out

    pool = fresh([space.default()] + [space.sample(rng) if i % 2 else space.mutate(space.default(), rng)
                                      for i in range(initial)])
    scores = score(pool)
    for _ in range(generations):
        best = [pool[i] for i in np.argsort(scores, kind="stable")[:elite]]
        kids = []
        for _ in range(children):
            a = best[rng.integers(len(best))]
            if rng.uniform() < 0.3:
                a = space.crossover(a, best[rng.integers(len(best))], rng)
            kids.append(space.mutate(a, rng))
        kids = fresh(kids)
        if kids:
            pool += kids
            scores = np.concatenate([scores, score(kids)])
    return pool, scores


class ModelSearch(ProposingStrategy):
    """``model`` (online=False) and ``model+online`` (module docstring)."""

    def __init__(self, space: Space, scorer: GraphModelScorer, seed: int = 0, online: bool = False,
                 pool_kwargs: dict | None = None, learner: str = "auto", probes: float | None = None,
                 compiled: Callable[[list[Codes]], np.ndarray] | None = None, informed: int = INFORMED_TOP,
                 explore: float | None = None, explore_when: str | None = None):
        """compiled: configurations -> (K, 7) what the compiler did to them (NaN rows: failed), e.g.
        `Evaluator.compiled_stats`; with a scorer that reads them, the `informed` best of the pool are
        re-ordered by them (`inform`). None: scores from the configurations alone. explore, explore_when:
        the share of a round drawn at random, and when (`EXPLORE_SHARE`, `EXPLORE_WHEN`)."""
        super().__init__(space, seed)
        self.probes = FIRST_ROUND_PROBES if probes is None else float(probes)
        if not 0.0 <= self.probes <= 1.0:
            raise ValueError(f"probes (the first round's share of single-option probes) must be in [0, 1], "
                             f"got {probes}")
        self.explore, self.explore_when = check_explore(explore, explore_when)
        # the interleaved random draws (None: no interleaving)
        self.random = RandomSearch(space, seed + 1) if self.explore > 0.0 and self.explore_when != "never" else None
        self.prior_agreement: float | None = None  # Kendall tau of the prior against the measurements so far
        from graphcost.tuning.learners import OnlineLearner, make_learner
        from graphcost.tuning.learners.effects import single_option_configs

        learner = resolve_learner(learner, space)
        self.name = "model+online" if online else "model"
        self.scorer, self.online, self.learner_name = scorer, online, learner
        self.pool, self.prior = evolve_pool(space, scorer, self.rng, **(pool_kwargs or {}))
        self.index = {c: i for i, c in enumerate(self.pool)}
        self.informed = 0  # how many candidates were scored with their compiled statistics
        if compiled is not None and getattr(scorer, "reads_compiled", False):
            self.inform(compiled, informed)
        self.learner: OnlineLearner | None = make_learner(learner, space, scorer, seed) if online else None
        if online and learner == "effects":
            # the probes and the anchor (inside a replay's pool: those it measured)
            self._extend([space.default(), *[c for c in single_option_configs(space) if space.snap(c, set()) == c]])

    def inform(self, compiled: Callable[[list[Codes]], np.ndarray], top: int) -> None:
        """Compile the `top` best candidates of the pool, score them again with what the compiler did
        to them, and re-order them among themselves: they keep their slots' prior values (so the rest
        of the pool and the learners' prior feature keep their scale), sorted by the informed scores;
        a candidate that failed to compile goes to the last of those slots."""
        top_idx = np.argsort(self.prior, kind="stable")[:top]  # (M,)
        stats = np.asarray(compiled([self.pool[i] for i in top_idx]), np.float64)  # (M, 7)
        ok = np.isfinite(stats).all(axis=1)
        if ok.sum() < 2:
            return
        informed = self.scorer([self.pool[i] for i in top_idx[ok]], compiled=stats[ok])
        order = np.concatenate([top_idx[ok][np.argsort(informed, kind="stable")], top_idx[~ok]])
        self.prior[order] = np.sort(self.prior[top_idx])
        self.informed = int(ok.sum())

    def _extend(self, cands: list[Codes]) -> None:
        new = [c for c in dict.fromkeys(cands) if c not in self.index]
        if new:
            scores = self.scorer(new)
            for c in new:
                self.index[c] = len(self.pool)
                self.pool.append(c)
            self.prior = np.concatenate([self.prior, scores])

    def propose(self, history: list[Trial], n: int, busy: frozenset = frozenset()) -> list[Codes]:
        """The model's picks for `n - k` slots and `k` uniformly random draws (`random_slots`); with
        interleaving on, random draws also fill slots the model leaves empty."""
        measured = [t for t in history if t.status in MEASURED]  # copies too: they show what changes nothing
        k = self.random_slots(measured, n)
        picks = self._propose_model(history, measured, n - k, busy) if n > k else []
        if self.random is None or len(picks) == n:
            return picks
        return picks + self.random.propose(history, n - len(picks), frozenset(busy) | frozenset(picks))

    def random_slots(self, measured: list[Trial], n: int) -> int:
        """How many of a round of `n` are drawn at random: `round(explore * n)` always, or (``weak``) only
        once the measurements disagree with the prior (`prior_agreement` <= 0), else none."""
        if self.random is None:  # explore_when "never" or a share of 0
            return 0
        if self.explore_when == "weak":
            self.prior_agreement = self.agreement(measured)
            if self.prior_agreement is None or self.prior_agreement > 0.0:
                return 0
        return min(n, int(np.floor(self.explore * n + 0.5)))

    def agreement(self, measured: list[Trial]) -> float | None:
        """Kendall tau between the graph model's scores and the measured ratios of `measured` and the
        default (ratio 1); None below 3 configurations or when either side is constant."""
        from graphcost.metrics import kendall_tau

        measured = [t for t in measured if t.status == OK]  # one point per executable timed
        if len(measured) < 2:
            return None
        codes = [t.codes for t in measured] + [self.space.default()]
        self._extend(codes)
        tau = kendall_tau(self.prior[[self.index[c] for c in codes]], [cast(float, t.ratio) for t in measured] + [1.0])
        return None if not np.isfinite(tau) else tau

    def _propose_model(self, history: list[Trial], measured: list[Trial], n: int, busy: frozenset) -> list[Codes]:
        exclude = {t.codes for t in history} | {self.space.default()} | set(busy)
        if self.online and self.learner_name == "effects":
            return self._propose_effects(measured, n, exclude)
        predicted = self.prior
        if self.learner is not None and measured:
            top = sorted(measured, key=lambda t: cast(float, t.ratio))[:3]  # measured: each has a ratio
            self._extend([self.space.mutate(t.codes, self.rng) for t in top for _ in range(64)])
            self._extend([t.codes for t in measured])
            codes = [t.codes for t in measured]
            prior = self.prior[[self.index[c] for c in codes]]
            self.learner.fit(codes, prior, np.array([t.ratio for t in measured]))
            predicted = self.learner.predict(self.pool, self.prior)
        order = np.argsort(predicted, kind="stable")
        return diverse_top(order, self.pool, n, exclude)

    def _standard_prior(self) -> np.ndarray:
        """(P,) the graph model's scores of the pool in standard deviations from their mean."""
        return (self.prior - self.prior.mean()) / (self.prior.std() or 1.0)

    def _propose_effects(self, measured: list[Trial], n: int, exclude: set) -> list[Codes]:
        """``effects``: while nothing is measured, single-option probes (a share `probes` of the round,
        rounded up) and the graph model's top picks; then batch Thompson sampling over the pool
        (`online` module docstring)."""
        from graphcost.tuning.learners.effects import single_option_probes

        if not measured:
            probes = single_option_probes(self.space, self.pool, self.prior, int(np.ceil(self.probes * n)), exclude)
            rest = diverse_top(np.argsort(self.prior, kind="stable"), self.pool, n - len(probes), exclude | set(probes))
            return probes + rest
        self._extend([t.codes for t in measured])  # a resumed study's configurations may not be in the pool
        top = sorted(measured, key=lambda t: cast(float, t.ratio))[:3]  # measured: each has a ratio
        self._extend([self.space.mutate(t.codes, self.rng) for t in top for _ in range(64)])
        default = self.space.default()
        codes = [t.codes for t in measured] + [default]
        ratio = np.array([t.ratio for t in measured] + [1.0])
        z = self._standard_prior()
        from graphcost.tuning.learners.effects import EffectsModel

        learner = self.learner  # beyond fit / predict: its posterior, for Thompson sampling
        assert isinstance(learner, EffectsModel)
        learner.fit(codes, z[[self.index[c] for c in codes]], ratio)
        # one hypothesis per configuration: the posterior mean (exploit), then Thompson draws (explore)
        assert learner.mean is not None  # fitted just above
        draws = np.vstack([learner.mean[None], learner.draw_weights(self.rng, n - 1)])  # (n, F)
        self._extend([self.space.snap(learner.best_combination(w), exclude) or default for w in draws])
        feats = learner.features(self.pool, self._standard_prior())  # (P, F); the pool may have grown
        chosen: list[Codes] = []
        for w in draws:
            for i in np.argsort(feats @ w, kind="stable"):
                c = self.pool[i]
                if c not in exclude and c not in chosen:
                    chosen.append(c)
                    break
        return chosen


class HedgedSearch(Strategy):
    """``hedged``, the default: every round split between the cost model (``model+online``) and TPE, the model's
    share earned from how its proposals have fared among this program's measurements so far (`evidence`,
    `graphcost.tuning.prior_weight`). Both halves see every measurement: TPE's study holds the model's trials,
    and the model's online learner fits TPE's. ``origins`` says who proposed each configuration of the last
    round, ``weight`` the model's share of it and ``weights`` every round's (round, share, z, n)."""

    name = "hedged"

    def __init__(self, space: Space, scorer: GraphModelScorer, seed: int = 0, weight_start: float | None = None,
                 weight_max: float | None = None, partner: str = "tpe", evidence: str = PRIOR_EVIDENCE,
                 **model_options: Any):
        super().__init__(space, seed)
        self.start, self.most = check_weights(weight_start, weight_max)
        if partner not in ("tpe", "random"):
            raise ValueError(f"the model-free partner of hedged must be tpe or random, got {partner!r}")
        if evidence not in EVIDENCE:
            raise ValueError(f"hedged's evidence must be one of {', '.join(EVIDENCE)}, got {evidence!r}")
        self.partner, self.evidence = partner, evidence
        self.model = ModelSearch(space, scorer, seed, online=True, **model_options)
        self.tpe = TPESearch(space, seed)
        self.random = RandomSearch(space, seed + 2) if partner == "random" else None
        self.origins: dict[Codes, str] = {}
        self.proposed: dict[Codes, str] = {}  # every round's origins
        self.weight = self.start
        self.weights: list[tuple[int, float, float | None, int]] = []  # (round, share, evidence z, configurations)

    def sampler(self, budget: int) -> Any:
        return self.tpe.sampler(budget) if self.partner == "tpe" else None

    def ask(self, study: Study, history: list[Trial], n: int, busy: frozenset, rnd: int) -> tuple[list, list[Codes]]:
        timed = [t for t in history if t.status == OK]
        tau = self.model.agreement(timed) if self.evidence != "top" else None
        by = {t.codes: t.extra.get("proposed_by", self.proposed.get(t.codes)) for t in timed}  # (a resumed study's
        mine = [cast(float, t.ratio) for t in timed if by[t.codes] == "model"]  # trials say it in extra)
        theirs = [cast(float, t.ratio) for t in timed if by[t.codes] == self.partner]
        z = evidence_z(tau, len(timed) + 1, mine, theirs, self.evidence)
        self.weight = weight_from_z(z, self.start, self.most)
        self.weights.append((rnd, self.weight, z, len(timed) + 1))
        picks = self.model.propose(history, min(n, int(np.floor(self.weight * n + 0.5))), busy)
        handles = study.reserve(picks) if picks else []
        more_handles: list = []
        more: list[Codes] = []
        if n > len(picks) and self.partner == "tpe":
            more_handles, more = ask_new(study, n - len(picks), history, self.space, self.seed + rnd,
                                         frozenset(busy) | frozenset(picks))
        elif n > len(picks) and self.random is not None:
            more = self.random.propose(history, n - len(picks), frozenset(busy) | frozenset(picks))
            more_handles = study.reserve(more) if more else []
        self.origins = {**{c: "model" for c in picks}, **{c: self.partner for c in more}}
        self.proposed.update(self.origins)
        return handles + more_handles, picks + more


_register_builtin()
