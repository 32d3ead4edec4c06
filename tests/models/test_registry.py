"""Registry: names, kind checks, config validation, rebuilding from a saved spec; batch checks."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from graphcost.models.kaufman import topological_order
from graphcost.models.registry import MODEL_NAMES, build_model, model_from_spec, model_kinds, model_spec
from models_testutil import make_layout_batch, make_tile_batch


def test_names():
    assert set(MODEL_NAMES) == {"tgraph", "sage", "tile-mlp", "early-sage", "early-gcn", "late-sage", "late-gcn", "kaufman"}


@pytest.mark.parametrize("name,kind", [("sage", "tile"), ("tile-mlp", "layout"), ("late-gcn", "layout")])
def test_kind_mismatch_is_a_clear_error(name, kind):
    with pytest.raises(ValueError, match=f"does not support kind '{kind}'"):
        build_model(name, kind)


def test_unknown_model_and_field():
    with pytest.raises(ValueError, match="unknown model"):
        build_model("nope", "tile")
    with pytest.raises(ValueError, match="unknown config field"):
        build_model("tgraph", "layout", hiden=3)
    with pytest.raises(ValueError, match="encoder"):
        build_model("kaufman", "tile", encoder="gcn")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_spec_round_trip(name):
    kind = model_kinds(name)[0]
    torch.manual_seed(0)
    model = build_model(name, kind, hidden=16, opcode_dim=4).eval()
    spec = json.loads(json.dumps(model_spec(model)))  # JSON-serialisable
    assert spec["name"] == name and spec["kind"] == kind and model.name == name
    clone = model_from_spec(spec).eval()
    clone.load_state_dict(model.state_dict())
    batch = make_layout_batch() if kind == "layout" else make_tile_batch()
    with torch.no_grad():
        torch.testing.assert_close(clone(batch), model(batch))


def test_bad_batch_names_field():
    model = build_model("tgraph", "layout", hidden=16, opcode_dim=4, layout_dim=2)
    batch = make_layout_batch()
    batch.node_feat = batch.node_feat[:, :100]
    with pytest.raises(ValueError, match="'node_feat'"):
        model(batch)
    batch = make_layout_batch()
    batch.node_config_feat = batch.node_config_feat[:, :, :10]
    with pytest.raises(ValueError, match="'node_config_feat'"):
        model(batch)
    with pytest.raises(ValueError, match="'kind'"):
        model(make_tile_batch())
    batch = make_tile_batch()
    batch.node_opcode = batch.node_opcode + 1000
    with pytest.raises(ValueError, match="'node_opcode'"):
        build_model("tile-mlp", "tile")(batch)


def test_topological_order():
    ei = torch.tensor([[3, 0, 1, 3], [0, 1, 2, 2]])
    order = topological_order(ei, 4).tolist()
    pos = {v: i for i, v in enumerate(order)}
    assert all(pos[s] < pos[d] for s, d in ei.t().tolist())
    with pytest.raises(ValueError, match="cycle"):
        topological_order(torch.tensor([[0, 1], [1, 0]]), 2)


def test_graph_segment_training():
    torch.manual_seed(0)
    model = build_model("sage", "layout", hidden=16, opcode_dim=4, num_layers=2)
    batch = make_layout_batch(num_nodes=16)
    rng = np.random.default_rng(0)
    # one segment = the whole graph: identical to the plain forward pass
    torch.testing.assert_close(model.segment_forward(batch, 1, rng), model(batch))
    out = model.segment_forward(batch, 4, rng)
    assert out.shape == (batch.num_configs,) and torch.isfinite(out).all()
    out.sum().backward()
    assert model.gnn.convs[0].lin_l.weight.grad is not None


def test_config_values_are_type_checked_and_converted():
    from graphcost.models.registry import coerce_config

    # strings from --model-opt are converted to the dataclass field types
    assert coerce_config("tgraph", {"hidden": "16", "directed": "true", "init_temperature": 2}) == {
        "hidden": 16, "directed": True, "init_temperature": 2.0}
    model = build_model("tgraph", "layout", hidden="8", opcode_dim=2, num_blocks=1)
    assert model.config.hidden == 8 and isinstance(model.config.hidden, int)
    for bad in ({"hidden": "abc"}, {"hidden": 1.5}, {"hidden": True}, {"directed": "maybe"}, {"aggr": 3}):
        key = next(iter(bad))
        with pytest.raises(ValueError, match=f"option {key}=.* must be of type"):
            build_model("tgraph", "layout", **bad)


def test_a_registered_model_is_found_built_and_rebuilt_from_its_spec(monkeypatch):
    """`registry.register`: a new model is known by name, built for its kinds, and rebuilt from its spec."""
    from graphcost.models import registry
    from graphcost.models.tpugraphs_baselines import BaselineConfig, TileMLP

    monkeypatch.setattr(registry, "_MODELS", dict(registry._MODELS))
    registry.register("my-mlp", BaselineConfig, ("tile",), lambda kind, config: TileMLP(kind, config))
    assert "my-mlp" in registry.model_names() and "my-mlp" not in MODEL_NAMES
    assert model_kinds("my-mlp") == ("tile",)
    model = build_model("my-mlp", "tile")
    assert model.name == "my-mlp" and type(model_from_spec(model_spec(model))) is TileMLP
    with pytest.raises(ValueError, match="does not support kind 'layout'"):
        build_model("my-mlp", "layout")
    with pytest.raises(ValueError, match="kinds must be"):
        registry.register("bad", BaselineConfig, ("graph",), lambda kind, config: None)
