"""Data-parallel training: two CPU processes (gloo) keep identical parameters and finish.

The ranks see different graphs each step, so without the gradient all-reduce their parameters
would drift apart; identical parameters after training show the synchronisation works.
"""

import os
import socket

import numpy as np
import torch
import torch.multiprocessing as mp

from graphcost.train.distributed import DistContext


def test_shards_are_disjoint_and_equal_length():
    order = np.random.default_rng(0).permutation(7)
    shards = [DistContext(rank=r, world_size=3).shard(order) for r in range(3)]
    assert {len(s) for s in shards} == {3}  # padded to equal step counts
    assert set(np.concatenate(shards)) == set(order)  # every graph visited
    first_pass = [s[:2] for s in shards]  # the first 2 rounds never repeat a graph
    assert len(set(np.concatenate(first_pass))) == 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    from train_stubs import build_tiny, make_layout_graph

    from graphcost.train.distributed import init_from_env, shutdown
    from graphcost.train.trainer import TrainConfig, Trainer

    ctx = init_from_env("cpu")
    assert ctx.enabled and ctx.backend == "gloo"
    graphs = [make_layout_graph(f"g{i}", seed=i, n_configs=24) for i in range(6)]
    seen = []
    config = TrainConfig(model="tiny", model_config={"hidden": 8}, epochs=2, batch_configs=8, seed=3,
                         device="cpu", eval_batch=24, progress=False, plots=False)
    trainer = Trainer(config, graphs[:5], graphs[5:], out, dist_ctx=ctx, build_model_fn=build_tiny,
                      sample_fn=lambda g, b, rng: (seen.append(g.name), rng.permutation(g.num_configs)[:b])[1])
    result = trainer.fit()
    torch.save({"params": trainer.model.state_dict(), "seen": seen, "epochs": len(result.history)},
               os.path.join(out, f"rank{rank}.pt"))
    shutdown(ctx)


def test_two_cpu_processes_stay_in_sync(tmp_path):
    import torch._dynamo  # noqa: F401  (optimizer.step imports it lazily; import once, before forking)

    # fork: the children reuse the already imported torch (no 2 x import time on a busy machine).
    # Where CUDA is present, autograd starts its device threads at the first backward in this
    # process (any earlier test), and a forked child can then not run backward: spawn instead.
    method = "spawn" if torch.cuda.is_available() else "fork"
    mp.start_processes(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True, start_method=method)
    r0 = torch.load(tmp_path / "rank0.pt", weights_only=True)
    r1 = torch.load(tmp_path / "rank1.pt", weights_only=True)
    assert r0["epochs"] == r1["epochs"] == 2
    for name, p in r0["params"].items():
        assert torch.equal(p, r1["params"][name]), name
    # 5 graphs, 2 ranks -> 3 steps per rank per epoch; within an epoch the ranks' graphs differ
    assert len(r0["seen"]) == len(r1["seen"]) == 6
    for epoch in range(2):
        a, b = r0["seen"][3 * epoch : 3 * epoch + 3], r1["seen"][3 * epoch : 3 * epoch + 3]
        assert len(set(a) | set(b)) == 5  # all graphs visited, only the wrap-around pad repeats
    assert (tmp_path / "checkpoint.pt").is_file() and (tmp_path / "metrics.csv").is_file()
