"""Data-parallel training: two CPU processes (gloo) under DistributedDataParallel.

One launch of two processes runs three jobs (one process-group start-up, one spawned interpreter per rank):
* "match": both ranks see the same graph and the same configurations, so DDP's averaged gradient
  equals the single-process one: parameters and validation metrics must match a single-process
  run, and the validation graphs are split between the ranks and gathered;
* "full": the ranks see different graphs, so without the gradient averaging their parameters
  would drift apart; identical parameters after training show the synchronisation works;
* "killed" + "resumed": a DDP run killed mid-epoch and resumed ends exactly like "full".
"""

import os
import socket
import time

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from graphcost.runs.distributed import DistContext, collective_failure, init_from_env

TIMING = ("train_seconds", "configs_per_s")
N_VALID = 3  # odd: the ranks score 2 and 1 graphs


def test_shards_are_disjoint_and_equal_length():
    order = np.random.default_rng(0).permutation(7)
    shards = [DistContext(rank=r, world_size=3).shard(order) for r in range(3)]
    assert {len(s) for s in shards} == {3}  # padded to equal step counts
    assert set(np.concatenate(shards)) == set(order)  # every graph visited
    first_pass = [s[:2] for s in shards]  # the first 2 rounds never repeat a graph
    assert len(set(np.concatenate(first_pass))) == 6


def test_validation_shards_cover_every_graph_once():
    shards = [DistContext(rank=r, world_size=3).shard_items(7) for r in range(3)]
    assert sorted(sum(shards, [])) == list(range(7))
    assert DistContext().shard_items(2) == [0, 1]


def test_timeout_must_be_positive():
    with pytest.raises(ValueError, match=r"^timeout_s 0: expected a positive number of seconds$"):
        init_from_env("cpu", timeout_s=0)


@pytest.mark.parametrize("env, needle", [
    ({"WORLD_SIZE": "abc"}, "environment variable WORLD_SIZE must be an integer, got 'abc'"),
    ({"WORLD_SIZE": "0"}, "environment variable WORLD_SIZE must be >= 1, got 0"),
    ({"WORLD_SIZE": "2"}, "environment variable RANK is not set"),
    ({"WORLD_SIZE": "2", "RANK": "x"}, "environment variable RANK must be an integer, got 'x'"),
    ({"WORLD_SIZE": "2", "RANK": "2"}, "environment variable RANK must be in [0, 1], got 2"),
    ({"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "-1"}, "environment variable LOCAL_RANK must be >= 0, got -1"),
])
def test_torchrun_variables_are_checked_by_name(monkeypatch, env, needle):
    """issue 65: WORLD_SIZE=abc was int()'s ValueError; RANK and LOCAL_RANK were not checked."""
    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ValueError) as info:
        init_from_env("cpu")
    assert str(info.value).startswith(needle), str(info.value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graphs():
    from train_stubs import make_layout_graph

    return [make_layout_graph(f"g{i}", seed=i, n_configs=24) for i in range(5 + N_VALID)]


def _no_dropout(name, kind, **config):
    from train_stubs import build_tiny

    model = build_tiny(name, kind, **config)
    model.drop.p = 0.0  # dropout masks are drawn per rank: off, so both ranks compute the same gradient
    return model


def _config(**kw):
    from graphcost.train.trainer import TrainConfig

    base = dict(model="tiny", model_config={"hidden": 8}, epochs=2, batch_configs=8, lr=3e-3, seed=3,
                device="cpu", eval_batch=24, progress=False, plots=False,
                max_steps_per_graph=1, min_epoch_steps=1)  # one batch per graph: "match" = the same batch on both ranks
    base.update(kw)
    return TrainConfig(**base)


def _match_run(out, ctx=None, scored=None):
    """One training graph, the first configurations every step, no dropout: identical on every rank."""
    from train_stubs import stub_trainer

    graphs = _graphs()
    valid_names = {g.name for g in graphs[5:]}

    def make_batch(graph, idx, scaler):
        from graphcost.data.transforms.batching import make_batch as real

        if scored is not None and graph.name in valid_names:
            scored.add(graph.name)
        return real(graph, idx, scaler)

    trainer_cls = stub_trainer(build_model=_no_dropout, sample=lambda g, b, rng: np.arange(b), make_batch=make_batch)
    trainer = trainer_cls(_config(), graphs[:1], graphs[5:], out, dist_ctx=ctx)
    return trainer, trainer.fit()


def _worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    from train_stubs import build_tiny, stub_trainer

    from graphcost.runs.distributed import shutdown
    from train_stubs import StopTraining

    ctx = init_from_env("cpu", timeout_s=120)
    assert ctx.enabled and ctx.backend == "gloo"
    record = {}

    scored: set = set()
    trainer, result = _match_run(os.path.join(out, "match"), ctx, scored)
    record["match"] = {"params": trainer.model.state_dict(), "history": result.history, "scored": sorted(scored),
                       "wrapped": type(trainer.train_model).__name__}

    graphs = _graphs()
    config = _config(checkpoint_every=1)

    def run(name, **fit_kw):
        seen = []
        trainer_cls = stub_trainer(
            build_model=build_tiny,
            sample=lambda g, b, rng: (seen.append(g.name), rng.permutation(g.num_configs)[:b])[1],
        )
        trainer = trainer_cls(config, graphs[:5], graphs[5:], os.path.join(out, name), dist_ctx=ctx)
        return trainer, trainer.fit(**fit_kw), seen

    trainer, result, seen = run("full")
    record["full"] = {"params": trainer.model.state_dict(), "history": result.history, "seen": seen}

    def kill(trainer, epoch, step):  # a crash of every rank after step 2 of epoch 1 (of 3 steps)
        if (epoch, step) == (1, 2):
            raise StopTraining

    try:
        run("killed", step_callback=kill)
    except StopTraining:
        pass
    trainer, result, _ = run("killed", resume=True)
    record["resumed"] = {"params": trainer.model.state_dict(), "history": result.history}
    torch.save(record, os.path.join(out, f"rank{rank}.pt"))
    shutdown(ctx)


def _start_method() -> str:
    # spawn, never fork: a pytest worker that ran JAX (or Ray) before holds their threads, and a forked
    # child can deadlock on a lock one of them held (JAX warns: "os.fork() ... will likely lead to a
    # deadlock"). A fresh interpreter per rank costs a few seconds of imports.
    return "spawn"


def _metrics(history):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in history]


def test_two_cpu_processes_match_single_process_and_resume_exactly(tmp_path):
    mp.start_processes(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True,
                       start_method=_start_method())
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in (0, 1))

    # "match": DDP == one process, and the validation graphs were split between the ranks. The reference
    # runs with the ranks' one thread: Adam turns the reduction-order noise of a zero gradient into a
    # visible step, so 2 threads here (an in-process CLI command's --threads auto) differed by 7e-4.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one, single = _match_run(tmp_path / "single")
    finally:
        torch.set_num_threads(threads)
    match = r0["match"]
    assert match["wrapped"] == "DistributedDataParallel" and one.train_model is one.model
    for name, p in one.model.state_dict().items():
        torch.testing.assert_close(match["params"][name], p, rtol=1e-5, atol=1e-6)
    assert len(match["history"]) == len(single.history) == 2
    for ddp_row, one_row, other_rank in zip(match["history"], single.history, r1["match"]["history"]):
        for key, value in _metrics([one_row])[0].items():
            assert ddp_row[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
            assert other_rank[key] == ddp_row[key], key  # every rank holds the gathered metrics
    assert r0["match"]["scored"] == ["g5", "g7"] and r1["match"]["scored"] == ["g6"]

    # "full": the ranks saw different graphs and still hold identical parameters
    for name, p in r0["full"]["params"].items():
        assert torch.equal(p, r1["full"]["params"][name]), name
    seen0, seen1 = r0["full"]["seen"], r1["full"]["seen"]
    assert len(seen0) == len(seen1) == 6  # 5 graphs, 2 ranks -> 3 steps per rank per epoch
    for epoch in range(2):
        assert len(set(seen0[3 * epoch : 3 * epoch + 3]) | set(seen1[3 * epoch : 3 * epoch + 3])) == 5
    assert (tmp_path / "full" / "checkpoint.pt").is_file() and (tmp_path / "full" / "metrics.csv").is_file()

    # killed + resumed == uninterrupted, on both ranks
    for rank in (r0, r1):
        assert _metrics(rank["resumed"]["history"]) == _metrics(r0["full"]["history"])
        for name, p in r0["full"]["params"].items():
            assert torch.equal(p, rank["resumed"]["params"][name]), name


def _timeout_worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    ctx = init_from_env("cpu", timeout_s=1)
    if rank == 0:
        time.sleep(2.5)  # "hangs" past rank 1's 1 s timeout and never joins the barrier
        return
    try:
        ctx.barrier()
        message = "no error"
    except Exception as exc:  # noqa: BLE001  (the backend's error type varies between torch versions)
        message = f"{collective_failure(exc)}"  # what `graphcost train` reports
    with open(os.path.join(out, "rank1.txt"), "w") as f:
        f.write(message)


def test_a_rank_left_waiting_fails_after_the_timeout(tmp_path):
    mp.start_processes(_timeout_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True,
                       start_method=_start_method())
    message = (tmp_path / "rank1.txt").read_text()
    assert message != "no error" and "timed out" in message.lower(), message


def test_only_collective_failures_become_one_line_errors():
    assert collective_failure(RuntimeError("[gloo/tcp/pair.cc:598] Connection closed by peer\nmore")) == (
        "[gloo/tcp/pair.cc:598] Connection closed by peer")
    assert collective_failure(RuntimeError("mat1 and mat2 shapes cannot be multiplied")) is None
    assert collective_failure(ValueError("timed out")) is None


def test_resume_refuses_another_number_of_processes(tmp_path, layout_graphs, tiny_trainer):
    from graphcost.runs.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

    tiny_trainer(_config(epochs=1), layout_graphs[:4], layout_graphs[4:], tmp_path).fit()
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    assert state["world_size"] == 1 and len(state["partials"]) == 1
    state["world_size"] = 2  # as written by `torchrun --nproc_per_node 2`
    save_checkpoint(tmp_path / "checkpoint.pt", state)
    with pytest.raises(CheckpointError, match="2 data-parallel process"):
        tiny_trainer(_config(epochs=1), layout_graphs[:4], layout_graphs[4:], tmp_path).fit(resume=True)
