"""Per-kernel times of a compiled XLA:CPU program, from JAX's profiler: one event per executed thunk.

XLA:CPU's thunk executor records, for every thunk it runs, a trace event named after the HLO
instruction of the optimized module (``ynn_fusion.2``, ``transpose_copy_fusion``, ``while.1``)
with the stat ``hlo_op``. A ``while`` / ``conditional`` / ``call`` thunk's event spans its body's
thunks, so a plain sum over events counts the body twice. `resolve_nesting` turns the events of one
call into kernels with their SELF time:

    self(e) = dur(e) - Σ_{c direct child of e} dur(c),        clipped at 0,

where c is a direct child of e when e is the shortest CONTROL-FLOW event (a ``while``,
``conditional`` or ``call`` thunk; `is_control_flow`) of the same call whose interval holds c's (any
thread: a body's thunks may run on another thread of the pool). Only control flow encloses: the
executor runs independent thunks side by side, so a library fusion's interval may hold another's
without being its parent. Leaf kernels (no child)
are the fusions, library calls and copies that do the work; a parent's self time is what its loop
or branch machinery adds. Σ_leaf + Σ_parent self = the time the thunks account for; the rest of a
call's wall time (argument handling, output allocation, the executor's own scheduling) is the
call's *overhead* (`KernelProfile.coverage` = leaf time / wall time).

`profile_calls` runs calls under one trace, each call inside a `jax.profiler.TraceAnnotation`
named ``graphcost:<config>:<repeat>``, and assigns each thunk event to the annotation whose
interval holds its start. `KernelProfile` is one configuration's result: per kernel the median over
calls of its per-call self time and its executions per call, and the median wall time per call.

Where it is used: the measuring processes of `graphcost collect --kernels` (a profiled pass after
the timed calls, so the program's own label is not perturbed), `graphcost profile` and the tuner.

References:
    [Kaufman] S. J. Kaufman et al. A Learned Performance Model for Tensor Processing Units. MLSys 2021.
        https://arxiv.org/abs/2008.01040 (§3: a program's cost is the sum of its kernels' costs)
"""

from __future__ import annotations

import glob
import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

ANNOTATION_PREFIX = "graphcost:"
END_PREFIX = "end: "  # the completion callback of an asynchronous thunk: not a kernel of its own


@dataclass(frozen=True)
class ThunkEvent:
    """One executed thunk: the HLO instruction it runs, when and for how long (ns, trace clock)."""

    name: str
    start_ns: float
    duration_ns: float

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.duration_ns


@dataclass(frozen=True)
class KernelCall:
    """One kernel within ONE call: its self time summed over its executions in that call."""

    name: str
    self_ns: float
    count: int
    leaf: bool
    parent: str = ""  # the enclosing kernel of its first execution ("" at the top level)


@dataclass
class KernelProfile:
    """One configuration's kernels over several calls (medians over calls; ns per call)."""

    wall_ns: float  # median wall time of one call (the annotation around it)
    calls: int
    kernels: dict[str, KernelCall] = field(default_factory=dict)  # name -> median self time, count

    @property
    def leaf_ns(self) -> float:
        return sum(k.self_ns for k in self.kernels.values() if k.leaf)

    @property
    def parent_ns(self) -> float:
        return sum(k.self_ns for k in self.kernels.values() if not k.leaf)

    @property
    def coverage(self) -> float:
        """Share of the wall time inside leaf kernels (0 when the wall time is unknown)."""
        return self.leaf_ns / self.wall_ns if self.wall_ns > 0 else 0.0

    def top(self, n: int = 10) -> list[KernelCall]:
        """The `n` kernels with the largest self time, largest first (leaves and parents)."""
        return sorted(self.kernels.values(), key=lambda k: -k.self_ns)[:n]


CONTROL_FLOW_PREFIXES = ("while", "conditional", "call")


def is_control_flow(name: str) -> bool:
    """Whether a thunk named `name` runs other thunks (XLA names an instruction after its opcode:
    ``while.3``, ``conditional``, ``call.1``); pass the module's own set to `resolve_nesting` when known."""
    head = name.split(".", 1)[0]
    return head in CONTROL_FLOW_PREFIXES


def resolve_nesting(events: Sequence[ThunkEvent], encloses: Callable[[str], bool] = is_control_flow
                    ) -> dict[str, KernelCall]:
    """The kernels of ONE call's thunk events, with self times (module docstring).

    An event's parent is the shortest enclosing event whose kernel `encloses` (control flow):
    events sorted by start (the longer first on a tie), a stack of the open control-flow intervals."""
    order = sorted(range(len(events)), key=lambda i: (events[i].start_ns, -events[i].duration_ns))
    parent = [-1] * len(events)
    stack: list[int] = []  # open control-flow intervals, outermost first
    for i in order:
        e = events[i]
        while stack and events[stack[-1]].end_ns < e.end_ns:
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        if encloses(e.name):
            stack.append(i)
    child_ns = [0.0] * len(events)
    has_child = [False] * len(events)
    for i, p in enumerate(parent):
        if p >= 0:
            child_ns[p] += events[i].duration_ns
            has_child[p] = True
    out: dict[str, KernelCall] = {}
    for i, e in enumerate(events):
        self_ns = max(0.0, e.duration_ns - child_ns[i])
        old = out.get(e.name)
        if old is None:
            out[e.name] = KernelCall(e.name, self_ns, 1, not has_child[i],
                                     events[parent[i]].name if parent[i] >= 0 else "")
        else:
            out[e.name] = KernelCall(e.name, old.self_ns + self_ns, old.count + 1, old.leaf and not has_child[i],
                                     old.parent)
    return out


def combine_calls(per_call: Sequence[dict[str, KernelCall]], walls: Sequence[float]) -> KernelProfile:
    """Medians over calls: each kernel's self time (0 in a call where it did not run) and count."""
    names: dict[str, KernelCall] = {}
    for call in per_call:
        for name, k in call.items():
            names.setdefault(name, k)
    kernels = {}
    for name, first in names.items():
        times = [c[name].self_ns if name in c else 0.0 for c in per_call]
        counts = [c[name].count if name in c else 0 for c in per_call]
        leaf = all(c[name].leaf for c in per_call if name in c)
        kernels[name] = KernelCall(name, float(statistics.median(times)), int(round(statistics.median(counts))),
                                   leaf, first.parent)
    return KernelProfile(float(statistics.median(walls)) if walls else 0.0, len(per_call), kernels)


def _stat(event, key: str):
    try:
        return dict(event.stats).get(key)
    except (AttributeError, TypeError, ValueError):
        return None


def read_trace(path: str | Path) -> tuple[list[tuple[str, float, float]], list[tuple[str, float, float]]]:
    """(annotations, thunks) of an ``.xplane.pb`` trace: ``(name, start_ns, duration_ns)`` each.

    Annotations are events whose name starts with ``graphcost:``; thunks are events with an
    ``hlo_op`` stat (their name is the HLO instruction), completion callbacks (``end: ...``)
    excluded."""
    from jax.profiler import ProfileData

    data = ProfileData.from_file(str(path))
    annotations, thunks = [], []
    for plane in data.planes:
        for line in plane.lines:
            for ev in line.events:
                name = ev.name
                if name.startswith(ANNOTATION_PREFIX):
                    annotations.append((name, float(ev.start_ns), float(ev.duration_ns)))
                elif not name.startswith(END_PREFIX):
                    op = _stat(ev, "hlo_op")
                    if op:
                        thunks.append((str(op), float(ev.start_ns), float(ev.duration_ns)))
    return annotations, thunks


def assign_to_calls(annotations: Iterable[tuple[str, float, float]], thunks: Iterable[tuple[str, float, float]]
                    ) -> dict[tuple[int, int], tuple[float, list[ThunkEvent]]]:
    """``{(config, repeat): (wall_ns, thunk events)}``: each thunk goes to the annotation
    ``graphcost:<config>:<repeat>`` whose interval holds its start (calls never overlap)."""
    spans = []
    for name, start, dur in annotations:
        parts = name[len(ANNOTATION_PREFIX):].split(":")
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            spans.append((start, start + dur, (int(parts[0]), int(parts[1]))))
    spans.sort()
    out: dict[tuple[int, int], tuple[float, list[ThunkEvent]]] = {key: (end - start, []) for start, end, key in spans}
    starts = [s[0] for s in spans]
    import bisect

    for name, start, dur in thunks:
        j = bisect.bisect_right(starts, start) - 1
        if j >= 0 and start <= spans[j][1]:
            out[spans[j][2]][1].append(ThunkEvent(name, start, dur))
    return out


def profiles_from_trace(path: str | Path) -> dict[int, KernelProfile]:
    """``{config: KernelProfile}`` of a trace written by `profile_calls`."""
    per_config: dict[int, list[tuple[float, dict[str, KernelCall]]]] = defaultdict(list)
    for (config, _), (wall, events) in sorted(assign_to_calls(*read_trace(path)).items()):
        per_config[config].append((wall, resolve_nesting(events)))
    return {c: combine_calls([k for _, k in calls], [w for w, _ in calls]) for c, calls in per_config.items()}


def profile_calls(calls: Sequence[Callable[[], object]], repeats: Sequence[int], warmup: int = 1,
                  block: Callable[[object], object] | None = None) -> dict[int, KernelProfile]:
    """Run ``calls[k]`` ``repeats[k]`` times under one profiler trace (after `warmup` untraced calls
    each) and return ``{k: KernelProfile}``. `block` waits for a call's result (default
    `jax.block_until_ready`)."""
    import jax

    block = block or jax.block_until_ready
    for call in calls:
        for _ in range(warmup):
            block(call())
    with tempfile.TemporaryDirectory(prefix="graphcost-profile-") as tmp:
        jax.profiler.start_trace(tmp)
        try:
            for k, call in enumerate(calls):
                for r in range(repeats[k]):
                    with jax.profiler.TraceAnnotation(f"{ANNOTATION_PREFIX}{k}:{r}"):
                        block(call())
        finally:
            jax.profiler.stop_trace()
        files = glob.glob(f"{tmp}/**/*.xplane.pb", recursive=True)
        if not files:
            raise RuntimeError("the JAX profiler wrote no trace (.xplane.pb)")
        return profiles_from_trace(files[0])


def repeats_for(runtime_ns: float, target_ns: float = 30e6, low: int = 3, high: int = 20) -> int:
    """Profiled calls for a program of `runtime_ns`: enough to fill `target_ns`, within [low, high]."""
    if not runtime_ns > 0:
        return low
    return int(min(high, max(low, round(target_ns / runtime_ns))))


def profiled_pass(executables: Sequence, args: Sequence, runtime_ns: Sequence[float], target_ns: float = 30e6) -> dict:
    """`profile_arrays` of one profiled pass over compiled `executables` called on `args`, each
    called `repeats_for(its runtime_ns, target_ns)` times."""
    import jax

    calls = [lambda e=e: e(*args) for e in executables]
    repeats = [repeats_for(t, target_ns) for t in runtime_ns]
    return profile_arrays(profile_calls(calls, repeats, block=jax.block_until_ready), len(calls))


# --- the arrays of a measuring process's profiled pass ----------------------------------------

def profile_arrays(profiles: dict[int, KernelProfile], configs: int) -> dict:
    """npz arrays of `profiles` (one row per (configuration, kernel)): ``kernel_config`` (M,) int64,
    ``kernel_name`` (M,) str, ``kernel_self_ns`` (M,) float64 (per call, all executions),
    ``kernel_count`` (M,) int64 (executions per call), ``kernel_leaf`` (M,) bool; per
    configuration ``profile_wall_ns`` (K,) float64 and ``profile_calls`` (K,) int64."""
    import numpy as np

    rows = [(c, k) for c in sorted(profiles) for k in sorted(profiles[c].kernels.values(), key=lambda k: k.name)]
    wall = np.full(configs, np.nan)
    calls = np.zeros(configs, np.int64)
    for c, p in profiles.items():
        wall[c], calls[c] = p.wall_ns, p.calls
    return {"kernel_config": np.asarray([c for c, _ in rows], np.int64),
            "kernel_name": np.asarray([k.name for _, k in rows], dtype=str),
            "kernel_self_ns": np.asarray([k.self_ns for _, k in rows], np.float64),
            "kernel_count": np.asarray([k.count for _, k in rows], np.int64),
            "kernel_leaf": np.asarray([k.leaf for _, k in rows], bool),
            "profile_wall_ns": wall, "profile_calls": calls}


PROFILE_KEYS = ("kernel_config", "kernel_name", "kernel_self_ns", "kernel_count", "kernel_leaf", "profile_wall_ns",
                "profile_calls")
