"""HloModuleProto decoding: the hand-written wire decoder (before issue 20) vs the protobuf package.

The module is the shared TpuGraphs layout record's HloModuleProto
(`../shared/data/tpu_graphs_raw/module_tuning_data_layout.pb`, 3,163 instructions) with its
computations replicated `--copies` times (ids shifted per copy so it stays one valid module;
32 copies = 101,216 instructions). Each mode runs in a fresh child process; it reports the best
wall and CPU time (the machine may be shared) over `--repeats` decodes and the process peak RSS
(`VmHWM`, interpreter and imports included) beside the RSS before the first decode (imports and
the bytes read).

Modes:
* ``old``: `parse_hlo_module` as of `--old-rev` (the hand-written decoder, `hlo_proto.py` +
  `protowire.py` read from git into a temporary directory and imported from there);
* ``protobuf``: `HloModuleProto.FromString` alone (protobuf's C parser, no dataclasses);
* ``new``: today's `parse_hlo_module` (protobuf's parser + the copy into the dataclasses).

    python benchmarks/data/bench_proto.py [--copies 32] [--repeats 2] [--featurize] [--out benchmarks/results/proto.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("GRAPHCOST_SHARED_DATA", ROOT.parent / "shared" / "data"))
LAYOUT_PB = SHARED / "tpu_graphs_raw" / "module_tuning_data_layout.pb"
OLD_FILES = ("src/graphcost/frontend/hlo_proto.py", "src/graphcost/frontend/protowire.py")


def _rss_mib() -> float:
    """This process's peak RSS (VmHWM; unlike ru_maxrss it does not start at the parent's peak after exec)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def build_module(copies: int, path: Path) -> int:
    """Write the shared record's HloModuleProto, its computations repeated `copies` times, to `path`.

    Copy k's computation and instruction ids (and the operand / callee / control ids naming them)
    are shifted by k * (largest id + 1), so the module stays valid and featurizable. Returns the
    number of instructions.
    """
    from graphcost.frontend.hlo.protos import hlo_tuning_pb2 as pb

    base = pb.ModuleTuningData.FromString(LAYOUT_PB.read_bytes()).module
    step = 1 + max(max(c.id, *(i.id for i in c.instructions)) for c in base.computations)
    module = pb.HloModuleProto()
    module.CopyFrom(base)
    del module.computations[:]
    for k in range(copies):
        for comp in base.computations:
            new = module.computations.add()
            new.CopyFrom(comp)
            new.id += k * step
            new.root_id += k * step
            for inst in new.instructions:
                inst.id += k * step
                for ids in (inst.operand_ids, inst.called_computation_ids, inst.control_predecessor_ids):
                    ids[:] = [i + k * step for i in ids]
    path.write_bytes(module.SerializeToString())
    return copies * sum(len(c.instructions) for c in base.computations)


def _old_parser(rev: str, where: Path):
    """`parse_hlo_module` of revision `rev`, imported from copies of its two files under `where`."""
    for name in OLD_FILES:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{name}"], check=True,
                              capture_output=True, text=True).stdout
        text = text.replace("graphcost.frontend.protowire", "old_protowire")
        (where / f"old_{Path(name).name}").write_text(text)
    sys.path.insert(0, str(where))
    import old_hlo_proto  # noqa: E402

    return old_hlo_proto.parse_hlo_module


def child(mode: str, path: Path, repeats: int, rev: str, featurize: bool = False) -> dict:
    """Decode `path` `repeats` times in this (fresh) process; wall times and peak RSS."""
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "old":
            decode = _old_parser(rev, Path(tmp))
        elif mode == "protobuf":
            from graphcost.frontend.hlo.protos import hlo_tuning_pb2 as pb

            decode = pb.HloModuleProto.FromString
        else:
            from graphcost.frontend.hlo.hlo_proto import parse_hlo_module as decode
        data = path.read_bytes()
        rss_before = _rss_mib()
        times, cpu_times = [], []
        for _ in range(repeats):
            start, cpu_start = time.perf_counter(), time.process_time()
            module = decode(data)
            times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu_start)
            count = sum(len(c.instructions) for c in module.computations)
            if featurize and mode != "protobuf" and len(times) == 1:  # after the first decode, on a fresh heap
                from graphcost.frontend.hlo.featurizer import featurize_module

                start, cpu_start = time.perf_counter(), time.process_time()
                featurize_module(module)
                featurize_s = time.perf_counter() - start
                featurize_cpu_s = time.process_time() - cpu_start
            del module
    out = {"mode": mode, "wall_s": min(times), "wall_s_all": times, "cpu_s": min(cpu_times), "cpu_s_all": cpu_times,
           "instructions": count,
           "rss_before_decode_mib": rss_before, "peak_rss_mib": _rss_mib()}
    if featurize and mode != "protobuf":
        out["featurize_s"] = featurize_s  # the first decode's module; peak RSS then includes featurizing
        out["featurize_cpu_s"] = featurize_cpu_s
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--old-rev", default="d5cf994", help="git revision holding the hand-written decoder")
    parser.add_argument("--modes", default="old,protobuf,new")
    parser.add_argument("--featurize", action="store_true",
                        help="also time featurize_module on the decoded module (peak RSS then includes it)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.file, args.repeats, args.old_rev, args.featurize)))
        return

    sys.path.insert(0, str(ROOT / "src"))
    from graphcost.measure.interleaved import cpu_model, load_average

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "module.pb"
        instructions = build_module(args.copies, path)
        load_before = load_average()
        rows = []
        for mode in args.modes.split(","):
            out = subprocess.run(
                [sys.executable, __file__, "--child", mode, "--file", str(path), "--repeats", str(args.repeats),
                 "--old-rev", args.old_rev] + (["--featurize"] if args.featurize else []),
                check=True, capture_output=True, text=True, env=env).stdout
            rows.append(json.loads(out))
        size = path.stat().st_size
    info = {"benchmark": "hlo_proto_decode", "source": str(LAYOUT_PB.name), "copies": args.copies,
            "instructions": instructions, "bytes": size, "old_rev": args.old_rev, "repeats": args.repeats,
            "cpu": cpu_model(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
            "protobuf": __import__("google.protobuf").protobuf.__version__,
            "protobuf_backend": __import__("google.protobuf.internal.api_implementation",
                                           fromlist=["Type"]).Type(),
            "featurize": args.featurize, "loadavg_before": load_before, "loadavg_after": load_average(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "results": rows}
    print(f"HloModuleProto decode: {instructions:,} instructions, {size / 2**20:.1f} MiB "
          f"({args.copies} copies of {LAYOUT_PB.name}'s module); best of {args.repeats}, fresh process per mode")
    print(f"{info['cpu']}, {info['cpus']} CPUs, protobuf {info['protobuf']} ({info['protobuf_backend']}), "
          f"load average {load_before} -> {info['loadavg_after']}")
    print(f"{'mode':<10} {'decode wall s':>14} {'decode CPU s':>13} {'featurize wall / CPU s':>23} "
          f"{'peak RSS MiB':>13} {'RSS before decode MiB':>22}")
    for r in rows:
        feat = f"{r['featurize_s']:.2f} / {r['featurize_cpu_s']:.2f}" if "featurize_s" in r else "-"
        print(f"{r['mode']:<10} {r['wall_s']:>14.3f} {r['cpu_s']:>13.3f} {feat:>23} {r['peak_rss_mib']:>13.0f} "
              f"{r['rss_before_decode_mib']:>22.0f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(info, indent=2) + "\n")


if __name__ == "__main__":
    main()
