"""Where the measurements of a tuning run live: an Optuna study per (program, space, strategy).

Every measured configuration is one Optuna trial: its parameters are what was compiled, one
categorical per space dimension over the dimension's real values (`Dim.param_name` /
`Dim.param_values`: ``xla_backend_optimization_level = 0`` for a trial that ran O0, a layout
site's ``minor_to_major`` as ``{1,0}``), so optuna-dashboard and `optuna.load_study` show the
configuration itself; its value is the runtime ratio to the default (minimised), its user
attributes the status, runtimes and error. Failed configurations are FAIL trials that
keep their status; they count against the budget like measured ones (they cost a compile).
A configuration timed again by racing (`graphcost.tuning.trial`, ``again``) is one more COMPLETE
trial of the same parameters with the status ``retimed``: it does not count against the budget,
and `trials` reports each configuration once, its ratio the geometric mean over all its timings.

The storage is any Optuna storage URL: a SQLite file by default (``OUT/study.db``), or an RDB
server (``postgresql://…``, ``mysql://…``) that workers on several machines share: each worker
runs the same ``graphcost tune`` command with ``--storage URL``, and the budget is for the
study as a whole.

The shared budget: before a worker measures a configuration it reserves it as a RUNNING trial
(`reserve`, or `ask` for TPE). The budget is used by the finished trials (measured or failed)
and the RUNNING ones, counted in the storage before every round (`used`). Two workers that count
at the same moment may both reserve; after reserving, only the first `budget` counted trials in
the storage's order are kept and the others are closed unmeasured as ``over_budget``
(`within_budget`), so the study never measures more than its budget. A reservation carries a
lease (`lease_s`, renewed while it is measured, `leased`); a RUNNING trial whose lease ran out
(its worker was killed, or lost) or whose owner process on this host is gone is closed as failed
without a status and no longer counts (`fail_stale`). Leases compare wall clocks: the machines
of one study need clocks that agree to well within `lease_s`.

A run that was killed resumes from what the storage holds: measured trials are never measured
again; an interrupted worker closes its reservations itself (an exception, Ctrl-C, SIGTERM: every
reservation a `Study` made and has not closed is in `open`, and `release_open` closes them), a
killed one's are closed by the next worker. A reservation is made, finished or closed with SIGINT and
SIGTERM held (`signals_held`), so an interrupt never leaves one half-written or unknown to `open`.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from graphcost.tuning.space import Codes, Space
from graphcost.tuning.trial import COPY, FAILED, MEASURED, OK, RETIMED, Trial, pooled_ratio

DUPLICATE = "duplicate"  # a sampler proposal of an already known configuration: not measured, not counted
OVER_BUDGET = "over_budget"  # a reservation past the study's budget (another worker was first): not measured
NOT_COUNTED = (DUPLICATE, OVER_BUDGET)
STORED_EXTRAS = ("kernels", "profile_wall_ns", "same_executable_as", "inert_options", "proposed_by",
                 "prior_weight")  # trial.extra keys read back from the storage
LEASE_S = 120.0  # seconds a reservation stays valid without being renewed
PARAMS_FORMAT = "values"  # study attribute "params": trial parameters hold the dimensions' values, not indices


def process_owner() -> str:
    """``host:pid`` of this process: who holds a reservation (or, in benchmarks/models/bench_real.py, a fold)."""
    return f"{socket.gethostname()}:{os.getpid()}"


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait while the block runs and are handled after it, by the handlers they had:
    a storage write that must not stop half-way (a reservation and its record) is not interrupted.
    The Python handlers are swapped (a signal mask would not do: another thread, JAX's or the lease
    renewer's, may receive the signal, and Python runs its handler in the main thread regardless)."""
    if threading.current_thread() is not threading.main_thread():  # handlers can be set in the main thread only
        yield
        return
    came: list[tuple[int, Any]] = []
    old: dict[int, Any] = {int(s): signal.signal(s, lambda signum, frame: came.append((signum, frame)))
                           for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for signum, frame in came[:1]:  # the first signal that came, as if it came now
            handler = old[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)


def owner_alive(owner: str) -> bool:
    """Whether the process `owner` (`process_owner`) may still run: False only for a process of this host that is gone."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's trial: not ours to close
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# the password: up to the last "@" before any "/" (an "@" in it), else up to the first "@" (a "/" in it); it may
# hold spaces (a quoted URL), not a line break or a quote
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:)(?:[^\n'\"/]*@|[^\n@'\"]*@)")
# a user name with no password that is long enough to be a token (``https://ghp_...@host``): masked whole
_URL_TOKEN_USER = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s:@'\"]{16,}@")


# a secret in a URL's query string: any key naming a password, passphrase, secret, token, key, credential,
# signature or authorisation (``?password=``, ``&sslpassword=``, ``accessKey=``, ``api-key=``, ``private_key=``)
_QUERY_SECRET = re.compile(r"(?P<head>[?&;][A-Za-z0-9_.\-]*(?:pass|pwd|secret|token|key|credential|signature|auth)"
                           r"[A-Za-z0-9_.\-]*=)[^&;\s'\"]*", re.IGNORECASE)


# a URL's fragment (``...#SECRET``): never sent to a server, so nothing a storage needs; masked whole
_FRAGMENT = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s#'\"]*#)[^\s'\"]*")


def mask_url(text: str | None) -> str:
    """`text` with the secrets of every URL in it replaced by ``***``: the password (``scheme://user:PASSWORD@host``),
    a user name long enough to be a token, every query parameter whose name says it holds a secret, and the
    fragment. Storage URLs and the database errors that quote them are shown and logged only masked."""
    masked = _URL_PASSWORD.sub(r"\g<head>***@", "" if text is None else str(text))
    masked = _URL_TOKEN_USER.sub(r"\g<head>***@", masked)
    return _FRAGMENT.sub(r"\g<head>***", _QUERY_SECRET.sub(r"\g<head>***", masked))


def _storage_error(storage: str, exc: BaseException) -> ValueError:
    first = (str(exc).strip().splitlines() or [""])[0]
    return ValueError(mask_url(f"{storage}: cannot open the study storage ({type(exc).__name__}: {first})"))


def open_storage(storage: str, attempts: int = 5):
    """The Optuna storage behind URL `storage`, its tables created if needed; ValueError in one line
    when it cannot be opened (a damaged file, an unreachable server, a bad URL).

    Two processes that create the same new storage at once race to create its tables and its
    schema version row (SQLite: ``table studies already exists``, ``UNIQUE constraint failed:
    alembic_version.version_num``, ``database is locked``): the loser retries, and then finds them made."""
    import time

    import optuna

    for attempt in range(attempts):
        try:
            return optuna.storages.get_storage(storage)
        except Exception as exc:  # noqa: BLE001
            text = str(exc)
            raced = ("already exists" in text or "database is locked" in text
                     or type(exc).__name__ == "IntegrityError")  # the other creator was first
            if raced and attempt + 1 < attempts:
                time.sleep(0.05 * (attempt + 1))
                continue
            raise _storage_error(storage, exc) from None
    raise AssertionError("unreachable")


def program_fingerprint(program, space: Space) -> str:
    """What a study's measurements are valid for: a SHA-256 (16 hex digits) of the program's lowered,
    unconstrained module (StableHLO text, without source locations) and of the space's dimensions
    and choices. Two programs with the same fingerprint compile the same module under each
    configuration; anything else is another program."""
    import hashlib
    import json

    dims = [[d.name, [repr(c) for c in d.choices]] for d in space.dims]
    h = hashlib.sha256(program.lower().as_text().encode("utf-8"))
    h.update(json.dumps([space.name, dims]).encode("utf-8"))
    return h.hexdigest()[:16]


class Study:
    """An Optuna study holding one strategy's trials for one program and space.

    fingerprint: `program_fingerprint` of what is measured; a study already holding trials of
    another fingerprint (or trials recorded before fingerprints existed) is refused.
    """

    def __init__(self, storage: str | None, name: str, space: Space, sampler=None, fingerprint: str | None = None,
                 lease_s: float = LEASE_S):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.space, self.lease_s = space, float(lease_s)
        self.distributions: dict[str, optuna.distributions.BaseDistribution] = {
            d.param_name: optuna.distributions.CategoricalDistribution(list(d.param_values)) for d in space.dims}
        if len(self.distributions) != len(space.dims):
            raise ValueError(f"the {space.name} space has duplicate dimension names")
        self._codes = [{v: k for k, v in enumerate(d.param_values)} for d in space.dims]  # value -> code
        for d, index in zip(space.dims, self._codes):
            if len(index) != len(d.choices):
                raise ValueError(f"dimension {d.name} of the {space.name} space has repeated parameter values")
        backend = open_storage(storage) if storage is not None else None
        try:
            self.study = optuna.create_study(storage=backend, study_name=name, direction="minimize",
                                             sampler=sampler, load_if_exists=True)
        except Exception as exc:  # noqa: BLE001 - a damaged file or an unreachable server, said in one line
            raise _storage_error(storage, exc) from None
        attrs = self.study.user_attrs
        signature = [space.name, [d.name for d in space.dims], [len(d.choices) for d in space.dims]]
        if "signature" not in attrs:
            self.study.set_user_attr("signature", signature)
        elif attrs["signature"] != signature:
            raise ValueError(f"study {name!r} in {mask_url(storage)} was made for another program or space "
                             f"({attrs['signature'][0]}, {len(attrs['signature'][1])} dimensions); "
                             "use another --out / --study, or --overwrite")
        if attrs.get("params") != PARAMS_FORMAT:
            if self.study.get_trials(deepcopy=False):
                raise ValueError(f"study {name!r} in {mask_url(storage or 'memory')} was recorded by an older "
                                 "graphcost (choice indices as parameters); pass --study NAME to start a new "
                                 "study, another --out, or --overwrite")
            self.study.set_user_attr("params", PARAMS_FORMAT)
        if fingerprint is not None:
            self._check_fingerprint(storage, name, fingerprint)
        self.open: list = []  # this object's reservations not yet finished or closed (`release_open`)
        self.closed_at_open = self.fail_stale()  # RUNNING trials of killed or lost workers, closed now

    def _check_fingerprint(self, storage: str | None, name: str, fingerprint: str) -> None:
        """Refuse (ValueError, one line) a study whose trials measured another program or space."""
        old = self.study.user_attrs.get("fingerprint")
        if old == fingerprint:
            return
        if old is None and not self.study.get_trials(deepcopy=False):
            self.study.set_user_attr("fingerprint", fingerprint)
            return
        what = (f"another program or space (fingerprint {old}, this one {fingerprint})" if old is not None else
                "a program of unknown fingerprint (recorded by an older graphcost)")
        raise ValueError(f"study {name!r} in {mask_url(storage or 'memory')} holds measurements of {what}; none of "
                         "them apply here: pass --study NAME to start a new study, another --out, or --overwrite")

    def fail_stale(self) -> list[int]:
        """Close, as failed without a status (not counted), every RUNNING trial whose lease has run out
        or whose owner process on this host is gone; the numbers of the trials closed."""
        import time

        import optuna

        closed, now = [], time.time()
        for t in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            owner = t.user_attrs.get("owner", "")
            until = t.user_attrs.get("lease_until")
            if until is None:  # asked, lease not yet written: the start time stands for it
                until = (t.datetime_start.timestamp() if t.datetime_start else now) + self.lease_s
            if (owner and not owner_alive(owner)) or float(until) < now:
                self.study.tell(t.number, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
                closed.append(t.number)
        return closed

    # -- reading -----------------------------------------------------------------------------
    def trials(self) -> list[Trial]:
        """Finished trials (measured or failed, not interrupted), in the order they were recorded."""
        import optuna

        out: list[Trial] = []
        again: dict[Codes, list[float]] = {}
        for t in self.study.get_trials(deepcopy=False):
            status = t.user_attrs.get("status")
            if t.state == optuna.trial.TrialState.COMPLETE and status in MEASURED:  # measured, or a copy
                out.append(self._trial(t, status, t.value))
            elif t.state == optuna.trial.TrialState.FAIL and status in FAILED:
                out.append(self._trial(t, status, None))
            elif t.state == optuna.trial.TrialState.COMPLETE and status == RETIMED:
                again.setdefault(self._measured_codes(t), []).append(float(t.values[0]))
        for i, trial in enumerate(out):
            trial.number = i
            if trial.status == OK and trial.codes in again:  # raced: the estimate over all its timings
                trial.extra["ratios"] = [trial.ratio] + again[trial.codes]
                trial.ratio = pooled_ratio(trial.extra["ratios"])
        return out

    def _measured_codes(self, t) -> Codes:
        """The configuration an Optuna trial measured: its parameters, or a snapped proposal's (`measures`)."""
        a = t.user_attrs
        return tuple(int(c) for c in a["codes"]) if "codes" in a else self.codes(t.params)

    def _trial(self, t, status: str, value) -> Trial:
        a = t.user_attrs
        extra = {k: a[k] for k in STORED_EXTRAS if k in a}  # profiled trials' kernel times (`trial.Evaluator`)
        return Trial(self._measured_codes(t), status, ratio=value, runtime_ns=a.get("runtime_ns"), default_ns=a.get("default_ns"),
                     error=a.get("error", ""), strategy=a.get("strategy", ""), round=int(a.get("round", 0)), extra=extra)

    def found(self) -> dict[str, int]:
        """What the storage holds, for the line a resumed run prints: ``measured`` (finished, failed
        ones included), ``failed``, ``released`` (reservations of interrupted or killed workers,
        closed unmeasured and not counted) and ``in_flight`` (RUNNING, counted: another live worker's)."""
        import optuna

        S = optuna.trial.TrialState
        done = self.trials()
        released = in_flight = 0
        for t in self.study.get_trials(deepcopy=False, states=(S.FAIL, S.RUNNING)):
            status = t.user_attrs.get("status")
            if t.state == S.FAIL and status is None:
                released += 1
            elif t.state == S.RUNNING and status not in NOT_COUNTED:
                in_flight += 1
        return {"measured": len(done), "failed": sum(t.status not in MEASURED for t in done), "released": released,
                "in_flight": in_flight}

    def used(self) -> list[int]:
        """Numbers, in order, of the trials that use the budget: finished ones (measured or failed) and
        RUNNING ones (reserved by a worker), but not copies of an executable timed before, duplicates,
        over-budget or interrupted ones."""
        import optuna

        S = optuna.trial.TrialState
        out = []
        for t in self.study.get_trials(deepcopy=False, states=(S.COMPLETE, S.FAIL, S.RUNNING)):
            status = t.user_attrs.get("status")
            if ((t.state == S.RUNNING and status not in NOT_COUNTED) or (t.state == S.COMPLETE and status == OK)
                    or (t.state == S.FAIL and status in FAILED)):
                out.append(t.number)
        return sorted(out)

    def busy(self) -> frozenset:
        """The configurations of the RUNNING trials that use the budget: being measured by some worker."""
        import optuna

        out = set()
        for t in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            a = t.user_attrs
            if a.get("status") in NOT_COUNTED or len(t.params) != len(self.space.dims):
                continue
            out.add(self._measured_codes(t))
        return frozenset(out)

    # -- writing -----------------------------------------------------------------------------
    def _attrs(self, trial: Trial) -> dict[str, Any]:
        return {"status": trial.status, "runtime_ns": trial.runtime_ns, "default_ns": trial.default_ns,
                "error": trial.error, "strategy": trial.strategy, "round": trial.round, **trial.extra}

    def params(self, codes: Codes) -> dict[str, Any]:
        """The trial parameters of configuration `codes`: {parameter name: value} per dimension."""
        return {d.param_name: d.param_values[int(c)] for d, c in zip(self.space.dims, codes)}

    def codes(self, params: dict[str, Any]) -> Codes:
        """The configuration whose trial parameters are `params` (the inverse of `params`)."""
        return tuple(index[params[d.param_name]] for d, index in zip(self.space.dims, self._codes))

    def add(self, trial: Trial) -> None:
        """Record a finished trial proposed outside Optuna's sampler, or a re-timing (status RETIMED)."""
        import optuna

        measured = trial.status in (OK, COPY, RETIMED)
        state = optuna.trial.TrialState.COMPLETE if measured else optuna.trial.TrialState.FAIL
        self.study.add_trial(optuna.trial.create_trial(
            params=self.params(trial.codes), distributions=self.distributions, user_attrs=self._attrs(trial),
            value=trial.ratio if measured else None, state=state))

    def _lease_attrs(self) -> dict[str, Any]:
        import time

        return {"owner": process_owner(), "lease_until": time.time() + self.lease_s}

    def ask(self):
        """A new trial from the study's sampler (TPE), reserved with a lease: (optuna trial, codes)."""
        with signals_held():  # asked, leased and in `open` together, or not at all
            trial = self.study.ask(self.distributions)
            self.open.append(trial)
            for k, v in self._lease_attrs().items():
                trial.set_user_attr(k, v)
        return trial, self.codes(trial.params)

    def measures(self, handle, codes: Codes) -> None:
        """Record that the sampler's trial `handle` measures `codes` instead of its own parameters (a
        proposal snapped to a measurable configuration, `Space.snap`): `trials` reports `codes`."""
        handle.set_user_attr("codes", [int(c) for c in codes])

    def reserve(self, batch: list[Codes]) -> list:
        """Reserve each configuration of `batch` as a RUNNING trial with a lease; their handles."""
        import optuna

        handles = []
        for codes in batch:
            frozen = optuna.trial.create_trial(state=optuna.trial.TrialState.RUNNING, params=self.params(codes),
                                               distributions=self.distributions, user_attrs=self._lease_attrs())
            with signals_held():  # made and in `open` together
                # Study.add_trial does the same, but does not say which trial it made
                trial_id = self.study._storage.create_new_trial(self.study._study_id, template_trial=frozen)
                handles.append(optuna.trial.Trial(self.study, trial_id))
                self.open.append(handles[-1])
        return handles

    def within_budget(self, handles: list, budget: int) -> list[int]:
        """Indices of `handles` among the first `budget` trials that use the budget (`used`); the
        others (another worker reserved first) are closed unmeasured as ``over_budget``."""
        first = set(self.used()[:budget])
        keep = []
        for i, h in enumerate(handles):
            if h.number in first:
                keep.append(i)
            else:
                self.release(h, OVER_BUDGET)
        return keep

    def release(self, handle, status: str | None = None) -> None:
        """Close a reservation without a measurement: failed, with `status` (None: interrupted); not counted."""
        import optuna

        with signals_held():
            try:
                if status is not None:
                    handle.set_user_attr("status", status)
                self.study.tell(handle, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
            except optuna.exceptions.UpdateFinishedTrialError:
                pass  # already closed as stale by another worker
            self._closed(handle)

    def release_open(self) -> int:
        """Close every reservation this object made and has not finished (`open`), as interrupted: they
        stop counting against the budget, so a resumed run measures exactly what is left. How many."""
        handles, n = list(self.open), 0
        for handle in handles:
            self.release(handle)
            n += 1
        return n

    def _closed(self, handle) -> None:
        """`handle` is finished or closed: no longer in `open`."""
        self.open = [h for h in self.open if h is not handle]

    @contextmanager
    def leased(self, handles: list) -> Iterator[None]:
        """Renew the leases of `handles` while the block runs (they are being measured); if the block
        raises (Ctrl-C, an error), release them, so they stop counting against the budget."""
        import threading
        import time

        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(self.lease_s / 4):
                for h in handles:
                    try:
                        h.set_user_attr("lease_until", time.time() + self.lease_s)
                    except Exception:  # noqa: BLE001 - finished meanwhile, or the storage hiccuped: next time
                        pass

        thread = threading.Thread(target=renew, name="graphcost-lease", daemon=True)
        thread.start()
        try:
            yield
        except BaseException:
            stop.set()
            thread.join()
            for h in handles:
                self.release(h)
            raise
        stop.set()
        thread.join()

    def tell_known(self, handle, ratio: float | None) -> None:
        """Close a sampler proposal that repeats a known configuration with its known ratio (1.0 for
        the default; None for a failed one), without measuring it; it does not count as a trial."""
        import optuna

        with signals_held():
            handle.set_user_attr("status", DUPLICATE)
            if ratio is None:
                self.study.tell(handle, state=optuna.trial.TrialState.FAIL)
            else:
                self.study.tell(handle, ratio)
            self._closed(handle)

    def tell(self, handle, trial: Trial) -> None:
        """Finish a trial obtained from `ask` or `reserve` with its measurement. If another worker
        closed it meanwhile (its lease ran out), the measurement is recorded as a new trial."""
        import optuna

        with signals_held():  # a measurement is recorded whole (status and state), never half
            try:
                for k, v in self._attrs(trial).items():
                    handle.set_user_attr(k, v)
                if trial.status in MEASURED:  # a copy is told its twin's ratio: the sampler learns it too
                    self.study.tell(handle, trial.ratio)
                else:
                    self.study.tell(handle, state=optuna.trial.TrialState.FAIL)
            except (optuna.exceptions.UpdateFinishedTrialError, ValueError) as exc:
                if isinstance(exc, ValueError) and "Cannot tell a" not in str(exc):
                    raise
                self.add(trial)
            self._closed(handle)
