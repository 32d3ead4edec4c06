"""TGraph: the shared-node fast path equals the dense PyG path; the layers do their equations."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from graphcost.models.layers import (
    ChannelSE,
    CrossConfigAttention,
    L2SAGE,
    LayoutEmbedding,
    ReferenceInstanceNorm,
    layout_change_features,
)
from graphcost.models.registry import build_model
from graphcost.models.tgraph import TGraph, TGraphConfig
from models_testutil import make_layout_batch, make_tile_batch, permute_configs

ABLATIONS = [{}, {"channel_attention": False}, {"cross_attention": False}, {"use_edges": False},
             {"norm": "none"}, {"aggr": "mean"}, {"directed": True}, {"cross_scale": "softmax"},
             {"change_features": False}, {"readout": "mean"}]


@pytest.mark.parametrize("extra", ABLATIONS, ids=str)
def test_fast_path_equals_dense_pyg_path(extra):
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small(**extra))
    batch = make_layout_batch(num_nodes=20, num_configs=6, num_configurable=3, seed=3)
    fast = model(batch)
    dense = model.forward_dense(batch)
    torch.testing.assert_close(fast, dense, rtol=1e-4, atol=1e-5)
    # gradients of the fast path reach every parameter used
    fast.sum().backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if "blocks" in n and p.requires_grad)


def test_tile_fast_equals_dense():
    torch.manual_seed(0)
    model = TGraph("tile", TGraphConfig.small())
    batch = make_tile_batch()
    torch.testing.assert_close(model(batch), model.forward_dense(batch))


def test_chunked_scoring_groups_cross_attention():
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small()).eval()
    batch = make_layout_batch(num_configs=10)
    with torch.no_grad():
        whole = model(batch)
        torch.testing.assert_close(model.score_chunked(batch, chunk_size=10), whole)
        chunked = model.score_chunked(batch, chunk_size=4)  # near-equal groups 4 + 3 + 3
        first = model(permute_configs(batch, torch.arange(4)))
        last = model(permute_configs(batch, torch.arange(7, 10)))
    torch.testing.assert_close(chunked[:4], first)
    torch.testing.assert_close(chunked[7:], last)


def test_cross_attention_compares_configurations():
    """With A_cross a score depends on the other configurations of the batch; without, not."""
    batch = make_layout_batch(num_configs=6)
    other = make_layout_batch(num_configs=6)
    other.node_config_feat = other.node_config_feat.clone()
    other.node_config_feat[1:] = torch.flip(other.node_config_feat[1:], dims=[2])  # change configs 1..5
    for cross, should_change in ((True, True), (False, False)):
        torch.manual_seed(0)
        model = TGraph("layout", TGraphConfig.small(cross_attention=cross)).eval()
        with torch.no_grad():
            a, b = model(batch)[0], model(other)[0]
        assert (not torch.isclose(a, b, atol=1e-7)) == should_change


def _repeated(batch, config: int, times: int):
    """`batch` with only configuration `config`, `times` times."""
    return permute_configs(batch, torch.full((times,), config, dtype=torch.long))


@pytest.mark.parametrize("norm", ["reference", "none"])
def test_score_does_not_depend_on_batch_size(norm):
    """Defect found by the issue-24 ablation: eq. 6's softmax gives a state shared by the whole batch
    the weight 1/B, so a model trained on batches of 64 scored batches of 128 with the shared part of
    the graph halved. With cross_scale "mean" a configuration among copies of itself scores the same
    at any batch size; the paper-literal weights do not."""
    batch = make_layout_batch(num_nodes=20, num_configs=6, num_configurable=3, seed=5)
    torch.manual_seed(0)
    fixed = TGraph("layout", TGraphConfig.small(norm=norm)).eval()
    torch.manual_seed(0)
    paper = TGraph("layout", TGraphConfig.small(norm=norm, cross_scale="softmax")).eval()
    with torch.no_grad():
        for model, invariant in ((fixed, True), (paper, False)):
            s2, s64, s128 = (model(_repeated(batch, 2, b))[0] for b in (2, 64, 128))
            assert torch.isclose(s2, s128, rtol=1e-5, atol=1e-6).item() == invariant
            assert torch.isclose(s64, s128, rtol=1e-5, atol=1e-6).item() == invariant


def _padded(batch, extra: int):
    """`batch` with `extra` more nodes that no edge and no configuration reaches (copies of node 0's
    features): every configuration's graph grows by the same unrelated work."""
    import dataclasses

    return dataclasses.replace(batch, node_feat=torch.cat([batch.node_feat, batch.node_feat[:1].expand(extra, -1)]),
                               node_opcode=torch.cat([batch.node_opcode, batch.node_opcode[:1].expand(extra)]))


@pytest.mark.parametrize("cross_attention", [True, False])
def test_score_change_does_not_shrink_with_graph_size(cross_attention):
    """Defect found by the issue-24 within-program ablation: with the paper's mean readout and a
    linear f_out, what a configuration changes moves the score by O(k / N), so on a real graph of
    ~10^3 nodes the hinge margin is out of reach and TGraph underfits (train loss stalls, τ at the
    count heuristic's level). With readout "sum" the difference between two configurations does not
    depend on how much unrelated work the graph holds; with "mean" it shrinks as N grows."""
    batch = make_layout_batch(num_nodes=20, num_configs=4, num_configurable=3, seed=7)
    big = _padded(batch, 180)  # 10x the nodes
    for readout, invariant in (("sum", True), ("mean", False)):
        torch.manual_seed(0)
        model = TGraph("layout", TGraphConfig.small(norm="none", readout=readout, cross_attention=cross_attention))
        with torch.no_grad():
            small_gap, big_gap = (s[1:] - s[0] for s in (model.eval()(batch), model(big)))
        assert torch.allclose(small_gap, big_gap, rtol=1e-3, atol=1e-5) == invariant
        if not invariant:  # mean: the same change is worth about 20 / 200 as much
            torch.testing.assert_close(big_gap, small_gap * 20 / 200, rtol=1e-3, atol=1e-7)


def test_layout_change_features_by_hand():
    unset = [-1] * 6
    row_major_2d = [1, 0, -1, -1, -1, -1]  # the default layout of a rank-2 tensor
    col_major_2d = [0, 1, -1, -1, -1, -1]  # minor-most dimension moved
    swap_major_3d = [2, 0, 1, -1, -1, -1]  # rank 3: minor-most kept, the other two swapped
    cfg = torch.tensor([[*row_major_2d, *col_major_2d, *unset],
                        [*unset, *unset, *unset],
                        [*swap_major_3d, *row_major_2d, *col_major_2d]], dtype=torch.float32)
    expected = torch.tensor([[0, 1, 0, 0, 1, 0],   # moved (out, in, kernel), minor moved (out, in, kernel)
                             [0, 0, 0, 0, 0, 0],
                             [1, 0, 1, 0, 0, 1]], dtype=torch.float32)
    torch.testing.assert_close(layout_change_features(cfg), expected)
    torch.testing.assert_close(layout_change_features(cfg.unsqueeze(0)), expected.unsqueeze(0))  # (..., 18)


def test_change_features_reach_the_score():
    """Two configurations that differ only in whether a layout is the default get different inputs."""
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small())
    cfg = torch.tensor([[1.0, 0.0, *[-1.0] * 16], [0.0, 1.0, *[-1.0] * 16]])  # default vs moved, rank 2
    part = model._config_part(cfg)
    assert part.shape == (2, model.config_dim)
    torch.testing.assert_close(part[:, -6:], torch.tensor([[0.0] * 6, [1.0, 0, 0, 1.0, 0, 0]]))


def test_saved_specs_without_new_fields_keep_their_behaviour():
    from graphcost.models.registry import model_from_spec

    old = model_from_spec({"name": "tgraph", "kind": "layout", "config": {"hidden": 32}})
    assert old.config.cross_scale == "softmax" and not old.config.change_features
    new = build_model("tgraph", "layout", hidden=32)
    assert new.config.cross_scale == "mean" and new.config.change_features


def test_ablation_shapes_keep_the_residual():
    on = TGraph("layout", TGraphConfig.small(hidden=32))
    off = TGraph("layout", TGraphConfig.small(hidden=32, cross_attention=False))
    assert on.blocks[0].sage.out_channels == 16  # concat(η, A_cross(η)) = 32
    assert off.blocks[0].sage.out_channels == 32
    assert on.blocks[0].se.excite.out_features == 2  # 8x bottleneck of 16


def test_paper_default_sizes():
    m = build_model("tgraph", "layout")
    assert m.config.hidden == 256 and m.config.opcode_dim == 16 and m.config.layout_dim == 4
    assert m.f_in[0].in_features == 134 + 6 * 4 + 18 * 4 + 6 + 16  # + layout_change_features
    assert len(m.blocks) == 2


def test_layers_do_their_equations():
    torch.manual_seed(0)
    x = torch.randn(5, 7, 16)  # (B, N, F)
    paper = CrossConfigAttention(init_temperature=2.0, scale="softmax")
    expected = x * torch.softmax(x / 2.0, dim=0)
    torch.testing.assert_close(paper(x), expected)
    same = x[:1].expand(5, -1, -1)
    torch.testing.assert_close(paper(same), paper.shared_value(same, 5))
    cross = CrossConfigAttention(init_temperature=2.0)  # default "mean": B · softmax
    torch.testing.assert_close(cross(x), 5 * expected)
    torch.testing.assert_close(cross(same), same)  # a shared state is left as it is, whatever B
    torch.testing.assert_close(cross.shared_value(same, 5), same)
    se = ChannelSE(16)
    gate = torch.sigmoid(se.square(F.relu(se.excite(x))))
    torch.testing.assert_close(se(x), x * gate)
    assert se.excite.out_features == 2
    sage = L2SAGE(16, 8)
    ei = torch.tensor([[0, 1, 2], [1, 2, 3]])
    out = sage(x, ei)
    torch.testing.assert_close(out.norm(dim=-1), torch.ones(5, 7))
    norm = ReferenceInstanceNorm(16)
    y = norm(x)
    torch.testing.assert_close(y.mean(-2), torch.zeros(5, 16), atol=1e-5, rtol=0)


def test_layout_embedding_shared_table_and_range_check():
    emb = LayoutEmbedding(3)
    v = torch.tensor([[-1.0, 0.0, 5.0]])
    out = emb(v)
    assert out.shape == (1, 9)
    torch.testing.assert_close(out[0, :3], emb.table.weight[0])
    torch.testing.assert_close(out[0, 6:], emb.table.weight[6])
    with pytest.raises(ValueError, match="layout values"):
        emb(torch.tensor([[6.0]]))


@pytest.mark.parametrize("extra", [{}, {"cross_attention": False}, {"num_blocks": 3}], ids=str)
def test_inference_node_tiling_matches_dense(monkeypatch, extra):
    """Without gradients the block tail runs in node tiles, in place; same scores as dense."""
    monkeypatch.setattr(TGraph, "_tile_rows", staticmethod(lambda b, c, *_: 3))
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small(**extra)).eval()
    batch = make_layout_batch(num_nodes=40, num_configs=9, num_configurable=5, seed=2)
    with torch.no_grad():
        fast = model.score_chunked(batch, chunk_size=9)
        dense = model.forward_dense(batch)
    torch.testing.assert_close(fast, dense, rtol=1e-4, atol=1e-5)


def test_explicit_chunk_sizes_score_each_chunk_as_its_own_group():
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small()).eval()
    batch = make_layout_batch(num_nodes=30, num_configs=11, num_configurable=4, seed=5)
    with torch.no_grad():
        got = model.score_chunked(batch, chunk_sizes=[4, 4, 3])
        for start, size in ((0, 4), (4, 4), (8, 3)):
            part = slice(start, start + size)
            alone = model(permute_configs(batch, torch.arange(11)[part]))
            torch.testing.assert_close(got[part], alone)
        with pytest.raises(ValueError, match="add up"):
            model.score_chunked(batch, chunk_sizes=[4, 4])


@pytest.mark.parametrize("extra", [{}, {"num_blocks": 3}, {"num_blocks": 0}], ids=str)
def test_bf16_inference_follows_fp32(extra):
    """bf16 rounds the per-configuration states (rel. error ~2^-8) but keeps the reference pass
    and the pooling sums in float32: scores move a little (here corr ≈ 0.9998), not the order."""
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small(**extra)).eval()
    batch = make_layout_batch(num_nodes=60, num_configs=40, num_configurable=8, seed=6)
    with torch.no_grad():
        fp32 = model.score_chunked(batch, chunk_size=16)
        bf16 = model.score_chunked(batch, chunk_size=16, precision="bf16")
    assert bf16.dtype == torch.float32 and bf16.shape == fp32.shape
    corr = torch.corrcoef(torch.stack([fp32, bf16]))[0, 1]
    assert corr > 0.995, corr
    assert not torch.equal(fp32, bf16)  # it really ran in bfloat16
    with pytest.raises(ValueError, match="precision"):
        model.score_chunked(batch, precision="fp8")
    with pytest.raises(ValueError, match="no_grad"):
        model.score_chunked(batch, precision="bf16")  # gradients on: bf16 is inference only


def test_fast_path_counts_duplicate_edges_like_pyg():
    """An operand used twice is two identical edges; both paths must sum both messages."""
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small())
    batch = make_layout_batch(num_nodes=20, num_configs=5, num_configurable=3, seed=4)
    batch.edge_index = torch.cat([batch.edge_index, batch.edge_index[:, :7]], dim=1)  # 7 doubled edges
    torch.testing.assert_close(model(batch), model.forward_dense(batch), rtol=1e-4, atol=1e-5)
