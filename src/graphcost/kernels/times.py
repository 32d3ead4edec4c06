"""Per-kernel times of a program's configurations: the records and how they are measured.

`KernelTime` (one kernel of one configuration: median self time per call over processes, and
where in the user's code it came from), `ConfigProfile` (a configuration's kernels, largest first,
and its coverage: the share of the call inside leaf kernels) and `ProgramProfile` (the
configurations of one program).

A profiled call is slower than a timed one (the profiler records every thunk), so each kernel is
stated as its share of the profiled call, and as that share of the TIMED call in ns
(`ConfigProfile.call_ns`): the call time shown, the kernels' times and their shares add up.

Measured two ways, with the kernel timing of the kernel collection
(`graphcost.measure.kernel_profile`, joined over processes by `graphcost.kernels.records.combine_profiles`,
level-median):

* `graphcost.tuning.crossproc.profile_cross_process`: P fresh processes time the configurations together,
  as the tuner's final check does, then each makes a profiled pass (`profile_of` joins them);
* `profile_in_process`: one profiled pass of compiled executables in THIS process (the tuner's
  trials, a program without a file reference).

Kernels are described from each configuration's optimized module (`graphcost.frontend.hlo.kernels`:
what each is, its executions per call); `compare` pairs two configurations' kernels by fingerprint
(the same computation on the same layout), then by name. `graphcost.workload.profile` (the
`graphcost profile` command) and the tuner's kernel report build on these.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from graphcost.guards.atomic import atomic_write_json
from graphcost.frontend.hlo.origins import Origin

@dataclass
class KernelTime:
    """One kernel of one configuration: median self time per call over processes (ns)."""

    name: str
    kind: str
    self_ns: float
    executions: int
    leaf: bool
    fingerprint: str = ""
    parent: str = ""
    origin: Origin = field(default_factory=Origin)  # the user's op names and source lines (HLO metadata)

    def to_json(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "origin"}, **self.origin.to_json()}


@dataclass
class ConfigProfile:
    """The kernels of one configuration, largest first."""

    label: str  # "default" or "tuned"
    runtime_ns: float  # timed (unprofiled) runtime, median over processes
    wall_ns: float  # profiled call, median over processes
    kernels: list[KernelTime] = field(default_factory=list)

    @property
    def coverage(self) -> float:
        """The share of the call inside leaf kernels (the rest: loop machinery, argument handling, dispatch)."""
        return sum(self.share(k) for k in self.kernels if k.leaf)

    @property
    def kernel_share(self) -> float:
        """The share of the call inside kernels, loops' own machinery included (Σ `share`)."""
        return sum(self.share(k) for k in self.kernels)

    @property
    def scale(self) -> float:
        """Timed call / profiled call: the profiler slows a call down, so a kernel's time is stated as
        its share of the profiled call times the timed call (`call_ns`); 1 without a profiled wall time."""
        ok = self.wall_ns > 0 and self.runtime_ns > 0 and np.isfinite(self.wall_ns) and np.isfinite(self.runtime_ns)
        return self.runtime_ns / self.wall_ns if ok else 1.0

    def share(self, k: KernelTime) -> float:
        """`k`'s share of the call: its self time over the profiled call's wall time (= `call_ns` / runtime_ns)."""
        if self.wall_ns > 0 and np.isfinite(self.wall_ns):
            return k.self_ns / self.wall_ns
        return k.self_ns / self.runtime_ns if self.runtime_ns > 0 else 0.0

    def call_ns(self, k: KernelTime) -> float:
        """`k`'s time in the timed call (ns): its share of the profiled call times `runtime_ns`, so kernel
        times, shares and the call time shown beside them add up."""
        return k.self_ns * self.scale

    def to_json(self) -> dict:
        return {"label": self.label, "runtime_ns": self.runtime_ns, "wall_ns": self.wall_ns,
                "coverage": round(self.coverage, 4), "kernel_share": round(self.kernel_share, 4),
                "kernels": [{**k.to_json(), "share": round(self.share(k), 4), "call_ns": round(self.call_ns(k), 1)}
                            for k in self.kernels]}


@dataclass
class ProgramProfile:
    program: str
    processes: int
    protocol: str  # "cross-process"
    configs: list[ConfigProfile]

    def to_json(self) -> dict:
        return {"program": self.program, "processes": self.processes, "protocol": self.protocol,
                "configs": [c.to_json() for c in self.configs]}

    def save(self, path: Path) -> None:
        atomic_write_json(self.to_json(), path, indent=1)


def compare(default: ConfigProfile, tuned: ConfigProfile) -> list[tuple[KernelTime | None, KernelTime | None]]:
    """Kernel pairs (default, tuned), by fingerprint then by name; a kernel only one side has is paired
    with None. Ordered by the larger of the two times."""
    pairs: list[tuple[KernelTime | None, KernelTime | None]] = []
    left = list(tuned.kernels)
    for k in default.kernels:
        match = next((t for t in left if k.fingerprint and t.fingerprint == k.fingerprint), None)
        match = match or next((t for t in left if t.name == k.name), None)
        if match is not None:
            left.remove(match)
        pairs.append((k, match))
    pairs += [(None, t) for t in left]
    return sorted(pairs, key=lambda p: -max(x.self_ns for x in p if x is not None))


def config_profiles(combined: dict, samples: np.ndarray, modules: list[dict], labels: list[str],
                    origins: list[dict[str, Origin]] | None = None) -> list[ConfigProfile]:
    """One `ConfigProfile` per configuration of `combine_profiles`'s `combined` rows: kernels described
    from `modules` (`optimized_kernels` of each configuration, in order), largest first; `samples`:
    (K, P) the timed runtimes of the same processes; `origins`: each configuration's
    `graphcost.frontend.hlo.origins.kernel_origins` (the user's op names and lines), when read."""
    out = []
    for c, label in enumerate(labels):
        kernels = []
        where = origins[c] if origins else {}
        for i in np.flatnonzero(combined["occ_config"] == c):
            nm = str(combined["occ_name"][i])
            k = modules[c].get(nm)
            kernels.append(KernelTime(nm, k.kind if k else "?", float(combined["occ_runtime_ns"][i]),
                                      int(combined["occ_count"][i]), bool(combined["occ_leaf"][i]),
                                      k.fingerprint if k else "", k.parent if k else "", where.get(nm, Origin())))
        kernels.sort(key=lambda k: -k.self_ns)
        out.append(ConfigProfile(label, float(np.median(samples[c])),
                                 float(np.median(combined["profile_wall_ns"][c])), kernels))
    return out


def profile_of(rem, modules: list[dict], labels: list[str], name: str,
               origins: list[dict[str, Origin]] | None = None) -> ProgramProfile:
    """The `ProgramProfile` of a re-measurement made with kernels (`crossproc.Remeasurement` with
    `profiles`): its processes' profiled passes joined (level-median over its timed runtimes)."""
    from graphcost.kernels.records import combine_profiles

    profiles = rem.profiles or []
    runtime = np.asarray(rem.runtime_ns, np.float64)  # (P, K)
    # one profiled pass of several in-process passes: its level is their median
    samples = runtime.T if len(profiles) == len(runtime) else np.median(runtime, axis=0)[:, None]  # (K, P')
    combined = combine_profiles(profiles, samples)
    configs = config_profiles(combined, samples, modules, labels, origins)
    return ProgramProfile(name, len(runtime), rem.protocol, configs)


def profile_in_process(name: str, executables: list, args: list, labels: list[str], runtime_ns: list[float],
                       target_ns: float = 30e6) -> ProgramProfile:
    """Profiles of compiled `executables` called on `args` in THIS process (a program without a file
    reference, the tuner's trials): one profiled pass; `runtime_ns` their timed runtimes (it sets
    how many calls are profiled, `kernel_profile.repeats_for`)."""
    from graphcost.frontend.programs.jax_program import optimized_kernels
    from graphcost.kernels.records import combine_profiles
    from graphcost.measure.kernel_profile import profiled_pass

    arrays = profiled_pass(executables, args, runtime_ns, target_ns)
    samples = np.asarray(runtime_ns, np.float64)[:, None]  # (K, 1)
    combined = combine_profiles([arrays], samples)
    modules = [optimized_kernels(e) for e in executables]
    return ProgramProfile(name, 1, "in-process", config_profiles(combined, samples, modules, labels))


def top_kernels(profile: ConfigProfile, n: int = 5) -> str:
    """One line: the `n` largest kernels and their share of the call, e.g.
    ``while.1 (while) 41%, ynn_fusion.2 (ynn fusion) 22%``."""
    return ", ".join(f"{k.name} ({k.kind}) {profile.share(k):.0%}" for k in profile.kernels[:n])
