"""Every scorer of graphcost.inference keeps the CostModel contract: kind, trained_on, score(prepared)."""

import numpy as np

import graphcost.pretrained as pretrained
from graphcost.data.transforms.preprocess import prepare_graph
from graphcost.datasets import shipped_dataset_dir
from graphcost.inference.cost_model import CostModel
from graphcost.inference.ensemble import EnsemblePredictor
from graphcost.inference.ranking import ModelScorer, evaluate_graphs


def test_a_loaded_run_and_a_single_model_are_cost_models():
    run = pretrained.shipped_model_dir("layout")
    predictor = EnsemblePredictor.load([run], tta=0)
    assert isinstance(predictor, CostModel)
    assert predictor.kind == "layout" and predictor.trained_on == str(run)
    model, scaler = predictor.members[0]
    single = ModelScorer(model, scaler, kind="layout")
    assert isinstance(single, CostModel) and single.trained_on == "in memory"
    assert not isinstance(object(), CostModel)

    graph = sorted((shipped_dataset_dir("cpu_layout") / "test").glob("*.npz"))[0]
    prepared = prepare_graph(graph, prune=True, dedup=False)
    scores = predictor.score(prepared)
    assert scores.shape == (prepared.num_configs,) and scores.dtype == np.float64 and np.isfinite(scores).all()
    report = evaluate_graphs(single, [prepared], "layout")  # what the trainer validates with
    assert report.rows[0]["graph"] == prepared.name and -1 <= report.score <= 1
