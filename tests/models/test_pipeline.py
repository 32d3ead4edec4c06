"""Models on batches built by the data pipeline (synthetic graphs -> prepare_graph -> make_batch)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphcost.data.transforms.batching import make_batch
from graphcost.data.transforms.preprocess import prepare_graph
from graphcost.data.transforms.scaler import FeatureScaler
from graphcost.data.synth.collection import synth_layout_graph, synth_tile_graph
from graphcost.models.registry import MODEL_NAMES, build_model, model_kinds
from test_forward import small


@pytest.fixture(scope="module")
def pipeline_batches():
    layout = prepare_graph(synth_layout_graph(num_nodes=120, num_configs=40, seed=1))
    tile = prepare_graph(synth_tile_graph(num_nodes=12, num_configs=40, seed=1))
    out = {}
    for kind, prep in (("layout", layout), ("tile", tile)):
        scaler = FeatureScaler().fit([prep])
        idx = np.arange(min(8, prep.num_configs))
        out[kind] = make_batch(prep, idx, scaler)
    return out


@pytest.mark.parametrize("name,kind", [(n, k) for n in MODEL_NAMES for k in model_kinds(n)])
def test_models_score_pipeline_batches(pipeline_batches, name, kind):
    torch.manual_seed(0)
    batch = pipeline_batches[kind]
    model = build_model(name, kind, **small(name, {})).eval()
    with torch.no_grad():
        scores = model(batch)
    assert scores.shape == (batch.num_configs,) and torch.isfinite(scores).all()
