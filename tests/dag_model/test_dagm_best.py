"""best.pt model selection: written when the validation loss improves, preferred by load_model,
exact under resume."""

import numpy as np
import torch
from dag_fixtures import random_dag

from graphcost.dag.train import BEST, CHECKPOINT, TrainConfig, load_checkpoint, load_model, train_layerdag

TINY = dict(dim=16, T_node=6, T_edge=4, heads=2)


def _data(n, seed):
    rng = np.random.default_rng(seed)
    return [random_dag(rng, int(rng.integers(3, 9)), p=0.35, num_categories=3) for _ in range(n)]


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_best_checkpoint_tracks_lowest_validation_loss_and_resumes_exactly(tmp_path):
    torch.set_num_threads(1)
    train, valid = _data(16, 0), _data(6, 1)
    # a high learning rate so the validation loss does not fall monotonically
    cfg = TrainConfig(epochs=6, batch_size=4, lr=3e-2)
    _, hist = train_layerdag(train, tmp_path / "full", cfg, valid_dags=valid, progress=False, **TINY)
    best = load_checkpoint(tmp_path / "full" / BEST)
    vl = [h["valid_loss"] for h in hist]
    assert best["epoch"] == int(np.argmin(vl)) + 1 and abs(best["valid_loss"] - min(vl)) < 1e-9
    last = load_checkpoint(tmp_path / "full")
    assert last["epoch"] == 6 and best["epoch"] < 6  # this seed/lr: the loss rises after its minimum
    # load_model prefers best.pt; last=True gives checkpoint.pt
    assert _same_weights(load_model(tmp_path / "full").state_dict(), best["model"])
    assert _same_weights(load_model(tmp_path / "full", last=True).state_dict(), last["model"])
    # interrupted after 3 epochs and resumed: same best.pt and same final checkpoint
    cfg3 = TrainConfig(epochs=3, batch_size=4, lr=3e-2)
    train_layerdag(train, tmp_path / "res", cfg3, valid_dags=valid, progress=False, **TINY)
    _, hist2 = train_layerdag(train, tmp_path / "res", cfg, valid_dags=valid, resume=True, progress=False, **TINY)
    assert [h["valid_loss"] for h in hist2] == vl
    best2 = load_checkpoint(tmp_path / "res" / BEST)
    assert best2["epoch"] == best["epoch"] and _same_weights(best2["model"], best["model"])
    assert _same_weights(load_checkpoint(tmp_path / "res")["model"], last["model"])


def test_no_valid_split_no_best_and_fresh_run_drops_stale_best(tmp_path):
    torch.set_num_threads(1)
    train, valid = _data(8, 0), _data(4, 1)
    run = tmp_path / "run"
    train_layerdag(train, run, TrainConfig(epochs=1, batch_size=4), valid_dags=valid, progress=False, **TINY)
    assert (run / BEST).is_file()
    # retrain from scratch without a validation split: the old best.pt must not shadow the new weights
    train_layerdag(train, run, TrainConfig(epochs=1, batch_size=4, seed=3), progress=False, **TINY)
    assert not (run / BEST).exists() and (run / CHECKPOINT).is_file()
    assert _same_weights(load_model(run).state_dict(), load_checkpoint(run)["model"])


def test_zero_epochs_or_batch_size_rejected(tmp_path):
    import pytest

    for cfg in (TrainConfig(epochs=0), TrainConfig(batch_size=0)):
        with pytest.raises(ValueError, match="must be >= 1"):
            train_layerdag(_data(4, 0), tmp_path, cfg, progress=False, **TINY)
