"""Every model (and each TGraph ablation, each Kaufman encoder x reduction x direction):
output shape (B,), finite scores, equivariance under reordering the configurations."""

from __future__ import annotations

import itertools

import pytest
import torch

from graphcost.models.kaufman import ENCODERS, REDUCTIONS
from graphcost.models.registry import MODEL_NAMES, build_model, model_kinds
from models_testutil import make_layout_batch, make_tile_batch, permute_configs

SMALL = {
    "tgraph": {"hidden": 16, "opcode_dim": 4, "layout_dim": 2},
    "kaufman": {"hidden": 16, "opcode_dim": 4, "num_layers": 2, "node_layers": 1, "dropout": 0.0},
}
BASELINE_SMALL = {"hidden": 16, "opcode_dim": 4, "num_layers": 2}

CASES = [(name, kind, {}) for name in MODEL_NAMES for kind in model_kinds(name)]
CASES += [("tgraph", "layout", {k: False}) for k in ("channel_attention", "cross_attention", "use_edges")]
CASES += [("tgraph", "layout", {"norm": n}) for n in ("config", "none")]
CASES += [("tgraph", "layout", {"aggr": "mean", "directed": True})]
CASES += [("kaufman", kind, {"encoder": e, "reduction": r, "directed": d})
          for (e, r), d, kind in zip(itertools.product(ENCODERS, REDUCTIONS), itertools.cycle([True, False]),
                                     itertools.cycle(["tile", "layout", "layout"]))]


def small(name: str, extra: dict) -> dict:
    return {**SMALL.get(name, BASELINE_SMALL), **extra}


def batch_for(kind: str, seed: int = 0):
    return make_layout_batch(seed=seed) if kind == "layout" else make_tile_batch(seed=seed)


@pytest.mark.parametrize("name,kind,extra", CASES, ids=lambda v: str(v).replace(" ", ""))
def test_shape_finite_and_config_permutation_equivariance(name, kind, extra):
    torch.manual_seed(0)
    model = build_model(name, kind, **small(name, extra)).eval()
    batch = batch_for(kind)
    with torch.no_grad():
        scores = model(batch)
        assert scores.shape == (batch.num_configs,)
        assert torch.isfinite(scores).all()
        perm = torch.randperm(batch.num_configs, generator=torch.Generator().manual_seed(1))
        permuted = model(permute_configs(batch, perm))
    torch.testing.assert_close(permuted, scores[perm], rtol=1e-4, atol=1e-5)
    # scores must actually depend on the configuration
    assert scores.std() > 0


def test_kaufman_all_combinations_covered():
    combos = {(c[2]["encoder"], c[2]["reduction"]) for c in CASES if c[0] == "kaufman" and c[2]}
    assert combos == set(itertools.product(ENCODERS, REDUCTIONS))
    assert {c[2]["directed"] for c in CASES if c[0] == "kaufman" and c[2]} == {True, False}


def test_kaufman_directed_differs_from_undirected():
    batch = make_tile_batch()
    torch.manual_seed(0)
    d = build_model("kaufman", "tile", **small("kaufman", {"directed": True}))
    with torch.no_grad():
        a = d(batch)
        # reversing every edge changes a directed model's prediction
        rev = make_tile_batch()
        rev.edge_index = rev.edge_index.flip(0)
        assert not torch.allclose(a, d(rev))


@pytest.mark.parametrize("name", ["tgraph", "sage", "kaufman"])
def test_layout_graph_without_configurable_nodes(name):
    """C = 0: every configuration is the same program; scores are finite and all equal."""
    torch.manual_seed(0)
    model = build_model(name, "layout", **small(name, {})).eval()
    batch = make_layout_batch(num_configurable=0)
    with torch.no_grad():
        scores = model(batch)
    assert scores.shape == (batch.num_configs,) and torch.isfinite(scores).all()
    torch.testing.assert_close(scores, scores[:1].expand_as(scores))
