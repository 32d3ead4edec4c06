"""Ranking a compilable program's flag configurations through its kernels (`graphcost rank PROGRAM`).

    ranking = rank_configs(fn, *args, configs=16)        # from Python: any JAX function and example arguments
    ranking = rank_program("prog.py:make", configs=16)   # a program reference (a FILE.py:make, an XLA module)
    best = ranking.flags[ranking.order[0]]               # the FlagConfig predicted fastest
    jax.jit(fn, compiler_options=best.compiler_options())

For each configuration (`rank_flag_configs`: drawn as `graphcost tune` draws its candidates, over the
same flag space, the fast-math family only when allowed; row 0 the default), the program is compiled
(threads over the cores; configurations whose optimized modules are identical are split into kernels
once), its optimized module split into kernels (`graphcost.frontend.hlo.kernels`, loop trip counts read
off the module), costed by the kernel model (`graphcost.kernels.model.KernelCostModel`) and
ranked by its blend with the flag trees (`KernelCostModel.rank_scores`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from graphcost.kernels.model import CostedConfig, KernelCostModel
from graphcost.frontend.programs.executable_fingerprint import module_digest


@dataclass
class KernelRanking:
    """A program's flag configurations costed through their kernels."""

    costed: list[CostedConfig]  # per configuration, in `flags` order: predicted seconds, kernels, compile time
    flags: list  # the `FlagConfig`s (row 0 the default)
    scores: np.ndarray  # (K,) what the ranking orders by, lower = predicted faster (`KernelCostModel.rank_scores`)
    program: Any  # the prepared `TuneProgram` (`rank_configs`); None from `rank_program`: never loaded here
    model: KernelCostModel
    check: Any = None  # a program by reference: what its check in a child process measured (`ProgramCheck`)
    measured: np.ndarray | None = None  # (K,) runtimes in ns timed here (`rank_program(measure=True)`), else None

    @property
    def order(self) -> np.ndarray:
        """(K,) configuration indices, predicted fastest first."""
        return np.argsort(self.scores, kind="stable")

    @property
    def seconds(self) -> np.ndarray:
        """(K,) the kernel sum's predicted seconds per call."""
        return np.asarray([c.seconds for c in self.costed], np.float64)

    def changed_options(self, i: int) -> dict[str, Any]:
        """Configuration `i`'s XLA options that differ from the default's (row 0), by XLA's names and values as
        `FlagConfig.compiler_options` gives them: what `graphcost tune` prints and best.json stores."""
        default = self.flags[0].compiler_options()
        return {k: v for k, v in self.flags[i].compiler_options().items() if k not in default or default[k] != v}

    def options(self, i: int) -> dict[str, Any]:
        """Every XLA option the installed jaxlib knows, at configuration `i`'s value (XLA's names and values)."""
        from graphcost.frontend.programs.flags import known_options

        values = self.flags[i].values
        return {o.candidate.option: o.value(values[o.candidate.column]) for o in known_options()}


def rank_configs(fn: Callable, *args, configs: int = 16, seed: int = 0, model: KernelCostModel | None = None,
                 workers: int = 2, name: str | None = None, allow_fast_math: bool = False) -> KernelRanking:
    """Cost `configs` flag configurations of ``fn(*args)`` (the default first, then a seeded sample of
    the flag space `graphcost.tune` searches, `rank_flag_configs`) with the kernel model (default: the
    shipped one) and rank them. `allow_fast_math`: the fast-math family too, as ``tune --allow-fast-math``.

    Raises:
        graphcost.guards.bounds.ArgumentError: `configs`, `seed` or `workers` out of range, `fn` not callable, a `name`
            that is not a string, a `model` that is not a KernelCostModel, an `allow_fast_math` that is not a bool.
        graphcost.frontend.programs.user_program.ProgramError: JAX cannot trace `fn` on `args` (one line)."""
    from graphcost.guards.bounds import ArgumentError
    from graphcost.tuning.arguments import check_fn
    from graphcost.frontend.programs.user_program import prepare_program

    check_fn(fn)
    configs, seed, workers = _check_arguments(configs, seed, workers, model, allow_fast_math)
    if name is not None and not isinstance(name, str):
        raise ArgumentError(f"name must be a string or None, got {name!r} ({type(name).__name__})")
    program = prepare_program(fn, args, str(name or getattr(fn, "__name__", "program")))
    return _rank(program, configs, seed, model or KernelCostModel.load(), workers, allow_fast_math)


def rank_program(ref: str, configs: int = 16, seed: int = 0, model: KernelCostModel | None = None,
                 workers: int = 2, call: bool = False, allow_fast_math: bool = False, *,
                 inputs: str | Path | None = None, measure: bool = False, names: Mapping[str, str] | None = None,
                 say: Callable[[str], None] | None = None,
                 ranked: Callable[[KernelRanking], None] | None = None) -> KernelRanking:
    """`rank_configs` of the program `ref` (``FILE.py:FUNCTION``, ``MODULE:FUNCTION`` or an XLA module;
    `graphcost.frontend.programs.user_program.load_program`): `graphcost rank PROGRAM`'s one library verb.

    The program is someone else's code, and it never runs in this process: it is first prepared (and with
    `call`, called once: what a caller that then times it with `measure_ranking` needs) in a child process
    under deadlines (`graphcost.measure.program_check`), so a ``make()`` that hangs or aborts is a ProgramError
    naming it, not a hang or the end of this process; then another fresh process compiles and costs its
    configurations (`cost_job`, through `graphcost.measure.child_call`) under a deadline scaled from that
    check, so a compile that crashes, runs out of memory or never ends is a RuntimeError naming it. The
    reference is checked once here, the kernel model loaded once here (default: the shipped one; a given
    `model` must have been loaded from its directory, which the costing process loads) and the
    configurations drawn once here (the costing process draws the same ones from the same seed).

    inputs: an XLA module's arguments (an npz). measure: also time every costed configuration in a fresh
    process (`measure_ranking`, after the check's call), into ``ranking.measured``. names: an argument's name
    as the caller's user knows it in the messages (``graphcost rank`` passes ``{"configs": "--configs", ...}``).
    say: where the notes go (which module of a dump directory, which kernel model ranks). ranked: called with
    the ranking as soon as it is costed, before it is measured. workers: compiles at once, fewer where the
    machine's free memory does not take that many at what the check's compile took
    (`ProgramCheck.parallel_compiles`)."""
    from graphcost.guards.bounds import ArgumentError, renamed
    from graphcost.frontend.programs import hlo_program
    from graphcost.measure.child_call import run_in_child
    from graphcost.measure.program_check import check_program

    if isinstance(ref, str):  # any other is refused by the check below, naming it
        ref = hlo_program.with_inputs(ref, inputs)
        if say is not None and (note := hlo_program.picked(ref)):
            say(note)
    try:
        configs, seed, workers = _check_arguments(configs, seed, workers, model, allow_fast_math)
        for key, flag in (("call", call), ("measure", measure)):
            if not isinstance(flag, bool):
                raise ArgumentError(f"{key} must be True or False, got {flag!r}")
        if model is not None and not Path(model.trained_on).is_dir():
            raise ArgumentError(f"model: the costing process loads the model from its directory, and "
                                f"{model.trained_on!r} is none (a model from KernelCostModel.load(DIR), or None)")
    except ArgumentError as exc:
        raise ArgumentError(renamed(str(exc), names)) from None
    if model is None:
        model = KernelCostModel.load()
        if say is not None:
            blend = f", ranked with flag trees at weight {1 - model.flag_weight:.2f}" if model.blended else ""
            say(f"ranking {ref} with the shipped kernel model ({model.meta.get('data', '?')}, "
                f"{model.meta.get('date', '?')}): each configuration costed as the sum of its kernels{blend}")
    check = check_program(ref, run=call or measure)  # reads the reference: a mistyped one is refused here
    flag_list = rank_flag_configs(configs, seed, allow_fast_math)
    # a compile and the costing of its kernels, each counted as one compile of the check's
    timeout, why = check.worker_timeout(2 * configs, 0)
    costed = run_in_child("graphcost.workload.rank:cost_job",
                          {"program": ref, "configs": configs, "seed": seed, "allow_fast_math": allow_fast_math,
                           "workers": check.parallel_compiles(workers), "model": model.trained_on}, timeout, ref,
                          "costing process", why)
    ranking = _ranking([CostedConfig(c["index"], c["seconds"], [tuple(k) for k in c["kernels"]], c["compile_s"])
                        for c in costed["costed"]], flag_list, model, None)
    ranking.check = check
    if ranked is not None:
        ranked(ranking)
    if measure:  # in a fresh process, under a deadline scaled from the program's check
        ranking.measured = measure_ranking(ref, configs, seed, check, allow_fast_math=allow_fast_math)
    return ranking


def _check_arguments(configs: Any, seed: Any, workers: Any, model: Any, allow_fast_math: Any) -> tuple[int, int, int]:
    """`configs`, `seed` and `workers` as ints in range, `model` a KernelCostModel or None, `allow_fast_math` a bool;
    ArgumentError naming the argument otherwise."""
    from graphcost.guards.bounds import ArgumentError, check_int, check_seed

    configs = check_int("configs", configs, 2, 4096)
    seed = check_seed("seed", seed)
    workers = check_int("workers", workers, 1, 256)
    if model is not None and not isinstance(model, KernelCostModel):
        raise ArgumentError(f"model must be a KernelCostModel (KernelCostModel.load()) or None, got {type(model).__name__}")
    if not isinstance(allow_fast_math, bool):
        raise ArgumentError(f"allow_fast_math must be True or False, got {allow_fast_math!r}")
    return configs, seed, workers


def measure_ranking(ref: str, configs: int, seed: int = 0, check=None, rounds: int = 5, calls: int = 5,
                    warmup: int = 2, allow_fast_math: bool = False) -> np.ndarray:
    """(K,) runtimes in ns of the `configs` flag configurations `rank_program(ref, configs, seed)` costed, timed
    interleaved in ONE fresh measuring process (`graphcost.measure.worker`, its job built by `lower_rank_job`)
    under a deadline scaled from `check` (`ProgramCheck.worker_timeout`; `WORKER_CAP_S` without one): a
    configuration that hangs, aborts or crashes is a RuntimeError naming `ref`, not the end of this process."""
    import tempfile
    from dataclasses import asdict

    from graphcost.guards.atomic import atomic_write_json
    from graphcost.measure.cross_process import run_worker
    from graphcost.measure.interleaved import TimingProtocol
    from graphcost.measure.program_check import WORKER_CAP_S

    protocol = TimingProtocol(rounds=rounds, calls=calls, warmup=warmup, seed=seed)
    timeout, why = (check.worker_timeout(configs, configs * (rounds * calls + warmup)) if check is not None
                    else (WORKER_CAP_S, "the cap of a measuring process"))
    with tempfile.TemporaryDirectory(prefix="graphcost-rank-") as tmp:
        job, out = Path(tmp) / "job.json", Path(tmp) / "res0.npz"
        atomic_write_json({"builder": "graphcost.workload.rank:lower_rank_job", "space": "rank", "program": ref,
                           "configs": configs, "seed": seed, "allow_fast_math": allow_fast_math,
                           "protocol": asdict(protocol)}, job)
        run_worker(job, 0, out, core=None, timeout_s=timeout, label=ref, deadline_note=why)
        with np.load(out, allow_pickle=False) as res:
            return np.asarray(res["runtime_ns"], np.float64)


def lower_rank_job(job: dict) -> tuple[list, list, list]:
    """The measuring worker's builder for `measure_ranking` (`graphcost.measure.worker.lower_job`): the program
    `job["program"]` lowered once, under the compiler options of each of `rank_program`'s configurations."""
    from graphcost.frontend.programs.user_program import load_program
    from graphcost.frontend.programs.user_program import TuneProgram

    fn, args, name = load_program(job["program"])
    program = TuneProgram(fn, args, name)
    flags = rank_flag_configs(int(job["configs"]), int(job["seed"]), bool(job.get("allow_fast_math", False)))
    return [program.lower()] * len(flags), [f.compiler_options() for f in flags], program.flat_args


def rank_flag_configs(configs: int, seed: int = 0, allow_fast_math: bool = False) -> list:
    """The `FlagConfig`s a ranking costs: the default first, then up to ``configs - 1`` drawn as `graphcost tune`
    draws its candidates over its flag space (`graphcost.tuning.space.sample_pool` of
    `FlagSpace(allow_fast_math)`), so that what a ranking puts first is a configuration tune could keep: the
    fast-math family, which may change results, stays at its default unless `allow_fast_math`."""
    from graphcost.tuning.space import FlagSpace, sample_pool

    space = FlagSpace(allow_fast_math)
    pool, _ = sample_pool(space, configs - 1, seed)
    return [space.config(space.default()), *(space.config(c) for c in pool)]


def _forget_compiled() -> None:
    """Drop the executables jax keeps for a lowering (`pxla._cached_compilation`, a cache keyed weakly on the
    lowered module, so it holds every configuration compiled from one `Lowered` while that lives), then hand
    the freed heap back to the OS (glibc's ``malloc_trim``: a compile of a 30,000-instruction module left
    560 MiB resident, 290 MiB after it). A private cache: where this jax has none, or the C library no
    ``malloc_trim``, that step is skipped (the memory is then reused, not returned)."""
    try:
        from jax._src.interpreters import pxla

        clear = getattr(getattr(pxla, "_cached_compilation", None), "cache_clear", None)
        if callable(clear):
            clear()
    except ImportError:
        pass
    from graphcost.memory import release_free_memory

    release_free_memory()


def cost_job(job: dict) -> dict:
    """The costing process of `rank_program` (`graphcost.measure.child_call`): the program `job["program"]` loaded,
    traced and its configurations (`rank_flag_configs` of the job's count, seed and fast-math switch) compiled and
    costed by the kernel model in the directory `job["model"]`; ``{"costed": [{index, seconds, kernels,
    compile_s}, ...]}`` in configuration order."""
    from graphcost.frontend.programs.user_program import load_program, prepare_program

    fn, args, name = load_program(job["program"], checked=True)
    program = prepare_program(fn, args, name, job["program"])
    flag_list = rank_flag_configs(int(job["configs"]), int(job["seed"]), bool(job["allow_fast_math"]))
    costed = _cost(program, flag_list, KernelCostModel.load(job["model"]), int(job["workers"]))
    return {"costed": [{"index": c.index, "seconds": c.seconds, "kernels": [list(k) for k in c.kernels],
                        "compile_s": c.compile_s} for c in costed]}


def _rank(program, configs: int, seed: int, model: KernelCostModel, workers: int,
          allow_fast_math: bool = False) -> KernelRanking:
    """`rank_configs`'s ranking, costed in this process (the caller's own function and arguments)."""
    flag_list = rank_flag_configs(configs, seed, allow_fast_math)
    return _ranking(_cost(program, flag_list, model, workers), flag_list, model, program)


def _ranking(costed: list[CostedConfig], flag_list: list, model: KernelCostModel, program) -> KernelRanking:
    """The `KernelRanking` of configurations `costed` in `flag_list` order: scored by the model's blend."""
    from graphcost.frontend.programs.flags import flag_features

    scores = model.rank_scores(np.asarray([c.seconds for c in costed]), flag_features(flag_list))
    return KernelRanking(costed, flag_list, scores, program, model)


def _cost(program, flag_list: list, model: KernelCostModel, workers: int) -> list[CostedConfig]:
    """Each configuration of `flag_list` compiled (`workers` at a time) and costed by `model`, in order."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    from graphcost.frontend.programs.jax_program import optimized_kernels
    from graphcost.frontend.programs.flags import flag_features

    lowered = program.lower()
    feats = flag_features(flag_list)

    def compile_one(i: int):
        t0 = time.perf_counter()
        exe = lowered.compile(compiler_options=flag_list[i].compiler_options())
        return exe, time.perf_counter() - t0

    # Each executable is costed as soon as it is compiled, then dropped: at most `workers` + 1 are alive
    # (an executable takes a few KiB per instruction: 16 of a 100,000-instruction module held over 5 GB).
    kernels_by_digest: dict[str, dict] = {}
    out: list[CostedConfig] = []

    def cost(future) -> None:
        exe, compile_s = future.result()
        k = len(out)
        digest = module_digest(exe)
        if digest not in kernels_by_digest:
            kernels_by_digest[digest] = optimized_kernels(exe)
        seconds, shares = model.cost(kernels_by_digest[digest], feats[k])
        out.append(CostedConfig(k, seconds, shares, compile_s))
        _forget_compiled()

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        pending: deque = deque()
        for i in range(len(flag_list)):
            pending.append(pool.submit(compile_one, i))
            while len(pending) > workers or (i == len(flag_list) - 1 and pending):
                cost(pending.popleft())
    return out
