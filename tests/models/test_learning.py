"""Every model learns: 40 Adam steps of the pairwise hinge loss (TGraph eq. 8) on a tiny
batch whose runtimes are a fixed function of the configuration features make the loss fall."""

from __future__ import annotations

import pytest
import torch

from graphcost.models.registry import build_model
from graphcost.models.losses import pairwise_hinge
from models_testutil import make_layout_batch, make_tile_batch
from test_forward import small

CASES = [("tgraph", "layout", {}), ("tgraph", "tile", {}), ("sage", "layout", {}), ("tile-mlp", "tile", {}),
         ("early-sage", "tile", {}), ("early-gcn", "tile", {}), ("late-sage", "tile", {}), ("late-gcn", "tile", {}),
         ("tgraph", "layout", {"cross_attention": False}), ("tgraph", "layout", {"channel_attention": False}),
         ("tgraph", "layout", {"use_edges": False}), ("tgraph", "layout", {"norm": "config"}),
         ("kaufman", "tile", {"encoder": "sage", "reduction": "column"}),
         ("kaufman", "layout", {"encoder": "gat", "reduction": "per_node", "directed": False}),
         ("kaufman", "tile", {"encoder": "none", "reduction": "lstm"}),
         ("kaufman", "layout", {"encoder": "sage", "reduction": "transformer"})]


@pytest.mark.parametrize("name,kind,extra", CASES, ids=lambda v: str(v).replace(" ", ""))
def test_hinge_loss_falls(name, kind, extra):
    torch.manual_seed(0)
    model = build_model(name, kind, **small(name, extra))
    batch = make_layout_batch(num_configs=8) if kind == "layout" else make_tile_batch(num_configs=8)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    losses = []
    for _ in range(40):
        loss = pairwise_hinge(model(batch), batch.runtime)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses)))
    start, end = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    assert end < 0.5 * start, f"{name}/{kind}/{extra}: hinge loss {start:.3f} -> {end:.3f}"
