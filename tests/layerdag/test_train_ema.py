"""EMA of the weights (`LayerDAGTrainConfig.ema_decay`): the sampled/validated weights are the average, the
average follows θ̄ ← β θ̄ + (1 − β) θ, and resuming an interrupted run is exact."""

import pytest
import torch
from dag_fixtures import TINY, tiny_dags

from graphcost.layerdag.train import BEST, LayerDAGTrainConfig, load_checkpoint, load_model, train_layerdag

STEADY = "none"  # resume tests extend --epochs, which a cosine schedule (the recipe's default) depends on


def test_ema_is_the_running_average_of_the_trained_weights(tmp_path):
    torch.set_num_threads(1)
    data = tiny_dags(8, 0)
    beta = 0.9
    raw0, _ = train_layerdag(data, tmp_path / "one", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, batch_size=8), progress=False, **TINY)
    ema1, _ = train_layerdag(data, tmp_path / "a", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, batch_size=8, ema_decay=beta),
                             progress=False, **TINY)  # fmt: skip
    # one step: the average is initialised to the weights after the first update, so it equals them
    for k, v in raw0.state_dict().items():
        assert torch.equal(ema1.state_dict()[k], v), k
    cfg2 = LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=2, batch_size=8, ema_decay=beta)
    ema2, _ = train_layerdag(data, tmp_path / "a", cfg2, resume=True, progress=False, **TINY)
    ckpt = load_checkpoint(tmp_path / "a")
    raw2 = ckpt["train_model"]
    for k, v in ema2.state_dict().items():
        if v.is_floating_point():
            torch.testing.assert_close(v, beta * ema1.state_dict()[k] + (1 - beta) * raw2[k])
    assert any(not torch.equal(ckpt["model"][k], raw2[k]) for k in raw2)  # the average is not the raw weights
    assert all(torch.equal(load_model(tmp_path / "a", last=True).state_dict()[k], v) for k, v in ema2.state_dict().items())


def test_ema_resume_is_exact_and_best_holds_averaged_weights(tmp_path):
    torch.set_num_threads(1)
    train, valid = tiny_dags(12, 1), tiny_dags(4, 2)
    cfg = LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=4, batch_size=4, lr=1e-2, ema_decay=0.8)
    full, hist = train_layerdag(train, tmp_path / "full", cfg, valid_dags=valid, progress=False, **TINY)
    cfg2 = LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=2, batch_size=4, lr=1e-2, ema_decay=0.8)
    train_layerdag(train, tmp_path / "res", cfg2, valid_dags=valid, progress=False, **TINY)
    resumed, hist2 = train_layerdag(train, tmp_path / "res", cfg, valid_dags=valid, resume=True, progress=False, **TINY)
    assert [h["valid_loss"] for h in hist2] == [h["valid_loss"] for h in hist]
    for k, v in full.state_dict().items():
        assert torch.equal(resumed.state_dict()[k], v), k
    best = load_checkpoint(tmp_path / "full" / BEST)
    assert set(best["model"]) == set(full.state_dict())


def test_ema_setting_must_match_on_resume_and_be_in_range(tmp_path):
    data = tiny_dags(6, 3)
    train_layerdag(data, tmp_path / "r", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, batch_size=6), progress=False, **TINY)
    with pytest.raises(ValueError, match="ema_decay"):
        train_layerdag(data, tmp_path / "r", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=2, batch_size=6, ema_decay=0.9), resume=True,
                       progress=False, **TINY)  # fmt: skip
    with pytest.raises(ValueError, match=r"ema_decay must be in \[0, 1\)"):
        train_layerdag(data, tmp_path / "x", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, ema_decay=1.0), progress=False, **TINY)
