"""Module size: how long featurizing and ranking an XLA module take, and their peak memory, at 1k / 10k / 100k
instructions.

The modules are HLO text chains written here: sines on f32[4,4], every 100th instruction a dot with the
second parameter. The dot ends each run of fusible instructions, so XLA fuses at most 99 in a row, as in a
real model's module (a pure chain of 20,000 sines is one fusion XLA's CPU compiler cannot emit without
crashing: `graphcost.frontend.hlo.module_limits`; its refusal time is measured too, as `pure_chain`).

Each measurement runs in a fresh process (its peak RSS from `os.wait4`):
- featurize: the module read and checked (`hlo_program.module_proto`: XLA's text parser, graphcost's proto
  reader, the nesting and chain checks) and made TpuGraphs node features (`featurizer.featurize_module`);
- rank: ``graphcost rank MODULE.hlo --format json`` (16 configurations compiled and costed by the shipped
  kernel model; no ``--measure``). It compiles in a child process, so beside the largest single process's peak
  (``peak_rss_mib``, what ``os.wait4`` reports) the process tree's resident memory is sampled every 50 ms and its
  peak kept (``peak_rss_with_children_mib``): what the machine must hold at once.

    nice -n 10 python benchmarks/speed/bench_module_size.py --out benchmarks/results/module_size.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (1_000, 10_000, 100_000)
BLOCK = 100  # a dot every BLOCK instructions
PURE_CHAIN = 20_000


def chain_module(n: int, block: int | None = BLOCK) -> str:
    """HLO text of `n` instructions: two f32[4,4] parameters, then a chain of sines, every `block`-th a dot
    with the second parameter (None: sines only, one fusible chain)."""
    lines = ["HloModule chain", "", "ENTRY main {", "  p0 = f32[4,4]{1,0} parameter(0)",
             "  p1 = f32[4,4]{1,0} parameter(1)"]
    prev = "p0"
    for i in range(n - 2):
        if block and (i + 1) % block == 0:
            op = f"dot({prev}, p1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
        else:
            op = f"sine({prev})"
        lines.append(f"  {'ROOT ' if i == n - 3 else ''}x{i} = f32[4,4]{{1,0}} {op}")
        prev = f"x{i}"
    return "\n".join([*lines, "}", ""])


def featurize_here(path: str) -> dict:
    """The featurize step of one module in this process (run as ``--featurize PATH``)."""
    from graphcost.frontend.hlo.featurizer import featurize_module
    from graphcost.frontend.hlo.hlo_proto import parse_hlo_module
    from graphcost.frontend.programs.hlo_program import HloProgramError, module_proto
    from jax._src.lib import xla_client  # noqa: F401 - imported before the clock starts (XLA's text parser)

    t0 = time.perf_counter()
    try:
        proto = module_proto(Path(path))
    except HloProgramError as exc:
        return {"seconds": time.perf_counter() - t0, "refused": str(exc)}
    t1 = time.perf_counter()
    fm = featurize_module(parse_hlo_module(proto))
    t2 = time.perf_counter()
    return {"seconds": t2 - t0, "read_and_check_s": t1 - t0, "featurize_s": t2 - t1, "nodes": int(fm.num_nodes),
            "edges": int(fm.num_edges)}


def tree_rss_mib(root: int) -> float:
    """The resident memory of process `root` and all its descendants together, in MiB (Linux /proc; 0 elsewhere)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, ...
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended while being read
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    pages = 0
    for pid in tree:
        try:
            pages += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def run_measured(cmd: list[str], timeout_s: float) -> tuple[int, float, float, float, str, str]:
    """(exit status, wall seconds, peak RSS MiB of the largest single process, peak RSS MiB of the process and its
    children together (sampled every 50 ms: `rank` compiles in a child process), stdout, stderr) of `cmd` in a
    fresh process."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=err)
    deadline, together = t0 + timeout_s, 0.0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        together = max(together, tree_rss_mib(proc.pid))
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    wall = time.perf_counter() - t0
    out.seek(0)
    err.seek(0)
    single = usage.ru_maxrss / 1024  # the largest of the process and its reaped descendants, not their sum
    return proc.returncode, wall, single, max(together, single), out.read().decode(), err.read().decode()


def measure(path: Path, timeout_s: float) -> dict:
    rc, wall, rss, _, out, err = run_measured([sys.executable, __file__, "--featurize", str(path)], timeout_s)
    featurize = json.loads(out) if rc == 0 else {"failed": err.strip().splitlines()[-1:]}
    featurize.update(process_s=round(wall, 2), peak_rss_mib=round(rss, 1))
    rc, wall, rss, together, out, err = run_measured([sys.executable, "-m", "graphcost", "rank", str(path),
                                                      "--format", "json"], timeout_s)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    rank = {"exit": rc, "seconds": round(wall, 2), "peak_rss_mib": round(rss, 1),
            "peak_rss_with_children_mib": round(together, 1)}
    if errors:
        rank["error"] = errors[-1]
    elif rc == 0:
        rank["configurations"] = len(json.loads(out))
    return {"featurize": featurize, "rank": rank}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/module_size.json"))
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per measured process")
    parser.add_argument("--featurize", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.featurize:
        print(json.dumps(featurize_here(args.featurize)))
        return
    from graphcost.guards.atomic import atomic_write_json
    from graphcost.measure.interleaved import cpu_model

    rows, load_before = {}, os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="graphcost-module-size-") as tmp:
        cases = [(f"chain_{n}", n, BLOCK) for n in args.sizes] + [(f"pure_chain_{PURE_CHAIN}", PURE_CHAIN, None)]
        for name, n, block in cases:
            path = Path(tmp) / f"{name}.hlo"
            path.write_text(chain_module(n, block))
            rows[name] = {"instructions": n, "dot_every": block, **measure(path, args.timeout)}
            print(name, json.dumps(rows[name]), flush=True)
    report = {"what": __doc__.split("\n\n")[0], "command": "python " + " ".join([__file__, *(argv or sys.argv[1:])]),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "loadavg_before": list(load_before),
              "loadavg": list(os.getloadavg()), "cpu": cpu_model(), "cpus": os.cpu_count(), "rows": rows}
    atomic_write_json(report, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
