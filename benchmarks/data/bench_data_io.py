"""Benchmark data-io on SYNTHETIC TpuGraphs-sized files: generate, validate lazily, stream, stats.

    python benchmarks/data/bench_data_io.py [--data-dir /tmp/graphcost_bench] [--configs 100000]

Stages (each in a fresh child process so its peak RSS, `ru_maxrss`, is its own):
  synth_nlp   write_synthetic_layout_file: 5,600 nodes (layout:nlp size), 3 % configurable,
              --configs configurations, deflated npz (streamed; never holds the whole array)
  load_lazy   load_graph(lazy_config_feat=True) + full validation (values scanned in chunks)
  chunks      iter_node_config_feat_chunks(path, 4096) over every configuration
  gather      LazyNpyArray[64 random rows] (one pass over the deflated member)
  stats       graph_stats (validation + unique-config hashing + pruned node count)
  synth_xla40k  write_synthetic_layout_file: 40,000 nodes (largest layout:xla size), 10,000 configs
Prints a table and writes benchmarks/results/data_io.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

STAGES = ["synth_nlp", "load_lazy", "chunks", "gather", "stats", "synth_xla40k"]


def run_stage(stage: str, data_dir: Path, configs: int) -> dict:
    import numpy as np

    from graphcost.data.stats import graph_stats
    from graphcost.data.synth.collection import write_synthetic_layout_file
    from graphcost.data.io.tpugraphs_io import iter_node_config_feat_chunks, load_graph

    nlp = data_dir / f"synthetic_nlp_n5600_k{configs}.npz"
    t0, c0 = time.perf_counter(), time.process_time()
    info: dict = {}
    if stage == "synth_nlp":
        write_synthetic_layout_file(nlp, 5600, configs, seed=0, source="nlp", search="random", config_fraction=0.03)
        info["file_mb"] = round(nlp.stat().st_size / 2**20, 1)
    elif stage == "load_lazy":
        g = load_graph(nlp, lazy_config_feat=True)
        info["node_config_feat"] = list(g.node_config_feat.shape)
        info["raw_mb"] = round(g.node_config_feat.nbytes / 2**20, 1)
    elif stage == "chunks":
        info["rows"] = sum(len(c) for _, c in iter_node_config_feat_chunks(nlp, 4096))
    elif stage == "gather":
        g = load_graph(nlp, validate=False, lazy_config_feat=True)
        idx = np.random.default_rng(0).integers(0, len(g.node_config_feat), 64)
        info["shape"] = list(g.node_config_feat[idx].shape)
    elif stage == "stats":
        s = graph_stats(nlp)
        info.update(unique_configs=s.unique_configs, pruned_nodes=s.pruned_nodes, nodes=s.nodes)
    elif stage == "synth_xla40k":
        path = data_dir / "synthetic_xla_n40000_k10000.npz"
        write_synthetic_layout_file(path, 40000, 10000, seed=1, source="xla", search="random")
        info["file_mb"] = round(path.stat().st_size / 2**20, 1)
    return {
        "stage": stage,
        "wall_s": round(time.perf_counter() - t0, 2),
        "cpu_s": round(time.process_time() - c0, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0),
        **info,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/graphcost_bench_data_io"))
    ap.add_argument("--configs", type=int, default=100_000)
    ap.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results" / "data_io.json")
    args = ap.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if args.stage:
        print(json.dumps(run_stage(args.stage, args.data_dir, args.configs)))
        return
    rows = []
    for stage in STAGES:
        cmd = [sys.executable, __file__, "--stage", stage, "--data-dir", str(args.data_dir), "--configs", str(args.configs)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        rows.append(json.loads(out))
        r = rows[-1]
        extra = {k: v for k, v in r.items() if k not in ("stage", "wall_s", "cpu_s", "peak_rss_mib")}
        print(f"{stage:14s} wall {r['wall_s']:7.2f} s  cpu {r['cpu_s']:7.2f} s  peak RSS {r['peak_rss_mib']:6.0f} MiB  {extra}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {"synthetic": True, "machine": f"{os.cpu_count()}-core CPU", "date": time.strftime("%Y-%m-%d"),
              "load_average": os.getloadavg()[0], "rows": rows}  # fmt: skip
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
