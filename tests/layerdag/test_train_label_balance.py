"""Label-balanced drawing of training graphs (`LayerDAGTrainConfig.label_balance`): p_i ∝ KDE density^-α of
the normalised labels; α = 0 is uniform, rare labels get more mass, resume stays exact."""

import numpy as np
import pytest
import torch
from dag_fixtures import TINY, random_dag

from graphcost.layerdag.train import LayerDAGTrainConfig, build_model, label_balance_weights, train_layerdag

STEADY = "none"  # resume tests extend --epochs, which a cosine schedule (the recipe's default) depends on


def _labelled(labels, seed=0):
    rng = np.random.default_rng(seed)
    dags = [random_dag(rng, int(rng.integers(3, 8)), p=0.35, num_categories=3) for _ in labels]
    for d, y in zip(dags, labels):
        d.label = float(y)
    return dags


def test_weights_favour_rare_labels_and_alpha_zero_is_uniform():
    labels = [1.0] * 20 + [1.1] * 20 + [30.0]  # one graph far in the tail
    model, _ = build_model(_labelled(labels), **TINY)
    p0 = label_balance_weights(labels, model, 0.0)
    np.testing.assert_allclose(p0, np.full(len(labels), 1 / len(labels)))
    p = label_balance_weights(labels, model, 1.0)
    assert p.shape == (41,) and abs(p.sum() - 1) < 1e-12 and (p > 0).all()
    assert p[-1] > 10 * p[0]  # the lone tail graph is drawn far more often than one of the 40 common ones
    # α = 1: about uniform over the label range, so the lone tail graph weighs about as much as the
    # 40 graphs around labels 1.0-1.1 together (they lie within one kernel bandwidth)
    assert 0.4 < p[-1] < 0.6


def test_label_balance_trains_resumes_exactly_and_is_checked(tmp_path):
    torch.set_num_threads(1)
    data = _labelled(list(np.exp(np.random.default_rng(1).normal(size=12))), seed=2)
    cfg = LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=3, batch_size=4, label_balance=0.5)
    full, hist = train_layerdag(data, tmp_path / "a", cfg, progress=False, **TINY)
    train_layerdag(data, tmp_path / "b", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, batch_size=4, label_balance=0.5),
                   progress=False, **TINY)  # fmt: skip
    resumed, hist2 = train_layerdag(data, tmp_path / "b", cfg, resume=True, progress=False, **TINY)
    assert [h["train_loss"] for h in hist2] == [h["train_loss"] for h in hist]
    for k, v in full.state_dict().items():
        assert torch.equal(resumed.state_dict()[k], v), k
    plain, _ = train_layerdag(data, tmp_path / "c", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=3, batch_size=4), progress=False, **TINY)
    assert any(not torch.equal(plain.state_dict()[k], v) for k, v in full.state_dict().items())
    with pytest.raises(ValueError, match="label_balance must be >= 0"):
        train_layerdag(data, tmp_path / "d", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, label_balance=-1), progress=False, **TINY)
    unlabelled = _labelled([1.0] * 4)
    for d in unlabelled:
        d.label = None
    with pytest.raises(ValueError, match="label_balance needs labelled"):
        train_layerdag(unlabelled, tmp_path / "e", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, label_balance=0.5), progress=False, **TINY)
