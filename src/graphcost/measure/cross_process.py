"""The cross-process measurement protocol of `graphcost collect`: the driver side and the label.

One process's timings of a set of configurations agree well with themselves (the interleaved
protocol of `graphcost.measure.interleaved`) and badly with another process's: code placement,
page alignment, allocator state and the kernel's scheduling differ from process to process. A
label that only one process saw is therefore partly that process's accident. The protocol:

1. the configurations of a graph are compiled once by the driver, into JAX's persistent
   compilation cache (``cache_dir``), with several compile threads;
2. ``P`` fresh worker processes (`graphcost.measure.worker`), one after another, each
   pinned to one core (``measure_core``) with XLA single-threaded, rebuild the program, load (or
   compile) every configuration through the cache and time them all with the interleaved
   protocol (rounds x calls, minimum per visit, median over rounds);
3. before each process the driver waits, at most ``max_wait_s``, until the 1-minute load average
   is at most ``max_load``, and records it before and after;
4. the label of configuration k combines the per-process runtimes ``t[k, p]`` (`combine`); the
   (K, P) matrix is stored beside it (``config_runtime_samples``), so a label is recomputable;
5. configurations that compiled to one executable (same fingerprint, `graphcost.frontend.programs.
   executable_fingerprint`) get one label from their measurements together (`pool_executables`):
   their order among themselves is noise by construction, and the repeat's agreement and the noise
   statistics count each executable once (the guide's "Collecting real data" page measures what
   this does to the repeat's agreement).

Two label statistics (`LABEL_STATISTICS`; the manifest records which, `graphcost collect --label`):

* ``level-median`` (the default of new collections): each process's runtimes are first divided by
  that process's level ``l_p = median_k t[k, p]``, then ``label_k = median_p(t[k, p] / l_p) ·
  median_p(l_p)``. A process that ran a few per cent slower throughout (another CPU state, another
  code placement) no longer decides the order of close configurations, which a plain median takes
  from whichever process is the middle one for each configuration separately; two collections of
  the same graphs agree better under it (the guide's "Collecting real data" page).
* ``median``: the plain median over processes of ``t[k, p]`` (collections made before 2026-11-26;
  a manifest that names no statistic means this one).

Per-graph noise, from the protocol itself (`noise_stats`): with ``s_k`` the standard deviation
over processes of ``log t[k, p]`` (of ``log(t[k, p] / l_p)`` under ``level-median``) and ``S`` the standard deviation over configurations of the
log label, the noise ratio is ``r = median_k(s_k) / S``. Under additive log-normal noise, two
processes' rankings correlate at about ``1 / (1 + r^2)``; a graph with ``r > 0.5`` (expected
process-to-process correlation below 0.8) cannot have its configurations told apart by this
machine and is FLAGGED in the manifest and the card. The mean pairwise Spearman correlation
between processes is reported beside it.

`measure_processes` is the driver side for one graph: it runs the processes that have no result
yet (`wait_for_quiet`, then `run_worker`), keeps the results of finished processes across a resume
(each recorded with its SHA-256) and returns the (K, P) samples.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Callable

import numpy as np

from graphcost.errors import GraphcostError
from graphcost.guards.atomic import atomic_write_json, atomic_write_text
from graphcost.measure.interleaved import load_average, spearman

NOISE_RATIO_FLAG = 0.5  # r above this: configurations not separable (process-to-process rho < ~0.8)


def default_measure_core() -> int:
    """The last core this process may run on (the driver and compile threads keep the others)."""
    try:
        return max(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return max(0, (os.cpu_count() or 1) - 1)


@dataclass(frozen=True)
class CrossProcess:
    """Parameters of the cross-process protocol (module docstring)."""

    processes: int = 3
    measure_core: int | None = None  # None: `default_measure_core()`; -1: do not pin
    max_load: float | None = None  # None: cores - 0.5
    max_wait_s: float = 300.0
    worker_timeout_s: float = 1800.0

    def __post_init__(self):
        if self.processes < 1:
            raise ValueError(f"cross-process protocol: processes must be >= 1, got {self.processes}")
        if self.max_wait_s < 0:
            raise ValueError(f"cross-process protocol: max_wait_s must be >= 0, got {self.max_wait_s}")

    def load_threshold(self) -> float:
        return self.max_load if self.max_load is not None else max(0.5, (os.cpu_count() or 1) - 0.5)

    def core(self) -> int | None:
        if self.measure_core == -1:
            return None
        return self.measure_core if self.measure_core is not None else default_measure_core()

    def key(self) -> dict:
        """What changes the labels (recorded in the manifest; a resume must match)."""
        return {"processes": self.processes, "pinned": self.measure_core != -1}

    def describe(self) -> dict:
        return {**asdict(self), "max_load": self.load_threshold(), "measure_core": self.core()}


def wait_for_quiet(max_load: float, max_wait_s: float, status: Callable[[str], None] | None = None,
                   loadavg: Callable[[], list[float] | None] = load_average, sleep: Callable[[float], None] = time.sleep,
                   step_s: float = 5.0) -> dict:
    """Wait (bounded) until the 1-minute load average is at most `max_load`.

    Returns ``{"load": [1, 5, 15 min] when measuring starts, "waited_s": s, "quiet": bool}``;
    ``quiet`` is False when `max_wait_s` ran out and measuring goes on into the load.
    """
    waited = 0.0
    while True:
        load = loadavg()
        if load is None or load[0] <= max_load:
            return {"load": load, "waited_s": round(waited, 1), "quiet": True}
        if waited >= max_wait_s:
            if status is not None:
                status(f"load {load[0]:.2f} > {max_load:.2f} after {waited:.0f}s: measuring anyway")
            return {"load": load, "waited_s": round(waited, 1), "quiet": False}
        if status is not None:
            status(f"waiting for a quiet machine: load {load[0]:.2f} > {max_load:.2f} ({waited:.0f}/{max_wait_s:.0f}s)")
        sleep(step_s)
        waited += step_s


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child process receive SIGKILL when its parent dies, even by
    SIGKILL (Linux ``prctl(PR_SET_PDEATHSIG)``; kept across exec), so a killed driver leaves no
    measuring process behind. None where the platform has no such call."""
    import ctypes
    import ctypes.util
    import signal

    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the call: nobody would send the signal
            os._exit(1)

    return preexec


def run_child(cmd: list[str], timeout_s: float, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `cmd` to completion (output captured as text), killed with its parent (`die_with_parent`).

    The ``preexec_fn`` makes Python fork, and JAX warns on every fork of a process that has
    imported it ("os.fork() was called ... likely lead to a deadlock"); the child runs no Python
    code before it execs, so the warning does not apply and is silenced for this call only.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env or os.environ.copy(),
                              preexec_fn=die_with_parent())


def describe_signal(number: int) -> str:
    """What a process killed by signal `number` went through, in words a user can act on."""
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"the process was killed by signal {number}"
    crashed = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL)
    what = ("the program aborted" if sig == signal.SIGABRT else "the program crashed" if sig in crashed
            else "the process was killed" if sig == signal.SIGKILL else "the process ended")
    why = {signal.SIGABRT: ": os.abort() or a failed check", signal.SIGKILL: ": out of memory?"}.get(sig, "")
    name = sig.name
    return f"{what} (signal {number}, {name}{why})"


def memory_message(text: str) -> str | None:
    """XLA's ``RESOURCE_EXHAUSTED`` in one line naming the buffer's size; None for any other error."""
    if "RESOURCE_EXHAUSTED" not in text:
        return None
    size = re.search(r"(\d+) bytes", text[text.rindex("RESOURCE_EXHAUSTED"):])
    if size is None:
        return "XLA ran out of memory (RESOURCE_EXHAUSTED)"
    n = int(size.group(1))
    return f"XLA ran out of memory: a buffer of {_bytes(n)} ({n} bytes) does not fit (RESOURCE_EXHAUSTED)"


def _bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "bytes" else f"{int(n)} bytes"
        n /= 1024
    return f"{n:.1f} TiB"


def run_worker(job_path: Path, process: int, out_path: Path, core: int | None, timeout_s: float,
               env: dict | None = None, label: str | None = None, deadline_note: str = "") -> None:
    """Run one fresh measuring process (``python -m graphcost.measure.worker``); it is
    killed with its parent (`die_with_parent`). Its failures are `run_checked`'s, named
    "measuring process P"."""
    cmd = [sys.executable, "-m", "graphcost.measure.worker", str(job_path), str(process), str(out_path),
           str(-1 if core is None else core), "0"]  # worker.main's five arguments
    run_checked(cmd, out_path, timeout_s, env, label or str(job_path), f"measuring process {process}", deadline_note)


def labelled(text: str, label: str) -> str:
    """A child's one-line error `text`, beginning with `label` (the program) unless it names it first already:
    what a child prints as ``error: ...`` for `run_checked` to raise."""
    return text if text.startswith(label) else f"{label}: {text}"


class ProcessFailed(GraphcostError, RuntimeError):
    """A fresh process graphcost ran on a program (measuring, costing, describing, verifying) failed, timed out or
    was killed: one line naming the program, the process and what ended it."""


def run_checked(cmd: list[str], out_path: Path, timeout_s: float, env: dict | None, who: str, what: str,
                deadline_note: str = "") -> None:
    """Run the graphcost child `cmd` (`run_child`), which writes `out_path`.

    Raises ProcessFailed (a RuntimeError) in one line naming `who` and `what` (its last stderr line, or the line
    it printed as ``error: ...``) when it fails or writes nothing, and says which signal ended it, or that XLA ran out
    of memory; when it runs past `timeout_s`, `deadline_note` says how that deadline was chosen.
    """
    try:
        proc = run_child(cmd, timeout_s, env)
    except subprocess.TimeoutExpired as exc:
        raise ProcessFailed(f"{who}: {what} timed out after {timeout_s:.0f} s"
                           + (f" ({deadline_note})" if deadline_note else "")) from exc
    if proc.returncode is not None and proc.returncode < 0:
        raise ProcessFailed(f"{who}: {what}: {describe_signal(-proc.returncode)}")
    if proc.returncode != 0 or not out_path.exists():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        if last.startswith("error: "):
            raise ProcessFailed(last[len("error: "):])
        if (oom := memory_message(proc.stderr[-4000:])) is not None:
            raise ProcessFailed(f"{who}: {what}: {oom}")
        raise ProcessFailed(f"{who}: {what} failed (exit {proc.returncode}): {last}")


# --- the driver side: the P measuring processes of one graph ----------------------------------

def measure_processes(job: dict, work: Path, prefix: str, cross: CrossProcess, before_first=None,
                      status=None, first: int = 0) -> tuple[np.ndarray, list[dict]]:
    """Run processes ``first .. P-1`` of `job` that have no result yet in `work` (``<prefix><p>.npz``);
    `first` > 0 adds processes to a graph that has the first ones already (each process's seed,
    hence its visit order, is that of its index in a P-process collection).

    before_first: called once before the first process that must run (the driver compile).
    Returns the (K, P - first) float64 runtimes and one record per process (load around it, its wall
    time, its compile/load time, whether the machine was quiet). A job file that differs from
    the one the kept results were measured with discards them. A result is kept only when it is
    the file of a process this driver (or an earlier one) saw finish and recorded in
    ``<prefix>-done.json`` (its SHA-256): a file written by anything else, e.g. a measuring process
    orphaned by a killed driver, is measured again.
    """
    work.mkdir(parents=True, exist_ok=True)
    job_path = work / f"{prefix}-job.json"
    ledger_path = work / f"{prefix}-done.json"
    text = json.dumps(job, sort_keys=True)
    if not job_path.exists() or job_path.read_text(encoding="utf-8") != text:
        for old in work.glob(f"{prefix}[0-9]*.npz"):  # measured for another job
            old.unlink()
        ledger_path.unlink(missing_ok=True)
        atomic_write_text(job_path, text)
    ledger = _read_ledger(ledger_path)
    rows, records = [], []
    if not 0 <= first < cross.processes:
        raise ValueError(f"{work}: first process {first} is not one of the {cross.processes} processes")
    for p in range(first, cross.processes):
        out = work / f"{prefix}{p}.npz"
        data = out.read_bytes() if out.exists() else None
        if data is not None and ledger.get(str(p)) != _sha256(data):
            # not the result of a process this driver saw finish (e.g. an orphan of a killed run): measure again
            out.unlink()
            data = None
        if data is None:
            if before_first is not None:
                before_first()
                before_first = None
            say = (lambda msg, p=p: status(f"process {p + 1}/{cross.processes}: {msg}")) if status else None
            quiet = wait_for_quiet(cross.load_threshold(), cross.max_wait_s, say)
            if status:
                status(f"process {p + 1}/{cross.processes}: measuring (load {_fmt_load(quiet['load'])})")
            t0 = time.perf_counter()
            run_worker(job_path, p, out, cross.core(), cross.worker_timeout_s)
            wall = round(time.perf_counter() - t0, 2)
            data = out.read_bytes()
            ledger[str(p)] = _sha256(data)  # recorded: a later resume may adopt exactly this file
            atomic_write_json(ledger, ledger_path)
            rec_extra = {"waited_s": quiet["waited_s"], "quiet": quiet["quiet"], "wall_s": wall}
        else:
            rec_extra = {"resumed": True}
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            rows.append(np.asarray(z["runtime_ns"], np.float64))
            records.append({"load_start": _list(z["loadavg_start"]), "load_end": _list(z["loadavg_end"]),
                            "compile_or_load_s": round(float(z["compile_s"]), 2), "core": int(z["core"]), **rec_extra})
    k = len(job["configs"]) if "configs" in job else len(job["fake_runtime_ns"][0])
    if any(len(r) != k for r in rows):
        raise ValueError(f"{work}: a measuring process returned {[len(r) for r in rows]} runtimes for {k} configurations")
    return np.stack(rows, axis=1), records  # (K, P - first)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_ledger(path: Path) -> dict[str, str]:
    """The finished processes of a graph's work area, ``{process: sha256 of its result file}``;
    empty when missing or unreadable (then every result is measured again)."""
    try:
        ledger = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return {str(k): v for k, v in ledger.items() if isinstance(v, str)} if isinstance(ledger, dict) else {}


def _list(a) -> list:
    return [round(float(x), 2) for x in np.asarray(a).ravel()]


def _fmt_load(load) -> str:
    return "?" if not load else f"{load[0]:.2f}"


# --- the label and its noise ------------------------------------------------------------------

LABEL_STATISTICS = ("level-median", "median")  # the first is the default of new collections


def check_statistic(statistic: Any, what: str = "label statistic") -> str:
    """`statistic` if it is one of `LABEL_STATISTICS`; otherwise ValueError, in one line naming `what`
    (e.g. ``--label`` or a manifest's key) and the choices."""
    if statistic not in LABEL_STATISTICS:
        raise ValueError(f"{what} must be one of {', '.join(LABEL_STATISTICS)}, got {statistic!r}")
    return str(statistic)


def _checked(samples: np.ndarray) -> np.ndarray:
    samples = np.asarray(samples, np.float64)
    if samples.ndim != 2 or samples.shape[1] < 1:
        raise ValueError(f"runtime samples must be (K, P) with P >= 1, got shape {samples.shape}")
    return samples


def _per_process(samples: np.ndarray, statistic: str) -> tuple[np.ndarray, float]:
    """(K, P) runtimes as `statistic` combines them, and the scale that restores ns: the samples
    and 1 for ``median``; ``t[k, p] / l_p`` and ``median_p(l_p)`` for ``level-median``, with each
    process's level ``l_p = median_k t[k, p]``."""
    samples = _checked(samples)
    if check_statistic(statistic) == "median":
        return samples, 1.0
    levels = np.median(samples, axis=0)  # (P,)
    return samples / levels, float(np.median(levels))


def check_executable_ids(ids: Any, k: int, what: str = "config_executable_ids") -> np.ndarray:
    """`ids` as (K,) int64 if it is a valid executable index of K configurations
    (`graphcost.frontend.programs.executable_fingerprint.executable_ids`: ``0 <= ids[k] <= k`` and
    ``ids[ids[k]] == ids[k]``); otherwise ValueError, in one line naming `what`."""
    arr = np.asarray(ids)
    if arr.shape != (k,) or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{what}: must be ({k},) integers (one executable index per configuration), "
                         f"got shape {arr.shape} of {arr.dtype}")
    arr = arr.astype(np.int64)
    if k and (arr.min() < 0 or np.any(arr > np.arange(k)) or np.any(arr[arr] != arr)):
        raise ValueError(f"{what}: each entry must be the index of the first configuration with the same "
                         "executable (0 <= ids[k] <= k and ids[ids[k]] == ids[k])")
    return arr


def pool_executables(samples: np.ndarray, executables: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(K, P) runtimes of K configurations -> the (G, P) runtimes of their G distinct executables
    and the (K,) index of each configuration's executable.

    Configurations that compile to one executable (``executables``, `check_executable_ids`) are
    measurements of the same code; within process p their pooled runtime is
    ``t[g, p] = median_{k in g} t[k, p]``, and every statistic of the label (`combine`,
    `noise_stats`, a repeat's agreement) is taken over executables, each counted once. None:
    every configuration is its own executable."""
    samples = _checked(samples)
    if executables is None:
        return samples, np.arange(len(samples))
    ids = check_executable_ids(executables, len(samples))
    _, inverse = np.unique(ids, return_inverse=True)
    pooled = np.stack([np.median(samples[inverse == g], axis=0) for g in range(int(inverse.max()) + 1)]) \
        if len(ids) else samples
    return pooled, inverse


def combine(samples: np.ndarray, statistic: str = "median", executables: np.ndarray | None = None) -> np.ndarray:
    """(K, P) per-process runtimes -> (K,) label (module docstring: ``median`` or ``level-median``),
    one pooled label per executable when ``executables`` is given (`pool_executables`)."""
    pooled, inverse = pool_executables(samples, executables)
    per_process, scale = _per_process(pooled, statistic)
    return (np.median(per_process, axis=1) * scale)[inverse]


def noise_stats(samples: np.ndarray, statistic: str = "median", executables: np.ndarray | None = None) -> dict:
    """Per-graph noise of a (K, P) sample matrix (module docstring): ratio, pairwise Spearman, flag;
    over distinct executables when ``executables`` is given (`pool_executables`)."""
    samples, _ = pool_executables(samples, executables)
    k, p = samples.shape
    per_process, _ = _per_process(samples, statistic)
    logs = np.log(per_process)
    label_sd = float(np.std(np.log(np.median(per_process, axis=1))))  # the log label up to a constant
    if p < 2:  # one process: no between-process noise to estimate
        ratio = float("nan")
    else:  # configurations all equal (label_sd 0) cannot be told apart at all
        within = float(np.median(np.std(logs, axis=1)))
        ratio = within / label_sd if label_sd > 0 else float("inf")
    pairs = [spearman(samples[:, a], samples[:, b]) for a, b in combinations(range(p), 2)]
    pairs = [x for x in pairs if np.isfinite(x)]
    return {"noise_ratio": round(ratio, 4) if np.isfinite(ratio) else ratio,
            "process_spearman_mean": round(float(np.mean(pairs)), 4) if pairs else float("nan"),
            "process_spearman_min": round(float(np.min(pairs)), 4) if pairs else float("nan"),
            "flagged": bool(p >= 2 and not ratio <= NOISE_RATIO_FLAG)}
