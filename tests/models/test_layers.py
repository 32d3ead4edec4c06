"""`nn.Module.apply(fn)` works on every model (no layer shadows it), `reset_parameters()` re-initialises
a whole model and leaves it usable, and each custom layer's `reset_parameters()` restores its defaults."""

from __future__ import annotations

import math

import pytest
import torch

from graphcost.models.layers import ChannelSE, CrossConfigAttention, LayoutEmbedding, ReferenceInstanceNorm
from graphcost.models.registry import MODEL_NAMES, build_model, model_kinds
from models_testutil import make_layout_batch, make_tile_batch

SMALL = {
    "tgraph": {"hidden": 16, "opcode_dim": 4, "layout_dim": 2},
    "kaufman": {"hidden": 16, "opcode_dim": 4, "num_layers": 2, "node_layers": 1, "dropout": 0.0},
}
BASELINE_SMALL = {"hidden": 16, "opcode_dim": 4, "num_layers": 2}
CASES = [(name, kind) for name in MODEL_NAMES for kind in model_kinds(name)]


def reinit(module: torch.nn.Module) -> None:
    getattr(module, "reset_parameters", lambda: None)()


@pytest.mark.parametrize("name,kind", CASES, ids=lambda v: str(v))
def test_apply_reinitialises_every_cost_model(name, kind):
    torch.manual_seed(0)
    model = build_model(name, kind, **SMALL.get(name, BASELINE_SMALL)).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert model.apply(reinit) is model
    after = model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # something was drawn afresh
    batch = make_layout_batch() if kind == "layout" else make_tile_batch()
    with torch.no_grad():
        scores = model(batch)
    assert scores.shape == (batch.num_configs,) and torch.isfinite(scores).all()


def test_apply_reinitialises_layerdag():
    from graphcost.layerdag.batch import build_batch
    from graphcost.layerdag.datasets.lp import generate_lp_dataset
    from graphcost.layerdag.train import _labels, build_model as build_layerdag

    torch.manual_seed(0)
    model, prepared = build_layerdag(generate_lp_dataset(6, seed=0), dim=16, T_node=2, T_edge=2, heads=2)
    assert model.apply(reinit) is model
    out = model.loss(build_batch(prepared), _labels(prepared), torch.Generator().manual_seed(0))
    assert torch.isfinite(out["loss"])


def test_custom_layers_reset_to_their_defaults():
    torch.manual_seed(0)
    norm = ReferenceInstanceNorm(8)
    attn = CrossConfigAttention(init_temperature=2.5)
    fresh = attn.log_temperature.detach().clone()
    with torch.no_grad():
        norm.weight.mul_(3.0).add_(1.0)
        norm.bias.add_(0.5)
        attn.log_temperature.add_(1.0)
    norm.reset_parameters()
    attn.reset_parameters()
    assert torch.equal(norm.weight, torch.ones(8)) and torch.equal(norm.bias, torch.zeros(8))
    assert torch.equal(attn.log_temperature, fresh) and math.isclose(float(attn.temperature.detach()), 2.5, rel_tol=1e-6)

    se, emb = ChannelSE(16), LayoutEmbedding(4)
    for layer, params in ((se, [se.excite.weight, se.square.weight]), (emb, [emb.table.weight])):
        with torch.no_grad():
            for p in params:
                p.fill_(7.0)
        layer.reset_parameters()
        assert all(not torch.all(p == 7.0) for p in params)


def test_reference_norm_normalize_is_forward_with_given_statistics():
    torch.manual_seed(0)
    norm = ReferenceInstanceNorm(4)
    x = torch.randn(3, 5, 4)
    mean, inv_std = norm.stats(x)
    assert torch.allclose(norm.normalize(x, mean, inv_std), norm(x))
