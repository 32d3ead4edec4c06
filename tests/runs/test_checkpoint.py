"""Checkpoints: atomic writes, weights_only loading, RNG state round trip."""

import pickle
import random

import numpy as np
import pytest
import torch

from graphcost.runs import checkpoint as ckpt


def _state(value: float) -> dict:
    return {
        "model_spec": {"name": "x", "kind": "layout", "config": {"hidden": 4}},
        "model": {"w": torch.full((3,), value)},
        "scaler": {"mean": np.arange(4, dtype=np.float32)},
        "history": [{"epoch": 1, "tau": np.float64(0.5)}],
    }


def test_roundtrip_with_numpy_values(tmp_path):
    path = ckpt.save_checkpoint(tmp_path / "c.pt", _state(1.0))
    back = ckpt.load_checkpoint(path)
    assert torch.equal(back["model"]["w"], torch.ones(3))
    assert isinstance(back["scaler"]["mean"], np.ndarray) and back["scaler"]["mean"].dtype == np.float32
    assert back["history"][0]["tau"] == 0.5 and isinstance(back["history"][0]["tau"], float)


def test_failed_write_leaves_previous_checkpoint_intact(tmp_path, monkeypatch):
    path = ckpt.save_checkpoint(tmp_path / "c.pt", _state(1.0))
    real_save = torch.save

    def dying_save(obj, handle):
        real_save(obj, handle)
        handle.write(b"partial garbage")
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(torch, "save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        ckpt.save_checkpoint(path, _state(2.0))
    monkeypatch.setattr(torch, "save", real_save)
    assert torch.equal(ckpt.load_checkpoint(path)["model"]["w"], torch.ones(3))  # old content, readable
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.pt"]  # no temp file left behind


class Evil:
    def __reduce__(self):
        return (print, ("executed",))


def test_pickled_objects_are_refused(tmp_path):
    path = tmp_path / "evil.pt"
    with open(path, "wb") as handle:
        pickle.dump({"model": Evil(), "model_spec": {}}, handle)
    with pytest.raises(ckpt.CheckpointError, match="evil.pt"):
        ckpt.load_checkpoint(path)
    with pytest.raises(ckpt.CheckpointError, match="not found"):
        ckpt.load_checkpoint(tmp_path / "missing.pt")


def test_rng_states_roundtrip(tmp_path):
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    state = ckpt.capture_rng_state()
    ckpt.save_checkpoint(tmp_path / "r.pt", {"model": {}, "model_spec": {}, "rng": state})
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    ckpt.restore_rng_state(ckpt.load_checkpoint(tmp_path / "r.pt")["rng"])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected
