"""K-fold split by graph, test-time augmentation order restoration, fold ensembles."""

import numpy as np
import pytest
import torch
from train_stubs import TinyConfig, TinyModel

from graphcost.data.splits import kfold_indices
from graphcost.data.transforms.batching import make_batch
from graphcost.models.trees import standardise
from graphcost.inference.ensemble import EnsemblePredictor
from graphcost.inference.ranking import chunk_indices, score_configs, tta_orders


def test_kfold_never_splits_a_graph():
    names = [f"g{i % 7}" for i in range(30)]  # several items (e.g. collections) per graph name
    splits = kfold_indices(names, folds=5, seed=1)
    valid_seen = []
    for train, valid in splits:
        assert not {names[i] for i in train} & {names[i] for i in valid}  # no graph on both sides
        assert sorted(np.concatenate([train, valid])) == list(range(30))
        valid_seen += list(valid)
    assert sorted(valid_seen) == list(range(30))  # every item validated exactly once
    assert kfold_indices(names, 5, seed=1)[2][1].tolist() == splits[2][1].tolist()  # deterministic
    with pytest.raises(ValueError, match="exceeds the number of distinct graphs"):
        kfold_indices(names, folds=8)


def test_chunks_are_balanced():
    sizes = [len(c) for c in chunk_indices(np.arange(300), 128)]
    assert sizes == [100, 100, 100]


def test_tta_restores_original_order(layout_graphs):
    graph = layout_graphs[0]  # 40 configurations
    torch.manual_seed(0)
    plain = TinyModel(TinyConfig()).eval()  # score depends only on the configuration itself
    expected = score_configs(plain, graph, None, batch_size=16)
    augmented = score_configs(plain, graph, None, batch_size=16, tta=5, seed=3)
    np.testing.assert_allclose(augmented, expected, rtol=1e-5, atol=1e-6)

    torch.manual_seed(0)
    ordered = TinyModel(TinyConfig(order_dependent=True)).eval()  # score depends on batch position
    orders = tta_orders(graph.num_configs, 5, seed=3)
    assert len({tuple(o) for o in orders}) == 5
    manual = np.zeros(graph.num_configs)
    with torch.no_grad():
        for order in orders:
            for idx in chunk_indices(order, 16):
                manual[idx] += ordered(make_batch(graph, idx, None)).double().numpy()
    got = score_configs(ordered, graph, None, batch_size=16, tta=5, seed=3)
    np.testing.assert_allclose(got, manual / 5, rtol=1e-5, atol=1e-6)
    assert not np.allclose(got, score_configs(ordered, graph, None, batch_size=16))  # TTA changed something


def test_ensemble_averages_standardised_member_scores(layout_graphs):
    graph = layout_graphs[1]
    torch.manual_seed(1)
    a, b = TinyModel(TinyConfig()).eval(), TinyModel(TinyConfig()).eval()
    ens = EnsemblePredictor([(a, None), (b, None)], "layout", batch_size=16, tta=2, seed=0)
    sa = score_configs(a, graph, None, batch_size=16, tta=2, seed=0)
    sb = score_configs(b, graph, None, batch_size=16, tta=2, seed=0)
    np.testing.assert_allclose(ens.score(graph), (standardise(sa) + standardise(sb)) / 2, atol=1e-9)
    ranking = np.argsort(ens.score(graph), kind="stable")
    assert sorted(ranking.tolist()) == list(range(graph.num_configs))
    assert np.all(np.diff(ens.score(graph)[ranking]) >= 0)  # fastest (lowest score) first


def test_score_configs_groups_chunks_for_tgraph_and_checks_precision(layout_graphs):
    """TGraph gets several chunks per call (shared reference pass): same scores as one call per
    chunk; bf16 is TGraph-only."""
    from graphcost.data.transforms.scaler import FeatureScaler
    from graphcost.models.tgraph import TGraph, TGraphConfig

    graph = layout_graphs[0]
    scaler = FeatureScaler().fit([graph])
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small()).eval()
    manual = np.zeros(graph.num_configs)
    with torch.no_grad():
        for idx in chunk_indices(np.arange(graph.num_configs), 16):
            manual[idx] = model(make_batch(graph, idx, scaler)).double().numpy()
    np.testing.assert_allclose(score_configs(model, graph, scaler, batch_size=16), manual, rtol=1e-5, atol=1e-7)
    bf16 = score_configs(model, graph, scaler, batch_size=16, precision="bf16")
    assert np.corrcoef(bf16, manual)[0, 1] > 0.99
    with pytest.raises(ValueError, match="TGraph only"):
        score_configs(TinyModel(TinyConfig()).eval(), graph, None, batch_size=16, precision="bf16")


def test_ensemble_refuses_bf16_for_models_without_chunked_scoring():
    with pytest.raises(ValueError, match="TGraph only"):
        EnsemblePredictor([(TinyModel(TinyConfig()), None)], "layout", precision="bf16")
