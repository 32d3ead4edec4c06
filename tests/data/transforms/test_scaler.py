import json

import numpy as np
import pytest
import torch

from graphcost.data.transforms.scaler import FeatureScaler


def _graphs(rng, sizes, shift=0.0):
    out = []
    for n in sizes:
        f = (rng.normal(size=(n, 140)) * rng.uniform(0.1, 1e4, size=140) + 1e3 + shift).astype(np.float32)
        f[:, 5] = 3.0  # constant column
        out.append(f)
    return out


def test_streaming_fit_equals_numpy_on_train_only(rng):
    train = _graphs(rng, [7, 50, 1, 300])
    test = _graphs(rng, [40], shift=1e6)
    scaler = FeatureScaler().fit(train)
    stacked = np.concatenate(train).astype(np.float64)[:, :134]
    np.testing.assert_allclose(scaler.mean_, stacked.mean(0), rtol=1e-10)
    np.testing.assert_allclose(scaler.var_, stacked.var(0), rtol=1e-8)
    std = stacked.std(0)
    std[std == 0] = 1.0
    out = scaler.transform(test[0])
    want = (test[0][:, :134].astype(np.float64) - stacked.mean(0)) / std  # train statistics
    np.testing.assert_allclose(out[:, :134], want, rtol=1e-5, atol=1e-5)
    assert np.array_equal(out[:, 134:], test[0][:, 134:])  # layout columns untouched
    assert (out[:, 5] == 0).all() and np.isfinite(out).all()  # zero-variance column safe
    assert out.dtype == np.float32


def test_state_dict_round_trip_and_torch(rng):
    train = _graphs(rng, [20, 30])
    scaler = FeatureScaler().fit(train)
    state = json.loads(json.dumps(scaler.state_dict()))  # plain lists only
    again = FeatureScaler.from_state_dict(state)
    x = train[0]
    assert np.array_equal(again.transform(x), scaler.transform(x))
    t = again.transform(torch.from_numpy(x))
    np.testing.assert_allclose(t.numpy(), scaler.transform(x), rtol=1e-5, atol=1e-5)


def test_errors():
    with pytest.raises(RuntimeError, match="before fit"):
        FeatureScaler().transform(np.zeros((2, 140)))
    with pytest.raises(ValueError, match="expected shape"):
        FeatureScaler().partial_fit(np.zeros((2, 10)))
    with pytest.raises(ValueError, match="length 134"):
        FeatureScaler.from_state_dict({"version": 1, "num_features": 134, "n_samples": 1, "mean": [0.0], "m2": [0.0]})
    with pytest.raises(ValueError, match="missing"):
        FeatureScaler.from_state_dict({"mean": []})
