"""One measuring worker process of the cross-process protocol (`graphcost.tuning.crossproc`).

``python -m graphcost.tuning.worker REQUEST.json RESULT.json``: rebuild the program from its
reference, compile every requested configuration (through JAX's persistent compilation cache
when the request names one), time them with the interleaved protocol, write the runtimes.
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    req_path, out_path = argv
    with open(req_path, encoding="utf-8") as fh:
        req = json.load(fh)
    from graphcost.frontend.programs.compile import configure_cache

    configure_cache(req.get("cache_dir"))

    from graphcost.atomic import atomic_write_json
    from graphcost.frontend.measure.interleaved import Protocol, measure_executables
    from graphcost.tuning.trial import compile_config
    from graphcost.tuning.program import load_program
    from graphcost.tuning.space import TuneProgram, make_space

    fn, args, name = load_program(req["program"])
    program = TuneProgram(fn, args, name)
    space = make_space(req["space"], program, allow_fast_math=req["allow_fast_math"])
    t0 = time.perf_counter()
    exes = [compile_config(program, space, space.check(c)) for c in req["configs"]]
    compile_s = time.perf_counter() - t0
    m = measure_executables(exes, program.flat_args, Protocol(**req["protocol"]))
    atomic_write_json({"runtime_ns": m.runtime_ns.tolist(), "compile_s": round(compile_s, 3)}, out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
