"""TGraph inference latency on a SYNTHETIC large layout graph (issue 3 target: 1,000
configurations of a 10,000-node graph ranked in < 2 s on 2 CPU threads).

The graph is random (labelled synthetic): a DAG whose node i consumes 1-3 earlier nodes at
geometric distance (HLO-like locality), `--configurable` random configurable nodes (default 2%,
the share in the real module of shared/data/tpu_graphs_raw: 62 of 3,163), random layout
configurations in {-1..5}. Rows "full" = the whole graph; "pruned" = after TGraph §2.2.1
pruning (configurable nodes + direct neighbours), which is what the data pipeline feeds the model.
Rows per precision: "fp32" and "bf16" (`TGraph.score_chunked(precision=...)`, with Kendall tau
of the bf16 ranking against the fp32 one). Row "npz -> rank (pipeline)": the same graph written
as a TpuGraphs npz and ranked the way `graphcost rank MODEL GRAPH --tta 0` does after loading the
model (read, prune, de-duplicate, score, sort). Weights are untrained (latency does not depend
on them). CPU seconds are reported besides wall time; prints a table and writes JSON. Every row
records the CPU's capability (torch's dispatch ISA and whether bf16 is native: AVX512-BF16/AMX),
without which a bf16 figure cannot be read; `--precision auto` is resolved as the CLI does.
`--device cuda` runs the model (and the pipeline's scoring) on the GPU; the timings then wait
for the GPU to finish (torch.cuda.synchronize) before the clock stops.

    python benchmarks/speed/bench_inference.py --out benchmarks/results/bench_inference.json
    python benchmarks/speed/bench_inference.py --device cuda --out bench_inference_cuda.json
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from graphcost.guards.atomic import atomic_write_json
from graphcost.data.graph import GraphBatch
from graphcost.metrics import kendall_tau
from graphcost.models.precision import PRECISION_CHOICES, cpu_capability, describe_cpu, resolve_precision
from graphcost.models.registry import build_model


def synthetic_layout_batch(num_nodes: int, num_configurable: int, num_configs: int, seed: int = 0) -> GraphBatch:
    g = torch.Generator().manual_seed(seed)
    fan_in = torch.randint(1, 4, (num_nodes,), generator=g)
    fan_in[0] = 0
    dst = torch.repeat_interleave(torch.arange(num_nodes), fan_in)
    u = torch.rand(dst.numel(), generator=g).clamp(min=1e-12)
    offset = torch.floor(torch.log(u) / torch.log(torch.tensor(0.7))).long() + 1  # Geometric(0.3), seeded
    src = (dst - offset).clamp(min=0)
    keep = src < dst
    edge_index = torch.unique(torch.stack([src[keep], dst[keep]]), dim=1)  # (2, E) producer -> consumer
    node_feat = torch.randn(num_nodes, 140, generator=g)
    node_feat[:, 134:] = torch.randint(-1, 6, (num_nodes, 6), generator=g).float()
    config_nodes = torch.randperm(num_nodes, generator=g)[:num_configurable].sort().values
    cfg = torch.randint(-1, 6, (num_configs, num_configurable, 18), generator=g).float()
    return GraphBatch(
        graph_name=f"synthetic_{num_nodes}", kind="layout", node_feat=node_feat,
        node_opcode=torch.randint(0, 120, (num_nodes,), generator=g), edge_index=edge_index,
        runtime=torch.rand(num_configs, generator=g), config_index=torch.arange(num_configs),
        config_node_index=config_nodes, node_config_feat=cfg)


def tgraph_pruned(batch: GraphBatch) -> GraphBatch:
    """TGraph §2.2.1 pruning: keep configurable nodes and their direct producers/consumers."""
    from torch_geometric.utils import subgraph

    n = batch.node_feat.shape[0]
    keep = torch.zeros(n, dtype=torch.bool)
    keep[batch.config_node_index] = True
    src, dst = batch.edge_index
    near = keep[src] | keep[dst]
    keep[src[near]] = True
    keep[dst[near]] = True
    edge_index, _ = subgraph(keep, batch.edge_index, relabel_nodes=True, num_nodes=n)
    new_id = torch.cumsum(keep.long(), 0) - 1
    return GraphBatch(
        graph_name=batch.graph_name + "_pruned", kind="layout", node_feat=batch.node_feat[keep],
        node_opcode=batch.node_opcode[keep], edge_index=edge_index, runtime=batch.runtime,
        config_index=batch.config_index, config_node_index=new_id[batch.config_node_index],
        node_config_feat=batch.node_config_feat)


def _sync(device: torch.device | None) -> None:
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


def time_call(fn, repeats: int, device: torch.device | None = None) -> tuple[list[float], list[float], float, object]:
    """(wall seconds, CPU seconds, 1-min load average before the last call, last result); on a
    GPU the clock stops once the device has finished the call's work."""
    walls, cpus, load, out = [], [], 0.0, None
    for _ in range(repeats):
        load = os.getloadavg()[0]
        _sync(device)
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        _sync(device)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return walls, cpus, load, out


def end_to_end(batch: GraphBatch, model, precision: str, chunk: int, repeats: int,
               device: torch.device | None = None) -> dict:
    """What `graphcost rank MODEL GRAPH.npz --tta 0` does after loading the model: read the npz,
    prune (graphcost.data.transforms.prune), de-duplicate, score every configuration, sort."""
    from graphcost.data.graph import LayoutGraph
    from graphcost.data.transforms.scaler import FeatureScaler
    from graphcost.data.io.tpugraphs_io import save_graph
    from graphcost.inference.ensemble import EnsemblePredictor
    from graphcost.inference.predict import prepare_for_prediction, rank_original

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic_10k.npz"
        graph = LayoutGraph(
            path=None, node_feat=batch.node_feat.numpy(), node_opcode=batch.node_opcode.numpy().astype("uint8"),
            edge_index=batch.edge_index.flip(0).T.contiguous().numpy(),  # TpuGraphs rows [u, v]: u consumes v
            node_config_ids=batch.config_node_index.numpy(), node_config_feat=batch.node_config_feat.numpy(),
            config_runtime=batch.runtime.double().numpy() + 1.0)
        save_graph(graph, path)
        scaler = FeatureScaler().fit([prepare_for_prediction(path).prepared])
        predictor = EnsemblePredictor([(model, scaler)], "layout", batch_size=chunk, tta=0, precision=precision,
                                      device=device or "cpu")

        def rank():
            graph = prepare_for_prediction(path)
            return rank_original(predictor, graph), graph.prepared

        walls, cpus, load, ((order, _), prepared) = time_call(rank, repeats, device)
    assert len(order) == batch.num_configs
    return {"graph": "npz -> rank (pipeline)", "nodes": int(prepared.node_feat.shape[0]), "wall_s_all": walls,
            "cpu_s_all": cpus, "load_avg_1min": load}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--configurable", type=int, default=200)
    ap.add_argument("--configs", type=int, default=1_000)
    ap.add_argument("--chunk", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hidden", type=int, nargs="+", default=[256, 64])
    ap.add_argument("--precision", nargs="+", default=["fp32", "bf16"], choices=PRECISION_CHOICES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N: where the model runs")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from graphcost.runs.distributed import check_device

    device = torch.device(check_device(args.device) if args.device != "auto" else
                          ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.set_num_threads(args.threads)
    cpu = cpu_capability()  # {"isa", "bf16_flags", "native_bf16"}
    args.precision = [resolve_precision(p, device, [build_model("tgraph", "layout", hidden=8)]) for p in args.precision]
    full = synthetic_layout_batch(args.nodes, args.configurable, args.configs)
    pruned = tgraph_pruned(full)
    on_device = {"full": full.to(device), "pruned": pruned.to(device)}
    rows = []
    with torch.inference_mode():
        for hidden in args.hidden:
            torch.manual_seed(0)
            model = build_model("tgraph", "layout", hidden=hidden).eval().to(device)
            for graph, batch in on_device.items():
                reference = None
                for precision in args.precision:
                    walls, cpus, load, scores = time_call(
                        lambda m=model, b=batch, p=precision: m.score_chunked(b, chunk_size=args.chunk, precision=p),
                        args.repeats,
                        device)
                    assert scores.shape == (args.configs,) and torch.isfinite(scores).all()
                    row = {"graph": graph, "nodes": int(batch.node_feat.shape[0]), "hidden": hidden,
                           "precision": precision, "wall_s_all": walls, "cpu_s_all": cpus, "load_avg_1min": load}
                    if reference is None:
                        reference = scores
                    else:  # ranking agreement with the first precision (untrained weights: a hard case)
                        row["kendall_tau_vs_" + args.precision[0]] = float(
                            kendall_tau(scores.cpu().numpy(), reference.cpu().numpy()))
                    rows.append(row)
            if hidden == args.hidden[0]:
                for precision in args.precision:
                    rows.append({**end_to_end(full, model, precision, args.chunk, args.repeats, device),
                                 "hidden": hidden, "precision": precision})
    for r in rows:
        r["cpu_capability"], r["native_bf16"] = cpu["isa"], cpu["native_bf16"]
        r["wall_s_best"] = min(r["wall_s_all"])
        r["ms_per_config_wall"] = 1000 * r["wall_s_best"] / args.configs
        r["meets_2s_wall"] = r["wall_s_best"] < 2.0
    info = {"benchmark": "tgraph_inference_latency", "data": "synthetic", "nodes": args.nodes,
            "edges": int(full.edge_index.shape[1]), "pruned_nodes": int(pruned.node_feat.shape[0]),
            "configurable_nodes": args.configurable, "configs": args.configs, "chunk": args.chunk,
            "threads": args.threads, "weights": "untrained (seed 0)", "device": str(device),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
                       + (f", {torch.cuda.get_device_name(device)}" if device.type == "cuda" else ""),
            "cpu_capability": cpu, "torch": torch.__version__,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "results": rows}
    print(f"TGraph inference, SYNTHETIC graph: N={args.nodes} (pruned {info['pruned_nodes']}), E={info['edges']}, "
          f"C={args.configurable}, {args.configs} configs, chunk {args.chunk}, {args.threads} threads, "
          f"device {info['machine'] if device.type == 'cuda' else 'cpu'}; {describe_cpu()}")
    print(f"{'graph':>24} {'nodes':>6} {'hidden':>6} {'prec':>5} {'wall s':>8} {'cpu s':>8} {'ms/config':>10} "
          f"{'tau vs fp32':>11} {'load':>5}")
    for r in rows:
        tau = next((f"{v:.4f}" for k, v in r.items() if k.startswith("kendall_tau_vs")), "")
        print(f"{r['graph']:>24} {r['nodes']:>6} {r['hidden']:>6} {r['precision']:>5} {r['wall_s_best']:>8.2f} "
              f"{min(r['cpu_s_all']):>8.2f} {r['ms_per_config_wall']:>10.3f} {tau:>11} {r['load_avg_1min']:>5.1f}")
    if args.out:
        atomic_write_json(info, args.out)


if __name__ == "__main__":
    main()
