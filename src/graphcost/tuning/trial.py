"""Compile, check and time a batch of configurations of one program, in this process.

For a batch of configurations (`Evaluator.evaluate`):

1. all are compiled, `compile_workers` at a time (`Space.lower` + its compiler options); an XLA
   error, any exception, or a compile slower than `compile_timeout` seconds records the
   configuration as failed;
2. its outputs on the example arguments are compared with the DEFAULT configuration's:
   same tree, shapes and dtypes; integers and booleans equal; floats within

       |x - ref| <= atol * max(1, max|ref|) + max(rtol, 2 eps) * |ref| + NOISE_MARGIN * floor

   elementwise; a non-finite value matches only the same value (the same infinity, NaN where
   the reference is NaN). A configuration that disagrees is rejected as ``wrong_output``: the
   tuner never returns a faster but wrong program. The default is first compared with itself
   (a second call): a program whose own outputs change from call to call is refused
   (`NondeterministicProgram`) instead of every configuration failing.
   ``floor`` is the default's own sensitivity to rounding (`noise_floor`): the largest change of
   each output element when every floating-point argument is multiplied by 1 ± NOISE_ULPS eps
   (NOISE_PROBES random sign patterns). A compiler configuration only reorders and fuses
   arithmetic, and its effect is of the order of such a perturbation (backward stability: a
   reduction of n terms summed in another order is the exact sum of terms perturbed by up to
   (n - 1) eps, in practice about √n eps; hence 32 ulps, not 1). An element that the default
   itself cannot compute to better than its floor is not held to rtol. This lets training steps
   through: Adam's update m / (√v + ε) of a parameter whose gradient is zero in exact arithmetic
   (an attention key bias) is rounding noise under every configuration, and held to rtol it
   rejected 136 of the 192 flag configurations of a BERT training step. Integer outputs that
   change under the perturbation (an argmax over near-ties) are not compared. Arguments narrower
   than 32 bits (bfloat16, float16) are not perturbed (an ulp of theirs is a change of data, not
   of rounding); instead no output is held to better than 2 ulps of its own dtype (rtol is at
   least 2 eps: 0.016 for bfloat16);
3. a probe (fastest of 3 calls) longer than `slow_limit` times the default's is recorded as ``too_slow``;
4. the survivors are timed together WITH the default configuration by the interleaved protocol
   (`graphcost.measure.interleaved.measure_interleaved`), and each gets
   ``ratio = runtime / default runtime`` from the same batch, so a change of machine load between
   batches cancels out of the ratio.

Identical executables are measured once (with `cache_dir`): every compile goes through JAX's
persistent cache there (the final check's processes then load the same entries), and each
configuration's executable is fingerprinted from its cache entry
(`graphcost.frontend.programs.executable_fingerprint`: the optimized module, the thunks and the
machine code). A configuration whose executable is the default's, or one timed before in this run,
or an earlier one of the same batch, is not checked or timed again: its trial (status ``copy``) copies
that measurement (the default's: ratio 1) and says so in ``extra["same_executable_as"]`` (the codes it
copies, or ``"default"``); the tuner does not count it against the budget. Two configurations that
differ in an option that may act at run time (`RUN_TIME_OPTIONS`) are never copies of each other.
Options that change nothing in a given program are common (the zoo's
flag collection: a median 16 distinct executables of 16 configurations, as few as 10).

Racing (``again``): configurations measured before (the search's best so far) can be timed again in
the same interleaved batch, without a compile while their executable is still held (the last
`KEEP_EXECUTABLES` that passed the check are). One batch can be off by several percent for every
configuration in it (``benchmarks/lab/diagnose_search_noise.py``: two batches of the same executables in
one process differ by a log-ratio standard deviation of 0.05 over six suite programs, as much as
two fresh processes do); the best of many single timings is biased up by that much. A configuration
timed n times is estimated by the geometric mean of its n ratios (`pooled_ratio`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from graphcost.errors import GraphcostError
from graphcost.measure.interleaved import TimingProtocol, measure_executables
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import Codes, Space

OK = "ok"
FAILED = ("compile_error", "runtime_error", "wrong_output", "too_slow", "timeout")
RETIMED = "retimed"  # a configuration measured before, timed again (racing): not a new trial of the budget
# a configuration whose executable was timed before (the default's, or another trial's): its trial copies that
# timing, says which in extra["same_executable_as"], and uses no budget (nothing new was measured)
COPY = "copy"
MEASURED = (OK, COPY)  # trials with a ratio: what a strategy learns from
KEEP_EXECUTABLES = 16  # executables of checked configurations held for racing (the most recently used)
NOISE_PROBES = 16  # perturbed calls of the default that measure its sensitivity to rounding
NOISE_ULPS = 32.0  # relative size of that perturbation, in machine epsilons of each argument's dtype (module docstring)
NOISE_MARGIN = 4.0  # a configuration may differ from the default by this many times the floor
# Options that may act when the executable runs rather than in its code (the executable fingerprint cannot see
# them): two configurations that differ in one are never copies of each other. The Eigen thread pool showed no
# effect on this project's machines, but a 6-7x win with it off was reported on a loop of small kernels elsewhere.
RUN_TIME_OPTIONS = ("xla_cpu_multi_thread_eigen",)


class NondeterministicProgram(GraphcostError, ValueError):
    """The program's default configuration gives different outputs on two calls with the same arguments."""


@dataclass
class Trial:
    """One measured (or failed) configuration."""

    codes: Codes
    status: str  # "ok" or one of FAILED
    ratio: float | None = None  # runtime / default runtime, same batch; < 1 = faster than default
    # (with racing, `Study.trials` gives the geometric mean over its timings, `extra["ratios"]`)
    runtime_ns: float | None = None
    default_ns: float | None = None
    error: str = ""
    strategy: str = ""
    round: int = 0
    number: int = 0  # position in its strategy's sequence of measurements (0-based)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["codes"] = list(self.codes)
        return d


def compile_config(program: TuneProgram, space: Space, codes: Codes):
    """The executable of `program` under configuration `codes` of `space`."""
    from graphcost.frontend.programs.jax_program import compile_lowered

    return compile_lowered(space.lower(program, codes), space.compiler_options(codes))


def pooled_ratio(ratios: Sequence[float]) -> float:
    """The estimate of a configuration timed n times: exp(mean_i log ratio_i), the geometric mean."""
    return float(np.exp(np.mean(np.log(np.asarray(ratios, np.float64)))))


def _leaves(out) -> tuple[list[np.ndarray], list[str]]:
    """The output's arrays and their pytree paths (e.g. "['y']", "[0]")."""
    import jax

    pairs = jax.tree_util.tree_leaves_with_path(out)
    return [np.asarray(x) for _, x in pairs], [jax.tree_util.keystr(p) or "output" for p, _ in pairs]


def is_float(dtype) -> bool:
    """Floating point or complex, bfloat16 and the other ml_dtypes included (numpy's own
    `issubdtype` does not know them)."""
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.inexact))


def _as_wide(x: np.ndarray) -> np.ndarray:
    """float64 (complex128 for complex) copy of a floating-point array, for exact differences."""
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def perturbed(args: list, rng: np.random.Generator, ulps: float = NOISE_ULPS) -> list:
    """`args` with every floating-point array of >= 32 bits multiplied elementwise by 1 ± ulps · eps(dtype),
    random signs (module docstring)."""
    import jax.numpy as jnp

    out = []
    for a in args:
        x = np.asarray(a)
        if not is_float(x.dtype) or x.size == 0 or jnp.finfo(x.dtype).bits < 32:
            out.append(a)
            continue
        real = jnp.finfo(x.dtype).dtype  # the real dtype of the same precision (float32 for complex64)
        signs = rng.choice(np.array([-1.0, 1.0]), size=x.shape)
        out.append(x * (1.0 + ulps * float(jnp.finfo(x.dtype).eps) * signs).astype(real))
    return out


def noise_floor(call, args: list, ref: list[np.ndarray], probes: int = NOISE_PROBES, ulps: float = NOISE_ULPS,
                seed: int = 0) -> list[np.ndarray]:
    """Per output leaf, (same shape) float64: the largest |out - ref| over `probes` calls of `call` on
    `perturbed` arguments (module docstring). Integer leaves: +inf where any probe changed the value,
    0 elsewhere; a floating-point element that became non-finite: +inf."""
    rng = np.random.default_rng(seed)
    floor = [np.zeros(r.shape, np.float64) for r in ref]
    for _ in range(probes):
        outs = call(perturbed(args, rng, ulps))
        for f, g, r in zip(floor, outs, ref):
            if g.shape != r.shape:
                continue
            if not is_float(r.dtype):
                f[g != r] = np.inf
                continue
            with np.errstate(invalid="ignore", over="ignore"):
                d = np.array(np.abs(_as_wide(g) - _as_wide(r)), dtype=np.float64, ndmin=0)  # 0-d stays an array
            d[np.isfinite(r) & ~np.isfinite(g)] = np.inf
            np.fmax(f, d, out=f)  # fmax: a NaN difference (NaN in both, the same inf) leaves the floor
    return floor


def compare_outputs(got: list[np.ndarray], ref: list[np.ndarray], rtol: float, atol: float,
                    names: list[str] | None = None, floor: list[np.ndarray] | None = None) -> str:
    """'' when `got` matches `ref` (rule in the module docstring; `floor` from `noise_floor`, None
    for none), else what differs, in one line."""
    if len(got) != len(ref):
        return f"{len(got)} outputs, the default has {len(ref)}"
    for i, (g, r) in enumerate(zip(got, ref)):
        f = floor[i] if floor is not None else np.zeros(r.shape, np.float64)
        i = f"{names[i]}" if names else i
        if g.shape != r.shape or g.dtype != r.dtype:
            return f"output {i}: {g.dtype}{list(g.shape)}, the default gives {r.dtype}{list(r.shape)}"
        if not is_float(r.dtype):
            differ = (g != r) & ~np.isinf(f)
            if differ.any():
                return f"output {i}: {int(differ.sum())} of {r.size} values differ from the default's"
            continue
        import jax.numpy as jnp

        leaf_rtol = max(rtol, 2.0 * float(jnp.finfo(r.dtype).eps))  # 2 ulps of the output's own dtype at least
        g64, r64 = _as_wide(g), _as_wide(r)
        finite = np.isfinite(r64)
        scale = float(np.max(np.abs(r64[finite]))) if finite.any() else 1.0
        finite_pair = np.isfinite(g64) & finite
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(g64 - r64)  # NaN where both are the same infinity
            bad = ~(diff <= atol * max(1.0, scale) + leaf_rtol * np.abs(np.where(finite, r64, 0.0)) + NOISE_MARGIN * f)
        # a non-finite value on either side matches only the same infinity, or a NaN where the default has NaN
        same = (g64 == r64) | (np.isnan(g64) & np.isnan(r64))
        bad = np.where(finite_pair, bad, ~same)
        if bad.any():
            worst = float(np.nanmax(np.where(bad, diff, 0.0))) if np.isfinite(diff[bad]).any() else float("nan")
            return (f"output {i}: {int(bad.sum())} of {r.size} values differ from the default's "
                    f"(max |diff| {worst:.3g}; rtol {leaf_rtol:g}, atol {atol:g} x max|default| {scale:.3g}, "
                    f"+ {NOISE_MARGIN:g} x the default's own rounding noise)")
    return ""


class Evaluator:
    """Compiles, checks and times configurations of `program` in `space` (module docstring)."""

    def __init__(self, program: TuneProgram, space: Space, protocol: TimingProtocol = TimingProtocol(),
                 rtol: float = 1e-3, atol: float = 1e-5, compile_timeout: float = 300.0, slow_limit: float = 20.0,
                 compile_workers: int = 2, profile_kernels: bool = False, cache_dir: str | Path | None = None):
        self.program, self.space, self.protocol = program, space, protocol
        self.profile_kernels, self.cache_dir = profile_kernels, cache_dir
        self.fingerprints: dict[Codes, str] = {}  # codes -> fingerprint of its executable (with a cache_dir)
        self.measured_as: dict[str, Trial | None] = {}  # fingerprint -> the trial timed with it (None: the default's)
        self.rtol, self.atol, self.compile_timeout, self.slow_limit = rtol, atol, compile_timeout, slow_limit
        self.compile_workers = max(1, compile_workers)
        default = space.default()
        t0 = time.perf_counter()
        with self._fingerprinting():
            self.default_exe = self._compile_noted(default)  # the reference: errors here are the user's program's own
        self.default_compile_s = time.perf_counter() - t0  # what a measuring process's deadline is scaled from
        if default in self.fingerprints:
            self.measured_as[self.fingerprints[default]] = None
        self.reference, self.output_names = _leaves(self.call(self.default_exe))
        self._check_default_is_deterministic()
        self.floor = noise_floor(lambda args: _leaves(self.call(self.default_exe, args))[0],
                                 list(program.flat_args), self.reference)
        self.default_probe_ns = self._probe(self.default_exe)
        self.checked: OrderedDict[Codes, Any] = OrderedDict()  # codes -> executable that passed `check`

    def _check_default_is_deterministic(self) -> None:
        """The default compared with itself first: a program whose own outputs change from call
        to call (an unseeded random source, a host callback) would make every configuration fail the
        output check as ``wrong_output``; NondeterministicProgram says so once instead."""
        again, _ = _leaves(self.call(self.default_exe))
        diff = compare_outputs(again, self.reference, self.rtol, self.atol, self.output_names)
        if diff:
            raise NondeterministicProgram(
                f"{self.program.name}: the default configuration itself gives different outputs from call to call "
                f"({diff}), so no configuration can be checked against it; make the program deterministic (a "
                "fixed PRNG key, no random host callbacks) or loosen --rtol / --atol")
        self.batches = 0

    def compile(self, codes: Codes):
        return compile_config(self.program, self.space, codes)

    def _fingerprinting(self):
        """Within the block, compiles go through the persistent cache in `cache_dir` and note their
        cache keys (`executable_fingerprint.recording_cache_keys`); without a cache_dir, nothing."""
        from contextlib import ExitStack

        stack = ExitStack()
        if self.cache_dir is not None:
            from graphcost.frontend.programs.compile import persistent_cache
            from graphcost.frontend.programs.executable_fingerprint import recording_cache_keys

            stack.enter_context(persistent_cache(self.cache_dir))
            stack.enter_context(recording_cache_keys())
        return stack

    def _compile_noted(self, codes: Codes):
        """`compile`, noting the executable's fingerprint in `fingerprints` (inside `_fingerprinting`)."""
        exe = self.compile(codes)
        if self.cache_dir is not None:
            from graphcost.frontend.programs.executable_fingerprint import cached_fingerprint

            fp = cached_fingerprint()  # the cache entry this thread's compile looked up
            if fp is not None:
                options = self.space.compiler_options(codes)
                acting = [f"{k}={options[k]}" for k in RUN_TIME_OPTIONS if k in options]
                self.fingerprints[codes] = ";".join([fp, *acting])
        return exe

    def call(self, exe, args: list | None = None):
        """`exe` on the program's example arguments (or `args`), finished."""
        import jax

        return jax.block_until_ready(exe(*(self.program.flat_args if args is None else args)))

    def _probe(self, exe, calls: int = 3) -> float:
        """Fastest of `calls` calls, in ns (a rough guard against pathological configurations)."""
        best = float("inf")
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            self.call(exe)
            best = min(best, float(time.perf_counter_ns() - t0))
        return best

    def compile_many(self, batch: list[Codes]) -> list[Any]:
        """Compile `batch` with `compile_workers` threads (XLA compiles release the GIL; nothing is
        timed meanwhile). Each entry: the executable, or the failed Trial."""
        pool = ThreadPoolExecutor(max_workers=self.compile_workers)
        out: list[Any] = []
        with self._fingerprinting():
            futures = [pool.submit(self._compile_noted, c) for c in batch]
            for codes, future in zip(batch, futures):
                try:
                    out.append(future.result(timeout=self.compile_timeout))
                except FutureTimeout:
                    out.append(Trial(codes, "timeout", error=f"compile took longer than {self.compile_timeout:g} s"))
                except Exception as exc:  # noqa: BLE001 - any compiler error is this configuration's failure
                    out.append(Trial(codes, "compile_error", error=_one_line(exc)))
        pool.shutdown(wait=False, cancel_futures=True)  # a stuck compile keeps its thread, not the tuner
        return out

    def executables(self, batch: list[Codes]) -> list[Any]:
        """`compile_many`'s executables, None where a configuration failed to compile: what a scorer that knows
        no `Trial` is given (`graphcost.kernels.scoring.KernelModelScorer`)."""
        return [None if isinstance(exe, Trial) else exe for exe in self.compile_many(batch)]

    def compiled_stats(self, batch: list[Codes]) -> np.ndarray:
        """(K, 7) what the compiler did to each configuration of `batch` (`graphcost.frontend.hlo.
        compiled_stats`), compiled like `compile_many` and nothing run; NaN rows where it failed."""
        from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS
        from graphcost.frontend.programs.jax_program import executable_stats

        out = np.full((len(batch), len(COMPILED_STATS)), np.nan)
        for i, exe in enumerate(self.compile_many(batch)):
            if not isinstance(exe, Trial):
                try:
                    out[i] = executable_stats(exe)
                except Exception:  # noqa: BLE001 - an unreadable module: this candidate goes uninformed
                    pass
        return out

    def check(self, codes: Codes, exe) -> Trial | None:
        """None when the compiled `codes` may be timed, else the failed Trial (output check, probe)."""
        try:
            got, _ = _leaves(self.call(exe))
            probe = self._probe(exe)
        except Exception as exc:  # noqa: BLE001
            return Trial(codes, "runtime_error", error=_one_line(exc))
        diff = compare_outputs(got, self.reference, self.rtol, self.atol, self.output_names, self.floor)
        if diff:
            return Trial(codes, "wrong_output", error=diff)
        if probe > self.slow_limit * max(self.default_probe_ns, 1.0):
            return Trial(codes, "too_slow", error=f"one call took {probe / self.default_probe_ns:.1f}x the "
                                                  f"default's (limit {self.slow_limit:g}x)")
        return None

    def _keep(self, codes: Codes, exe) -> None:
        """Hold `exe` for racing; the least recently used beyond KEEP_EXECUTABLES is let go."""
        self.checked[codes] = exe
        self.checked.move_to_end(codes)
        while len(self.checked) > KEEP_EXECUTABLES:
            self.checked.popitem(last=False)

    def evaluate(self, batch: list[Codes], again: Sequence[Codes] = ()) -> list[Trial]:
        """One Trial per configuration of `batch`, in order, then one per configuration of `again`
        (measured before, timed again in the same batch: status RETIMED, or the failure if it fails
        now); module docstring."""
        work = [*batch, *again]
        trials: list[Trial | None] = [None] * len(work)
        timed: list[tuple[int, Any]] = []
        held = {i: self.checked[c] for i, c in enumerate(again, len(batch)) if c in self.checked}  # checked before
        todo = [i for i in range(len(work)) if i not in held]
        compiled = dict(zip(todo, self.compile_many([work[i] for i in todo])))
        first_in_batch: dict[str, int] = {}  # fingerprint -> the index timed for it in this batch
        copies: list[tuple[int, int]] = []  # (index, index of the trial it copies)
        for i, codes in enumerate(work):
            fp = self.fingerprints.get(codes) if i < len(batch) and not isinstance(compiled.get(i), Trial) else None
            if fp is not None and fp in self.measured_as:  # the default's executable, or one timed before
                trials[i] = same_executable(codes, self.measured_as[fp], self.default_probe_ns)
                continue
            if fp is not None and fp in first_in_batch:
                copies.append((i, first_in_batch[fp]))
                continue
            if i in held:
                exe, failed = held[i], None
            else:
                exe = compiled[i]
                failed = exe if isinstance(exe, Trial) else self.check(codes, exe)
            if failed is not None:
                trials[i] = failed
            else:
                timed.append((i, exe))
                self._keep(codes, exe)
                if fp is not None:
                    first_in_batch[fp] = i
        if timed:
            exes = [self.default_exe] + [e for _, e in timed]
            protocol = replace(self.protocol, seed=self.protocol.seed + 1009 * self.batches)
            m = measure_executables(exes, self.program.flat_args, protocol)
            default_ns = float(m.runtime_ns[0])
            for (i, _), rt in zip(timed, m.runtime_ns[1:]):
                trials[i] = Trial(work[i], OK if i < len(batch) else RETIMED, ratio=float(rt) / default_ns,
                                  runtime_ns=float(rt), default_ns=default_ns)
            if self.profile_kernels:
                self._profile([(i, e) for i, e in timed if i < len(batch)], trials)
            for fp, i in first_in_batch.items():
                self.measured_as.setdefault(fp, trials[i])
        for i, j in copies:  # after the timing: what its twin (timed, so OK) measured
            trials[i] = same_executable(work[i], trials[j], self.default_probe_ns)
        self.batches += 1
        return trials  # type: ignore[return-value]


    def _profile(self, new: list[tuple[int, Any]], trials: list) -> None:
        """Profiled trials: a profiled pass over the newly timed executables, after their timing (so it
        does not perturb it); each trial's ``extra["kernels"]``: `graphcost.kernels.report.kernel_rows` of its
        profile. A profiler failure costs the kernel times, never the measurement."""
        if not new:
            return
        from graphcost.kernels.report import kernel_rows
        from graphcost.kernels.times import profile_in_process

        try:
            prof = profile_in_process(self.program.name, [e for _, e in new], list(self.program.flat_args),
                                      [str(i) for i, _ in new], [trials[i].runtime_ns for i, _ in new],
                                      target_ns=PROFILE_TARGET_NS)
        except Exception as exc:  # noqa: BLE001 - the trials stand without their kernels
            import logging

            logging.getLogger(__name__).warning(f"the profiled pass of this round failed ({_one_line(exc)}); "
                                                "its trials keep their timings without kernel times")
            return
        for (i, _), config in zip(new, prof.configs):
            trials[i].extra["kernels"] = kernel_rows(config)
            trials[i].extra["profile_wall_ns"] = round(config.wall_ns, 1)


def same_executable(codes: Codes, twin: Trial | None, default_ns: float) -> Trial:
    """The trial of `codes`, whose executable is `twin`'s (None: the default's), copied, not timed (status COPY)."""
    if twin is None:
        return Trial(codes, COPY, ratio=1.0, runtime_ns=default_ns, default_ns=default_ns,
                     extra={"same_executable_as": "default"})
    kept: dict[str, Any] = {k: twin.extra[k] for k in ("kernels", "profile_wall_ns") if k in twin.extra}
    return Trial(codes, COPY, ratio=twin.ratio, runtime_ns=twin.runtime_ns, default_ns=twin.default_ns,
                 extra={**kept, "same_executable_as": list(twin.codes)})


PROFILE_TARGET_NS = 10e6  # profiled calls of a trial: enough to fill 10 ms (3 at least, 20 at most)


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
