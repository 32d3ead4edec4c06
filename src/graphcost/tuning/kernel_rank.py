"""Ranking a compilable program's flag configurations through its kernels (`graphcost rank PROGRAM`).

    ranked, flags, program = rank_program("prog.py:make", configs=16)

For each configuration (the flag space's `graphcost.frontend.programs.flags.flag_configs`; row 0 the
default), the program is compiled (threads over the cores; configurations whose optimized modules
are identical are split into kernels once), its optimized module split into kernels
(`graphcost.frontend.hlo.kernels`, loop trip counts read off the module) and costed by the kernel
model (`graphcost.inference.kernel_model.KernelCostModel`).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from graphcost.inference.kernel_model import CostedConfig, KernelCostModel


def module_digest(compiled) -> str:
    """SHA-256 of an executable's optimized module text: equal for configurations XLA compiled alike
    (machine-code-only flags differ in the flag columns the kernel model sees, not here)."""
    return hashlib.sha256(compiled.as_text().encode()).hexdigest()


def rank_program(ref: str, configs: int = 16, seed: int = 0, model: KernelCostModel | None = None,
                 workers: int = 2) -> tuple[list[CostedConfig], list, Any]:
    """Cost `configs` flag configurations of the program `ref` (the default first) with the kernel
    model; returns (costed configurations in the flag configurations' order, the `FlagConfig`s,
    the prepared `TuneProgram`)."""
    from concurrent.futures import ThreadPoolExecutor

    from graphcost.frontend.collect.kernel_records import optimized_kernels
    from graphcost.frontend.programs.flags import flag_configs, flag_features
    from graphcost.tuning.program import load_program, prepare_program

    model = model or KernelCostModel.load()
    fn, args, name = load_program(ref)
    program = prepare_program(fn, args, name, ref)
    lowered = program.lower()
    flag_list = flag_configs(configs, seed=seed)
    feats = flag_features(flag_list)

    def compile_one(i: int):
        t0 = time.perf_counter()
        exe = lowered.compile(compiler_options=flag_list[i].compiler_options())
        return exe, time.perf_counter() - t0

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        compiled = list(pool.map(compile_one, range(len(flag_list))))
    kernels_by_digest: dict[str, dict] = {}
    out = []
    for i, (exe, compile_s) in enumerate(compiled):
        digest = module_digest(exe)
        if digest not in kernels_by_digest:
            kernels_by_digest[digest] = optimized_kernels(exe)
        seconds, shares = model.cost(kernels_by_digest[digest], feats[i])
        out.append(CostedConfig(i, seconds, shares, compile_s, exe))
    return out, flag_list, program
