"""Measurement repeatability of a collected layout dataset (REAL data, measured on this machine).

Two numbers per graph, Spearman rank correlation over its configurations:

* ``halves``: between the two independent estimates inside the collection run (median over the
  even rounds vs median over the odd rounds of the interleaved protocol), read from manifest.json;
* ``repass`` (with ``--remeasure N``): between the stored ``config_runtime`` and a completely
  fresh pass, in a new process, later in time: the N cheapest graphs are rebuilt, their
  configurations regenerated from the seed (checked equal to the stored ``node_config_feat``),
  recompiled and measured again with the same protocol.

Also reports the runtime spread (slowest / fastest configuration) per graph.

    python benchmarks/data/bench_measurement_repeatability.py [--data DIR] [--remeasure 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def remeasure(data: Path, name: str, entry: dict, collection: dict) -> float:
    """Fresh measurement pass over one stored graph; returns Spearman vs the stored runtimes."""
    from graphcost.data.io.tpugraphs_io import load_graph
    from graphcost.frontend.programs.compile import compile_all
    from graphcost.frontend.programs.jax_program import unoptimized_hlo_bytes
    from graphcost.frontend.programs.layouts import LayoutProgram, config_features, sample_configs
    from graphcost.measure.interleaved import TimingProtocol, measure_executables, spearman
    from graphcost.frontend.programs.zoo import get_program

    graph = load_graph(data / entry["file"])
    fn, args = get_program(name).build()
    lp = LayoutProgram(fn, args)
    ids = lp.site_instruction_ids(unoptimized_hlo_bytes(lp.lowered(None)))
    active = [s for s, i in zip(lp.sites, ids) if i is not None]
    configs = sample_configs(active, collection["configs"], collection["mode"], seed=collection["seed"])
    if not np.array_equal(config_features(configs), np.asarray(graph.node_config_feat)):
        raise SystemExit(f"{name}: regenerated configurations differ from {entry['file']}")
    exes = compile_all([lp.lowered(lp.full_config(active, c)) for c in configs], [None] * len(configs), 2)
    proto = TimingProtocol(rounds=collection["rounds"], calls=collection["calls"], warmup=collection["warmup"],
                     seed=collection["seed"] + 1)
    m = measure_executables(exes, lp.flat_args, proto)
    return spearman(m.runtime_ns, np.asarray(graph.config_runtime, np.float64))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="dataset dir (default: the shipped cpu_layout)")
    ap.add_argument("--remeasure", type=int, default=0, help="fresh second pass over the N cheapest graphs")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    a = ap.parse_args(argv)
    if a.data is None:
        from graphcost.datasets import default_dataset_dir

        a.data = default_dataset_dir()
    manifest = json.loads((a.data / "manifest.json").read_text())
    coll, graphs = manifest["collection"], manifest["graphs"]
    if a.remeasure and coll.get("xla_flags"):
        os.environ["XLA_FLAGS"] = coll["xla_flags"]  # same runtime flags as the collection
    rows = []
    cheapest = sorted(graphs, key=lambda n: graphs[n]["total_s"])[: a.remeasure]
    t0 = time.time()
    for name in sorted(graphs):
        g = graphs[name]
        row = {"graph": name, "split": g["split"], "nodes": g["num_nodes"], "configs": g["num_configs"],
               "spread": g["spread"], "halves": g["spearman_even_odd_rounds"]}
        if name in cheapest:
            row["repass"] = remeasure(a.data, name, g, coll)
        rows.append(row)
    print(f"{'graph':34s} {'split':5s} {'nodes':>5s} {'K':>3s} {'spread':>7s} {'halves':>7s} {'repass':>7s}")
    for r in rows:
        rp = f"{r['repass']:7.3f}" if "repass" in r else "      -"
        print(f"{r['graph']:34s} {r['split']:5s} {r['nodes']:5d} {r['configs']:3d} {r['spread']:7.2f} {r['halves']:7.3f} {rp}")
    halves = np.array([r["halves"] for r in rows], float)
    spreads = np.array([r["spread"] for r in rows], float)
    summary = {"graphs": len(rows), "halves_median": float(np.nanmedian(halves)), "halves_mean": float(np.nanmean(halves)),
               "halves_min": float(np.nanmin(halves)), "halves_frac_ge_0.9": float(np.mean(halves >= 0.9)),
               "spread_median": float(np.median(spreads)), "spread_min": float(spreads.min()),
               "spread_max": float(spreads.max())}
    rep = [r["repass"] for r in rows if "repass" in r]
    if rep:
        summary.update(repass_median=float(np.median(rep)), repass_min=float(np.min(rep)), repass_graphs=len(rep))
    summary["bench_seconds"] = round(time.time() - t0, 1)
    print("summary:", json.dumps(summary))
    if a.json:
        a.json.write_text(json.dumps({"rows": rows, "summary": summary, "data": str(a.data),
                                      "environment": manifest.get("environment")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
