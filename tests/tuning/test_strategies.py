"""Strategies: the budget is exact, failures are recorded and skipped, a killed study resumes
without re-measuring anything (fake evaluator: no compilation, no timing)."""

from __future__ import annotations

import numpy as np
import pytest
from tune_fakes import FakeEvaluator, fake_scorer

from graphcost.frontend.programs.flags import FLAG_COLUMNS
from graphcost.tuning.space import FlagSpace
from graphcost.tuning.strategies import diverse_top, strategy_names
from graphcost.tuning.study import Study
from graphcost.tuning.tuner import run_strategy


# the ``kernels`` strategy compiles its candidates with a real evaluator (tests/tuning/test_kernel_search.py)
ON_FAKES = [s for s in strategy_names() if s != "kernels"]


def _run(strategy, ev, budget, storage=None, name="prog:flags", round_size=4, noise=0.3, learner="effects"):
    return run_strategy(strategy, ev.space, ev, budget, storage, name, scorer=fake_scorer(ev, noise), seed=0,
                        round_size=round_size, learner=learner)


@pytest.mark.parametrize("strategy", [*ON_FAKES, "model+online:tree"])
@pytest.mark.parametrize("budget", [1, 7, 12])
def test_budget_is_exact_and_configs_are_new(strategy, budget):
    """In the widened flag space (issue 25), every strategy and online learner measures exactly its budget."""
    strategy, _, learner = strategy.partition(":")
    ev = FakeEvaluator(FlagSpace())
    trials = _run(strategy, ev, budget, learner=learner or "effects")
    assert len(trials) == budget == len(ev.measured)
    assert len(set(ev.measured)) == budget  # nothing measured twice
    assert FlagSpace().default() not in ev.measured  # the default is the reference, never a trial
    assert [t.number for t in trials] == list(range(budget))


def test_failed_configuration_is_recorded_counted_and_skipped(tmp_path):
    space = FlagSpace()
    first = FakeEvaluator(space)
    order = [t.codes for t in _run("random", first, 6)]
    ev = FakeEvaluator(space, crash={order[1], order[4]})
    trials = _run("random", ev, 6, storage=f"sqlite:///{tmp_path / 's.db'}")
    assert [t.status for t in trials].count("compile_error") == 2
    assert trials[1].status == "compile_error" and "boom" in trials[1].error and trials[1].ratio is None
    stored = Study(f"sqlite:///{tmp_path / 's.db'}", "prog:flags:random", space).trials()
    assert [t.status for t in stored] == [t.status for t in trials]


@pytest.mark.parametrize("strategy", ON_FAKES)
def test_killed_study_resumes_without_remeasuring(tmp_path, strategy):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    space = FlagSpace()
    ev = FakeEvaluator(space, stop_after=2)  # killed while measuring the third round
    with pytest.raises(KeyboardInterrupt):
        _run(strategy, ev, 12, storage=url)
    done = list(ev.measured)
    assert len(done) == 8
    ev2 = FakeEvaluator(space)
    trials = _run(strategy, ev2, 12, storage=url)
    assert len(trials) == 12 and len(ev2.measured) == 4
    assert not set(ev2.measured) & set(done)  # the finished rounds were not measured again
    assert [t.codes for t in trials[:8]] == done


def test_study_refuses_another_space(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    ev = FakeEvaluator(FlagSpace())
    _run("random", ev, 2, storage=url)
    with pytest.raises(ValueError, match="another program or space"):
        Study(url, "prog:flags:random", FlagSpace(allow_fast_math=True))


def test_model_strategies_find_the_best_with_an_informative_model():
    """With a good cost model, model search reaches the optimum far sooner than random search."""
    space = FlagSpace(columns=FLAG_COLUMNS[:7])  # small enough to know its optimum
    best = {}
    for strategy in ("model", "model+online", "random"):
        ev = FakeEvaluator(space)
        trials = _run(strategy, ev, 8, noise=0.02)
        best[strategy] = min(t.ratio for t in trials)
    true_best = min(FakeEvaluator(space).ratio(c) for c in space.enumerate())
    assert best["model"] == pytest.approx(true_best, rel=0.02)
    assert best["model+online"] <= best["random"]


def test_diverse_top_keeps_distance_then_relaxes():
    pool = [(0, 0, 1), (0, 0, 2), (1, 1, 1), (0, 1, 1)]
    assert diverse_top([0, 1, 2, 3], pool, 2, exclude=set()) == [(0, 0, 1), (1, 1, 1)]
    assert diverse_top([0, 1, 2, 3], pool, 4, exclude={(1, 1, 1)}) == [(0, 0, 1), (0, 0, 2), (0, 1, 1)]


class _SecondWorker(FakeEvaluator):
    """Worker A's evaluator: while A measures its first round, worker B runs on the same storage."""

    def __init__(self, space, run_b):
        super().__init__(space)
        self.run_b, self.b = run_b, None

    def evaluate(self, batch, again=()):
        if self.b is None:
            self.b = self.run_b()
        return super().evaluate(batch, again)


@pytest.mark.parametrize("strategy", ["random", "tpe", "model"])
def test_two_workers_share_the_budget(tmp_path, strategy):
    """issue 26: a worker counts the trials another worker has reserved (RUNNING) in the storage: two
    workers with --budget 8 each on one storage measure 8 configurations in all, not 16."""
    url = f"sqlite:///{tmp_path / 'study.db'}"
    space = FlagSpace()
    ev_b = FakeEvaluator(space)
    ev_a = _SecondWorker(space, lambda: _run(strategy, ev_b, 8, storage=url))
    trials = _run(strategy, ev_a, 8, storage=url)
    assert len(ev_a.measured) == 4 and len(ev_b.measured) == 4  # B saw A's round of 4 in flight
    assert len(set(ev_a.measured) | set(ev_b.measured)) == 8  # ... and did not measure it again
    assert len(trials) == 8 == len(Study(url, f"prog:flags:{strategy}", space).used())


def test_two_worker_threads_never_exceed_the_budget(tmp_path):
    """Two workers reserving at the same moments: the study still measures exactly its budget."""
    import threading

    url = f"sqlite:///{tmp_path / 'study.db'}"
    Study(url, "prog:flags:random", FlagSpace())  # the storage exists before the race
    evs = [FakeEvaluator(FlagSpace()) for _ in range(2)]
    errors = []

    def work(seed, ev):
        try:
            run_strategy("random", ev.space, ev, 9, url, "prog:flags", seed=seed, round_size=2)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i, ev)) for i, ev in enumerate(evs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(len(ev.measured) for ev in evs) == 9


def _foreign_reservation(url, space, owner, lease_until):
    """A RUNNING trial reserved by worker `owner` (host:pid), with its lease ending at `lease_until`."""
    study = Study(url, "prog:flags:random", space)
    (handle,) = study.reserve([space.sample(__import__("numpy").random.default_rng(5))])
    handle.set_user_attr("owner", owner)
    handle.set_user_attr("lease_until", lease_until)


@pytest.mark.parametrize("case", ["lease_expired", "lease_live", "killed_here"])
def test_a_stale_reservation_is_failed_after_its_lease(tmp_path, case):
    """issue 26: a RUNNING trial left by a killed worker on another machine counts until its lease
    ends, then is failed (without a status) and no longer counts; one left by a killed process of
    this host (kill -9) is failed at once."""
    import socket
    import subprocess
    import sys
    import time

    import optuna

    url = f"sqlite:///{tmp_path / 'study.db'}"
    space = FlagSpace()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owner = f"{socket.gethostname()}:{dead.stdout.strip()}" if case == "killed_here" else "another-host:1"
    _foreign_reservation(url, space, owner, time.time() + (-5 if case == "lease_expired" else 600))
    expired = case != "lease_live"
    ev = FakeEvaluator(space)
    trials = _run("random", ev, 5, storage=url)
    assert len(ev.measured) == (5 if expired else 4) and len(trials) == len(ev.measured)
    states = [t.state for t in Study(url, "prog:flags:random", space).study.get_trials()]
    assert states[0] == (optuna.trial.TrialState.FAIL if expired else optuna.trial.TrialState.RUNNING)


def test_an_interrupted_worker_releases_its_reservations(tmp_path):
    import optuna

    url = f"sqlite:///{tmp_path / 'study.db'}"
    ev = FakeEvaluator(FlagSpace(), stop_after=1)
    with pytest.raises(KeyboardInterrupt):
        _run("random", ev, 8, storage=url)
    study = Study(url, "prog:flags:random", FlagSpace())
    assert not study.study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
    assert len(study.used()) == 4


def test_storage_creation_race_is_retried(tmp_path, monkeypatch):
    """issue 26: two runs creating one new storage at once: the loser of the table creation retries."""
    import optuna

    from graphcost.tuning.study import open_storage

    real, calls = optuna.storages.get_storage, []

    def racing(url):
        calls.append(url)
        if len(calls) == 1:
            raise RuntimeError("(sqlite3.OperationalError) table studies already exists")
        return real(url)

    monkeypatch.setattr(optuna.storages, "get_storage", racing)
    assert open_storage(f"sqlite:///{tmp_path / 'study.db'}") is not None and len(calls) == 2


@pytest.mark.parametrize("bad", [{"round_size": 0}, {"round_size": -2}, {"budget": 0}, {"round_size": 2.5}])
def test_counts_below_one_are_refused(bad):
    """issue 26: round_size=0 returned the default silently, measuring nothing."""
    ev = FakeEvaluator(FlagSpace())
    args = {"budget": 4, "round_size": 2, **bad}
    with pytest.raises(ValueError, match=f"{next(iter(bad))} must be an integer"):
        run_strategy("random", ev.space, ev, args["budget"], None, "prog:flags", round_size=args["round_size"])
    assert not ev.measured


@pytest.mark.parametrize("probes, expected", [(1.0, 4), (0.5, 2), (0.0, 0)])
def test_effects_first_round_mixes_probes_and_the_models_top_picks(probes, expected):
    """The effects learner's first round: ceil(probes * round) single-option probes, the rest the
    graph model's best-scored configurations (which move several options in the widened space)."""
    from graphcost.tuning.strategies import ModelSearch

    ev = FakeEvaluator(FlagSpace())
    search = ModelSearch(ev.space, fake_scorer(ev, 0.0), seed=0, online=True, learner="effects", probes=probes)
    first = search.propose([], 4)
    singles = [c for c in first if sum(v != 0 for v in c) == 1]
    assert len(first) == 4 and len(singles) >= expected
    if probes < 1.0:
        best = min((c for c in search.pool if c != ev.space.default()), key=lambda c: search.prior[search.index[c]])
        assert best in first  # the model's top pick is measured in the first round
    with pytest.raises(ValueError, match="probes"):
        ModelSearch(ev.space, fake_scorer(ev, 0.0), online=True, learner="effects", probes=1.5)


@pytest.mark.parametrize("learner", ["effects", "tree"])
def test_random_interleaving_draws_its_share_of_every_round(learner):
    """explore="always": round(share * n) of each round are the random draws a `RandomSearch` of seed + 1
    would make; the rest are the model's own picks, all distinct and new."""
    from graphcost.tuning.strategies import ModelSearch, RandomSearch
    from graphcost.tuning.trial import OK, Trial

    ev = FakeEvaluator(FlagSpace())
    plain = ModelSearch(ev.space, fake_scorer(ev, 0.0), seed=0, online=True, learner=learner)
    mixed = ModelSearch(ev.space, fake_scorer(ev, 0.0), seed=0, online=True, learner=learner, explore=0.25,
                        explore_when="always")
    first = mixed.propose([], 4)
    assert first[:3] == plain.propose([], 3)  # the model's picks for the other slots
    assert first[3:] == RandomSearch(ev.space, 1).propose([], 1, frozenset(first[:3]))
    history = [Trial(c, OK, ratio=ev.ratio(c)) for c in first]
    second = mixed.propose(history, 4)
    assert len(set(second)) == 4 and not set(second) & {*first, ev.space.default()}
    assert mixed.random_slots(history, 8) == 2 and mixed.random_slots(history, 1) == 0
    everything = ModelSearch(ev.space, fake_scorer(ev, 0.0), seed=0, online=True, learner=learner, explore=1.0,
                             explore_when="always")
    assert everything.propose([], 4) == RandomSearch(ev.space, 1).propose([], 4)


def test_weak_prior_fallback_draws_at_random_only_when_the_prior_disagrees():
    """explore="weak": no random draws while the measurements agree with the prior (Kendall tau > 0), the
    share of the round once they disagree; measurements of a model that is exactly wrong disagree."""
    from graphcost.tuning.strategies import ModelSearch
    from graphcost.tuning.trial import OK, Trial

    ev = FakeEvaluator(FlagSpace())
    good = fake_scorer(ev, 0.0)
    search = ModelSearch(ev.space, good, seed=0, online=True, learner="effects", explore=0.5, explore_when="weak")
    assert search.random_slots([], 4) == 0 and search.prior_agreement is None  # nothing measured yet
    first = search.propose([], 4)
    right = [Trial(c, OK, ratio=ev.ratio(c)) for c in first]
    assert search.random_slots(right, 4) == 0 and search.prior_agreement > 0
    wrong = [Trial(c, OK, ratio=1.0 / ev.ratio(c)) for c in first]  # the prior ranks them backwards
    assert search.random_slots(wrong, 4) == 2 and search.prior_agreement < 0
    never = ModelSearch(ev.space, good, seed=0, online=True, learner="effects", explore=0.5, explore_when="never")
    assert never.random_slots(wrong, 4) == 0


@pytest.mark.parametrize("bad", [{"explore": -0.1}, {"explore": 1.5}, {"explore_when": "sometimes"}])
def test_bad_interleaving_settings_are_refused(bad):
    from graphcost.tuning.strategies import ModelSearch

    ev = FakeEvaluator(FlagSpace())
    with pytest.raises(ValueError, match="explore"):
        ModelSearch(ev.space, fake_scorer(ev, 0.0), online=True, **bad)


class _InformedScorer:
    """A cost model that reads compiled statistics: from the configuration alone it knows nothing (a
    constant plus a little noise); given statistics it scores by their first column."""

    reads_compiled = True

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.calls_with_stats = 0

    def __call__(self, configs, compiled=None):
        if compiled is None:
            return self.rng.normal(size=len(configs))
        self.calls_with_stats += 1
        return np.asarray(compiled)[:, 0]


def test_the_models_best_candidates_are_reordered_by_what_the_compiler_did():
    """`ModelSearch.inform`: the INFORMED_TOP best candidates are compiled (here: statistics = the true
    log ratio, NaN for one that fails to compile) and re-ordered among themselves by the informed
    scores; the rest of the pool keeps its prior, and the values in the top slots are the same ones."""
    from graphcost.tuning.strategies import INFORMED_TOP, ModelSearch

    ev = FakeEvaluator(FlagSpace())
    asked: list = []

    def compiled(configs):
        asked.extend(configs)
        stats = np.array([[np.log(ev.ratio(c))] + [1.0] * 6 for c in configs])
        stats[0] = np.nan  # the model's favourite does not compile
        return stats

    scorer = _InformedScorer()
    plain = ModelSearch(ev.space, _InformedScorer(), seed=0)  # the same pool and prior, never informed
    search = ModelSearch(ev.space, scorer, seed=0, compiled=compiled)
    assert plain.informed == 0 and search.informed == INFORMED_TOP - 1 and scorer.calls_with_stats == 1
    top = np.argsort(plain.prior, kind="stable")[:INFORMED_TOP]
    assert asked == [plain.pool[i] for i in top]
    rest = np.setdiff1d(np.arange(len(plain.pool)), top)
    np.testing.assert_array_equal(search.prior[rest], plain.prior[rest])
    np.testing.assert_array_equal(np.sort(search.prior[top]), np.sort(plain.prior[top]))
    new_order = [search.pool[i] for i in np.argsort(search.prior, kind="stable")[:INFORMED_TOP]]
    assert new_order[-1] == plain.pool[top[0]]  # failed to compile: last of the informed slots
    truth = [ev.ratio(c) for c in new_order[:-1]]
    assert truth == sorted(truth)  # the rest in the order of what the compiler did
    # a scorer that does not read statistics is never given any (nothing compiled)
    asked.clear()
    blind = ModelSearch(ev.space, fake_scorer(ev, 0.3), seed=0, compiled=compiled)
    assert blind.informed == 0 and not asked


def test_strategies_are_built_by_name_and_a_custom_one_plugs_in():
    """`make_strategy` gives each name its class; a `ProposingStrategy` subclass only writes `propose`
    and reserves its proposals in a study like the built-in ones; one that writes neither cannot be built."""
    from graphcost.tuning.strategies import (HedgedSearch, ModelSearch, ProposingStrategy, RandomSearch, Strategy,
                                             TPESearch, make_strategy)

    ev = FakeEvaluator(FlagSpace())
    small = {"pool_kwargs": {"initial": 32, "generations": 0}}
    built = {name: make_strategy(name, ev.space, 0, fake_scorer(ev, 0.3), **(small if "model" in name else {}))
             for name in ON_FAKES}
    assert {n: type(s) for n, s in built.items()} == {"hedged": HedgedSearch, "model+online": ModelSearch, "model": ModelSearch,
                                                      "tpe": TPESearch, "random": RandomSearch}
    assert all(s.name == n for n, s in built.items())
    assert built["tpe"].sampler(16) is not None and built["random"].sampler(16) is None
    with pytest.raises(ValueError, match="unknown strategy 'annealing'"):
        make_strategy("annealing", ev.space)
    with pytest.raises(ValueError, match="strategy 'model' needs a cost model"):
        make_strategy("model", ev.space)
    with pytest.raises(ValueError, match="strategy .kernels. compiles its candidates: build it from"):
        make_strategy("kernels", ev.space)

    class Incomplete(Strategy):
        pass

    with pytest.raises(TypeError):
        Incomplete(ev.space)

    class Neighbours(ProposingStrategy):  # one change from the default at a time
        name = "neighbours"

        def propose(self, history, n, busy=frozenset()):
            seen = {t.codes for t in history} | {self.space.default()} | set(busy)
            cands = dict.fromkeys(self.space.mutate(self.space.default(), self.rng) for _ in range(50 * n))
            return [c for c in cands if c not in seen][:n]

    study = Study(None, "custom", ev.space)
    handles, batch = Neighbours(ev.space).ask(study, [], 3, frozenset(), 0)
    assert len(handles) == len(batch) == 3 and len(set(batch)) == 3 and ev.space.default() not in batch
