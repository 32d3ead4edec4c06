"""Benchmark: data path on one NLP-sized layout file (SYNTHETIC data).

    python benchmarks/data/bench_data_path.py [--configs 100000] [--nodes 5600] [--config-nodes 100]

Writes (once, reused) a synthetic layout npz the size of a big layout:nlp graph — 5,600 nodes,
100 configurable nodes, 100,000 configurations, node_config_feat (100000, 100, 18) float32 =
720 MB raw, deflated like np.savez_compressed. By default the file comes from data-io's
`graphcost.data.synth.collection.write_synthetic_layout_file` (source "nlp", random search,
config_fraction 0.03 -> 100 configurable nodes); `--generator own` uses the simpler
`write_synthetic_layout` below (random permutations, ~19% duplicate configurations). Then, in
FRESH child processes (so peak RSS is the pipeline's own):

* `stages`: load (lazy) -> validate (data-io, streams node_config_feat) -> prune -> compress
  (+ row hashes, chunked) -> dedup -> pad, timing each stage and sampling RSS every 5 ms;
* `prepare`: the public `prepare_graph(path)` end to end (validate included), plus the cache
  write and a cache hit.

Prints a table and writes benchmarks/results/data_path.json. Targets (issue 2): peak RSS < 1 GiB,
< 90 s on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "results" / "data_path.json"
GiB = 1 << 30


# ---------------------------------------------------------------------------------------------
# Synthetic NLP-sized layout file (labelled synthetic everywhere).

def write_synthetic_layout(path: Path, n: int, c: int, k: int, seed: int = 0, dup_frac: float = 0.2) -> None:
    """Stream a synthetic layout npz: a random DAG, c configurable nodes, k configurations.

    Each configurable node has a tensor rank 2..4; a configuration gives it random minor-to-major
    permutations (output, input, and for a third of the nodes kernel), -1 padded beyond the rank,
    like TpuGraphs. `dup_frac` of the configurations repeat an earlier one (runtime +-0.4%).
    """
    from graphcost.data.io.npz_stream import NpzWriter
    from graphcost.data.io.schema import LAYOUT_CONFIGURABLE_OPCODES

    rng = np.random.default_rng(seed)
    node_feat = np.zeros((n, 140), np.float32)
    node_feat[:, :21] = rng.integers(0, 2, size=(n, 21))
    ranks = rng.integers(0, 5, size=n)
    for i, r in enumerate(ranks):
        node_feat[i, 21 : 21 + r] = rng.integers(1, 1024, size=r)
        node_feat[i, 134 : 134 + r] = rng.permutation(r)
    node_feat[:, 27] = node_feat[:, 21:27].sum(1)
    node_feat[:, 28] = np.where(ranks > 0, np.prod(np.where(node_feat[:, 21:27] > 0, node_feat[:, 21:27], 1), 1), 0)
    node_feat[:, 29:134] = rng.integers(0, 4, size=(n, 105))
    opcode = rng.choice([1, 13, 63, 72, 76, 96], size=n).astype(np.uint8)
    config_ids = np.sort(rng.choice(np.arange(1, n), size=c, replace=False)).astype(np.int64)
    opcode[config_ids] = rng.choice(LAYOUT_CONFIGURABLE_OPCODES, size=c)
    edges = [(u, int(v)) for u in range(1, n) for v in rng.choice(u, size=min(u, 1 + (u % 2)), replace=False)]
    edge_index = np.asarray(edges, dtype=np.int64)

    node_rank = rng.integers(2, 5, size=c)
    has_kernel = rng.random(c) < 1 / 3
    perms = {r: np.array(list(itertools.permutations(range(r))), np.float32) for r in (2, 3, 4)}

    def draw(m: int) -> np.ndarray:  # (m, c, 18) fresh configurations
        out = np.full((m, c, 18), -1.0, np.float32)
        for j in range(c):
            p, r = perms[int(node_rank[j])], int(node_rank[j])
            for slot in (0, 1, 2) if has_kernel[j] else (0, 1):
                out[:, j, 6 * slot : 6 * slot + r] = p[rng.integers(0, len(p), size=m)]
        return out

    chunk = 5000
    pool = None  # the first block: configurations that later ones repeat
    runtime = rng.integers(5_000_000, 50_000_000, size=k).astype(np.int64)
    with NpzWriter(path, compressed=True) as w:
        w.write("node_feat", node_feat)
        w.write("node_opcode", opcode)
        w.write("edge_index", edge_index)
        w.write("node_config_ids", config_ids)
        with w.stream("node_config_feat", (k, c, 18), np.float32) as s:
            for start in range(0, k, chunk):
                m = min(chunk, k - start)
                block = draw(m)
                if pool is None:
                    pool = block.copy()
                else:
                    dup = rng.random(m) < dup_frac
                    block[dup] = pool[rng.integers(0, len(pool), size=int(dup.sum()))]
                s.write(block)
        w.write("config_runtime", runtime)
        w.write("node_splits", np.array([[0, n // 2]], np.int64))


# ---------------------------------------------------------------------------------------------
# Measurement (runs in a child process).

class RssSampler:
    """Samples this process's resident set size every `interval` s; tracks the max per stage."""

    def __init__(self, interval: float = 0.005):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._page = os.sysconf("SC_PAGE_SIZE")

    def rss(self) -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * self._page

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def reset(self) -> None:
        self.peak = self.rss()


def measure(path: Path, mode: str, chunk_size: int) -> dict:
    from graphcost.data.transforms import preprocess
    from graphcost.data.transforms.compress import compress_layout_config
    from graphcost.data.transforms.dedup import dedup_min_runtime, row_hashes
    from graphcost.data.transforms.padding import pad_minor_to_major
    from graphcost.data.transforms.prune import prune_around_configurable
    from graphcost.data.io.tpugraphs_io import load_graph
    from graphcost.data.io.validate import validate_graph

    rows, t_all = [], time.perf_counter()
    with RssSampler() as sampler:

        def stage(name, fn):
            sampler.reset()
            t0, c0 = time.perf_counter(), time.process_time()
            out = fn()
            rows.append({"stage": name, "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                         "peak_rss_bytes": sampler.peak})
            return out

        base = {"stage": "interpreter + imports", "seconds": 0.0, "cpu_seconds": time.process_time(),
                "peak_rss_bytes": sampler.rss()}
        rows.append(base)
        if mode == "stages":
            g = stage("load (lazy) + validate (config values checked in compress pass)",
                      lambda: preprocess._load(path, validate=True))
            pr = stage("prune", lambda: prune_around_configurable(len(g.node_feat), g.edge_index, g.node_config_ids))
            k, c = g.node_config_feat.shape[:2]

            def compress():
                codes, hashes = np.empty((k, c, 3), np.int32), np.empty(k, np.uint64)
                for start, chunk in preprocess.iter_config_chunks(g, chunk_size):
                    block = compress_layout_config(chunk, source=path, offset=start)
                    codes[start : start + len(block)] = block
                    hashes[start : start + len(block)] = row_hashes(block)
                return codes, hashes

            codes, hashes = stage("compress + hash (chunked)", compress)
            runtime = np.asarray(g.config_runtime, np.float64)
            keep = stage("dedup (verify groups)", lambda: dedup_min_runtime(hashes, runtime, codes))
            codes = stage("gather kept codes", lambda: codes[keep])
            stage("pad node_feat", lambda: pad_minor_to_major(g.node_feat[pr.kept_nodes]))
            summary = {"kept_nodes": int(pr.num_nodes), "kept_edges": int(len(pr.edge_index)),
                       "kept_configs": int(len(keep)), "codes_bytes": int(codes.nbytes)}
        elif mode == "validate_full":  # data-io's validate_graph on the lazy graph, for reference
            g = stage("load (lazy node_config_feat)", lambda: load_graph(path, validate=False, lazy_config_feat=True))
            stage("data-io validate_graph (full scan of node_config_feat)", lambda: validate_graph(g))
            summary = {}
        else:
            cache_dir = Path(tempfile.mkdtemp(prefix="gc_bench_cache_"))
            p = stage("prepare_graph (load+validate+prune+compress+dedup+pad) + cache write",
                      lambda: preprocess.prepare_graph(path, cache_dir=cache_dir, chunk_size=chunk_size))
            stage("prepare_graph cache hit", lambda: preprocess.prepare_graph(path, cache_dir=cache_dir))
            entry = next(cache_dir.glob("*.npz"))
            summary = {"kept_nodes": p.num_nodes, "kept_edges": int(len(p.edge_index)), "kept_configs": p.num_configs,
                       "prepared_bytes": p.nbytes(), "cache_entry_bytes": entry.stat().st_size}
            for f in cache_dir.iterdir():
                f.unlink()
            cache_dir.rmdir()
    total = time.perf_counter() - t_all
    return {"mode": mode, "rows": rows, "total_seconds": total, "cpu_seconds": time.process_time(),
            "ru_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, **summary}


# ---------------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5600)
    ap.add_argument("--config-nodes", type=int, default=100)
    ap.add_argument("--configs", type=int, default=100_000)
    ap.add_argument("--chunk-size", type=int, default=2048, help="= preprocess.DEFAULT_CHUNK")
    ap.add_argument("--generator", choices=("synth", "own"), default="synth")
    ap.add_argument("--config-fraction", type=float, default=0.03, help="synth: share of configurable nodes")
    ap.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "graphcost_bench")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--_child", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child:
        print(json.dumps(measure(Path(args._child[0]), args._child[1], args.chunk_size)))
        return

    if args.generator == "synth":
        from graphcost.data.synth.collection import write_synthetic_layout_file

        path = args.data_dir / f"synthetic_nlp_layout_synth_n{args.nodes}_f{args.config_fraction}_k{args.configs}.npz"
        write = lambda: write_synthetic_layout_file(  # noqa: E731
            path, num_nodes=args.nodes, num_configs=args.configs, seed=0, source="nlp", search="random",
            config_fraction=args.config_fraction)
    else:
        path = args.data_dir / f"synthetic_nlp_layout_own_n{args.nodes}_c{args.config_nodes}_k{args.configs}.npz"
        write = lambda: write_synthetic_layout(path, args.nodes, args.config_nodes, args.configs)  # noqa: E731
    if not path.is_file():
        print(f"writing SYNTHETIC layout file {path} ...", flush=True)
        t0 = time.perf_counter()
        write()
        print(f"  written in {time.perf_counter() - t0:.1f} s ({path.stat().st_size / 2**20:.0f} MiB on disk)")
    results = {}
    for mode in ("stages", "prepare", "validate_full"):
        cmd = [sys.executable, __file__, "--chunk-size", str(args.chunk_size), "--_child", str(path), mode]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        results[mode] = json.loads(out)

    from graphcost.data.io.npz_stream import read_member_header

    k, c, _ = read_member_header(path, "node_config_feat").shape
    print(f"\nData path on a SYNTHETIC NLP-sized layout graph ({args.generator} generator): {args.nodes} nodes, "
          f"{c} configurable, {k} configs (raw node_config_feat {k * c * 18 * 4 / 1e6:.0f} MB)")
    print(f"{'stage':<75} {'wall s':>8} {'CPU s':>7} {'peak RSS MiB':>13}")
    for mode in ("stages", "prepare", "validate_full"):
        r = results[mode]
        for row in r["rows"]:
            print(f"{row['stage']:<75} {row['seconds']:>8.2f} {row['cpu_seconds']:>7.2f} "
                  f"{row['peak_rss_bytes'] / 2**20:>13.0f}")
        print(f"{'  => ' + mode + ' total (process)':<75} {r['total_seconds']:>8.2f} {r['cpu_seconds']:>7.2f} "
              f"{r['ru_maxrss_bytes'] / 2**20:>13.0f}")
    p = results["prepare"]
    e2e = p["rows"][1]["seconds"]
    verdict = {"peak_rss_ok": p["ru_maxrss_bytes"] < GiB, "time_ok": e2e < 90}
    print(f"kept: {p['kept_nodes']} nodes, {p['kept_edges']} edges, {p['kept_configs']} configs; "
          f"prepared graph {p['prepared_bytes'] / 2**20:.0f} MiB; cache entry {p['cache_entry_bytes'] / 2**20:.0f} MiB")
    print(f"targets: peak RSS < 1 GiB: {verdict['peak_rss_ok']} ({p['ru_maxrss_bytes'] / 2**20:.0f} MiB); "
          f"< 90 s: {verdict['time_ok']} ({e2e:.1f} s)")
    payload = {
        "benchmark": "data_path",
        "data": f"SYNTHETIC layout graph ({args.generator} generator: "
                + ("graphcost.data.synth.collection.write_synthetic_layout_file, nlp/random)" if args.generator == "synth"
                   else "benchmarks/data/bench_data_path.py write_synthetic_layout)"),
        "shape": {"nodes": args.nodes, "config_nodes": int(c), "configs": int(k)},
        "file_bytes": path.stat().st_size,
        "chunk_size": args.chunk_size,
        "machine": f"{os.cpu_count()}-core CPU, {platform.processor() or platform.machine()}",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_average_1min_at_end": os.getloadavg()[0],
        "results": results,
        "targets": verdict,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2))
    os.replace(tmp, args.out)
    print(f"load average (1 min) at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; wrote {args.out}")


if __name__ == "__main__":
    main()
