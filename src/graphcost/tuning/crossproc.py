"""The final check of a tuning run: the best configurations against the default, timed in P
fresh worker processes (the cross-process protocol `graphcost collect` labels its data with: one
process's timings agree with themselves far better than with another process's).

Each worker (``python -m graphcost.tuning.worker``) rebuilds the program from its reference
(`graphcost.tuning.program`), compiles the default and the candidates itself (through JAX's
persistent compilation cache, so only the first process pays the compile), and times them with
the interleaved protocol (`graphcost.frontend.measure.interleaved`). Per process p and candidate k the
speedup is ``default runtime / candidate runtime``; the reported speedup is the median over
processes and the spread their min..max. A program given as a Python object (the API's
``graphcost.tuning(fn, *args)``) cannot be rebuilt in another process: it is timed in P
independent passes in this process instead, and the result says so.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from graphcost.atomic import atomic_write_json
from graphcost.frontend.measure.interleaved import Protocol, measure_executables
from graphcost.frontend.measure.cross_process import run_child
from graphcost.tuning.space import Codes


@dataclass
class Remeasurement:
    """Runtimes of [default, *candidates] in each of P processes (or passes)."""

    runtime_ns: np.ndarray  # (P, K) float64, column 0 = the default
    protocol: str  # "cross-process" or "in-process"
    compile_s: list[float]  # per process: compile time of all K configurations

    @property
    def speedups(self) -> np.ndarray:
        """(P, K-1) default runtime / candidate runtime, per process."""
        return self.runtime_ns[:, :1] / self.runtime_ns[:, 1:]

    def to_json(self) -> dict:
        return {"runtime_ns": self.runtime_ns.tolist(), "protocol": self.protocol, "compile_s": self.compile_s,
                "speedup_median": np.median(self.speedups, axis=0).tolist(),
                "speedup_min": self.speedups.min(axis=0).tolist(), "speedup_max": self.speedups.max(axis=0).tolist()}


def remeasure_cross_process(program_ref: str, space: str, configs: list[Codes], processes: int, protocol: Protocol,
                            allow_fast_math: bool = False, cache_dir: str | Path | None = None,
                            timeout: float = 900.0) -> Remeasurement:
    """Time `configs` (configs[0] = the default) in `processes` fresh worker processes, one after another."""
    rows, compile_s = [], []
    with tempfile.TemporaryDirectory(prefix="graphcost-remeasure-") as tmp:
        for p in range(processes):
            req, res = Path(tmp) / f"req{p}.json", Path(tmp) / f"res{p}.json"
            atomic_write_json({
                "program": program_ref, "space": space, "allow_fast_math": allow_fast_math,
                "configs": [list(c) for c in configs], "cache_dir": str(cache_dir) if cache_dir else None,
                "protocol": asdict(replace(protocol, seed=protocol.seed + 7 * p))}, req)
            # killed with the tune (a killed tune leaves no worker behind), without JAX's fork warning
            proc = run_child([sys.executable, "-m", "graphcost.tuning.worker", str(req), str(res)], timeout)
            if proc.returncode != 0 or not res.exists():
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"measuring worker {p} failed (exit {proc.returncode}): {last}")
            out = json.loads(res.read_text())
            rows.append(out["runtime_ns"])
            compile_s.append(out["compile_s"])
    return Remeasurement(np.array(rows, np.float64), "cross-process", compile_s)


def remeasure_in_process(evaluator, configs: list[Codes], passes: int, protocol: Protocol) -> Remeasurement:
    """Fallback for programs without a reference: `passes` independent interleaved passes here."""
    import time

    t0 = time.perf_counter()
    exes = [evaluator.compile(c) for c in configs]
    compile_s = time.perf_counter() - t0
    rows = [measure_executables(exes, evaluator.program.flat_args, replace(protocol, seed=protocol.seed + 7 * p)).runtime_ns
            for p in range(passes)]
    return Remeasurement(np.array(rows, np.float64), "in-process", [compile_s] + [0.0] * (passes - 1))
