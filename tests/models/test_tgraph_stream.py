"""TGraph's streamed inference pass (tgraph_stream): same scores as the dense PyG path in every
ablation, at any tile size, with buffers reused across chunks of different sizes."""

from __future__ import annotations

import pytest
import torch
from models_testutil import make_layout_batch, permute_configs

from graphcost.models.shared_nodes import Edges, SagePlan
from graphcost.models.tgraph import TGraph, TGraphConfig
from graphcost.models.tgraph_stream import Workspace, mixed_rows

ABLATIONS = [{}, {"channel_attention": False}, {"cross_attention": False}, {"use_edges": False},
             {"norm": "none"}, {"aggr": "mean"}, {"directed": True}, {"num_blocks": 1},
             {"num_blocks": 3}, {"num_blocks": 4, "aggr": "mean"}]


@pytest.mark.parametrize("rows", [1, 4, 1000])
@pytest.mark.parametrize("extra", ABLATIONS, ids=str)
def test_streamed_scores_equal_dense(monkeypatch, extra, rows):
    monkeypatch.setattr(TGraph, "_tile_rows", staticmethod(lambda b, c, *_: rows))
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small(**extra)).eval()
    batch = make_layout_batch(num_nodes=40, num_configs=7, num_configurable=5, seed=2)
    with torch.no_grad():
        fast = model.score_chunked(batch, chunk_size=None)
        dense = model.forward_dense(batch)
    torch.testing.assert_close(fast, dense, rtol=1e-4, atol=1e-5)


def test_streamed_counts_duplicate_edges(monkeypatch):
    """Doubled edges give mix entries of weight 2 (embedding-bag weights), as in PyG's sum."""
    monkeypatch.setattr(TGraph, "_tile_rows", staticmethod(lambda b, c, *_: 3))
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small()).eval()
    batch = make_layout_batch(num_nodes=30, num_configs=6, num_configurable=4, seed=4)
    batch.edge_index = torch.cat([batch.edge_index, batch.edge_index[:, :9]], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(model(batch), model.forward_dense(batch), rtol=1e-4, atol=1e-5)


def test_workspace_reused_across_chunk_sizes(monkeypatch):
    """One workspace serves chunks of different sizes: a smaller chunk after a larger one
    views the front of the larger buffers, a larger one regrows them."""
    monkeypatch.setattr(TGraph, "_tile_rows", staticmethod(lambda b, c, *_: 5))
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small()).eval()
    batch = make_layout_batch(num_nodes=36, num_configs=17, num_configurable=6, seed=7)
    sizes = [6, 2, 9]
    with torch.no_grad():
        got = model.score_chunked(batch, chunk_sizes=sizes)
        start = 0
        for n in sizes:
            part = torch.arange(start, start + n)
            torch.testing.assert_close(got[part], model.forward_dense(permute_configs(batch, part)),
                                       rtol=1e-4, atol=1e-5)
            start += n


def test_workspace_buffers():
    ws = Workspace()
    like = torch.zeros(1)
    a = ws.get("a", (4, 3), like)
    b = ws.get("a", (2, 5), like)
    assert b.data_ptr() == a.data_ptr() and b.shape == (2, 5)  # same storage, new view
    c = ws.get("a", (5, 5), like)
    assert c.shape == (5, 5) and c.numel() == 25  # regrown
    assert ws.get("a", (2, 2), like, torch.bfloat16).dtype == torch.bfloat16


@pytest.mark.parametrize("aggr", ["sum", "mean"])
def test_mixed_rows_equal_the_sparse_product(aggr):
    """Rows r0:r1 of mix @ [W_l x; W_r x] + const taken as embedding-bag sums."""
    torch.manual_seed(0)
    from graphcost.models.layers import L2SAGE

    conv = L2SAGE(8, 6, aggr=aggr)
    ei = torch.tensor([[0, 1, 1, 2, 3, 3, 5, 0], [1, 2, 2, 4, 4, 6, 6, 7]])
    edges = Edges.build(ei, 8)
    x_ref = torch.randn(8, 8)
    static_out = torch.randn(8, 6)
    plan = SagePlan.build(conv, edges, torch.tensor([1, 3, 5]), x_ref, static_out)
    assert plan.mix_weight is not None  # sum: the doubled edge 1->2 weighs 2; mean: 1/deg
    unique = SagePlan.build(conv, Edges.build(ei[:, [0, 1, 3, 4, 5, 6, 7]], 8), torch.tensor([1, 3, 5]), x_ref, static_out)
    assert (unique.mix_weight is None) == (aggr == "sum")  # all ones: no weights passed
    dyn = torch.randn(3, 4, 8)  # (D, B, F)
    with torch.no_grad():
        y = torch.cat([dyn @ plan.w_l.T, dyn @ plan.w_r.T])
        whole = plan.apply(dyn)
        d_out = plan.idx_out.numel()
        for r0, r1 in ((0, d_out), (1, 3), (d_out - 1, d_out)):
            torch.testing.assert_close(mixed_rows(plan, y, r0, r1), whole[r0:r1])


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_chunks_on_two_threads_match_one(mode):
    """score_chunked without gradients runs chunks side by side on the intra-op threads
    (tgraph_stream.map_chunks): same scores as one thread, thread count restored."""
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small()).eval()
    batch = make_layout_batch(num_nodes=30, num_configs=20, num_configurable=5, seed=8)
    ctx = torch.no_grad if mode == "no_grad" else torch.inference_mode
    with ctx():
        one = model.score_chunked(batch, chunk_size=6)  # conftest: 1 thread -> sequential
        torch.set_num_threads(2)
        two = model.score_chunked(batch, chunk_size=6)  # 4 chunks on 2 threads
        assert torch.get_num_threads() == 2
        bf16 = model.score_chunked(batch, chunk_size=6, precision="bf16")
    torch.testing.assert_close(two, one, rtol=1e-5, atol=1e-6)
    assert torch.isfinite(bf16).all() and bf16.shape == one.shape


def test_map_chunks_keeps_order_and_mode():
    from graphcost.models.tgraph_stream import map_chunks

    torch.set_num_threads(2)
    with torch.no_grad():
        got = map_chunks(lambda i, ws: torch.tensor([float(i), float(torch.is_grad_enabled())]), range(7), 2)
    assert [int(t[0]) for t in got] == list(range(7)) and all(t[1] == 0 for t in got)
    assert torch.get_num_threads() == 2
