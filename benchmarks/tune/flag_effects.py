"""Which XLA CPU options of the flag space change generated code on this jaxlib and CPU?

For each candidate option of `graphcost.frontend.programs.flags` and each of its non-default values, a few
programs (small kernels and held-out programs of tune_suite.py) are compiled with that one option
changed (and, for the ``honor_*`` options of the fast-math family, with ``xla_cpu_enable_fast_math``
on as well) and XLA's dump of the compiled module (optimised HLO, LLVM IR, object code; file
paths removed) is hashed. An option whose values all give the default's hash on every program
is *inert* here: it does not change what runs (a runtime option such as
``xla_cpu_multi_thread_eigen`` changes threading, not code, and shows as inert too). Compiles
only; nothing is timed.

    python benchmarks/tune/flag_effects.py --json benchmarks/results/tune/flag_effects.json
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from tune_suite import SUITE  # noqa: E402

from graphcost.guards.atomic import atomic_write_json  # noqa: E402
from graphcost.frontend.programs.flags import known_options, skipped_options  # noqa: E402


def kernels() -> dict:
    x, img, w = jnp.ones((64, 64)), jnp.ones((1, 16, 16, 8)), jnp.ones((3, 3, 8, 8))
    conv = lambda a, b: jax.nn.relu(jax.lax.conv_general_dilated(  # noqa: E731
        a, b, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))).max(axis=(1, 2))
    return {"dot_tanh": jax.jit(lambda x: (jnp.tanh(x @ x) / (1 + jnp.exp(x))).sum(0)).lower(x),
            "conv": jax.jit(conv).lower(img, w),
            "elementwise": jax.jit(lambda x: jnp.maximum(jnp.log1p(jnp.abs(x)) * jnp.sin(x) / (x + 2.0),
                                                         0.1 * x).mean()).lower(x)}


def dump_hash(lowered, options: dict) -> str:
    with tempfile.TemporaryDirectory() as d:
        try:
            lowered.compile(compiler_options={**options, "xla_dump_to": d})
        except Exception as exc:  # noqa: BLE001 - reported in the table
            return "error: " + (str(exc).splitlines() or [""])[0][:120]
        h = hashlib.sha256()
        for f in sorted(glob.glob(d + "/*")):
            if f.endswith((".ll", ".o", "after_optimizations.txt")):
                h.update(re.sub(rb"/tmp/[A-Za-z0-9_./-]+", b"", Path(f).read_bytes()))
        return h.hexdigest()[:12]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", nargs="+", default=["mixer", "dwsep", "stencil", "recsys"], choices=list(SUITE))
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    programs = kernels()
    for name in args.programs:
        fn, fargs = SUITE[name]()
        programs[name] = jax.jit(fn).lower(*fargs)
    base = {n: dump_hash(lo, {}) for n, lo in programs.items()}
    rows = {}
    for opt in known_options():
        cand = opt.candidate
        extra = {"xla_cpu_enable_fast_math": True} if cand.option.startswith("xla_cpu_fast_math_honor") else {}
        ref = base if not extra else {n: dump_hash(lo, extra) for n, lo in programs.items()}
        changed = {}
        for value, label in zip(opt.values[1:], opt.labels[1:]):
            hashes = {n: dump_hash(lo, {**extra, cand.option: value}) for n, lo in programs.items()}
            changed[str(label)] = sorted(n for n in programs if hashes[n] != ref[n])
        rows[cand.option] = {"column": cand.column, "with": extra, "changes_code_of": changed,
                             "inert": not any(changed.values())}
        print(f"{cand.column:>2} {cand.option:<48} {'inert' if rows[cand.option]['inert'] else changed}", flush=True)
    if args.json:
        atomic_write_json({"jax": jax.__version__, "programs": list(programs), "skipped": list(skipped_options()),
                           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "options": rows},
                          args.json, indent=1)


if __name__ == "__main__":
    main()
