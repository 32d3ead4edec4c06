import numpy as np

from graphcost.data.transforms.padding import pad_minor_to_major, tensor_rank


def _row(dims, m2m):
    r = np.zeros(140, np.float32)
    r[21 : 21 + len(dims)] = dims
    r[134 : 134 + len(m2m)] = m2m
    r[:21] = 7.0  # unrelated columns must not change
    return r


def test_padding_beyond_rank():
    feat = np.stack([
        _row([4, 8, 16], [1, 0, 2]),  # rank 3
        _row([32], [0]),  # rank 1: minor_to_major {0}
        _row([], []),  # scalar / tuple: rank 0
        _row([5, 0], [1, 0]),  # zero-size last dim: rank 2 from the layout
        _row([0, 0, 0], [0, 2, 1]),  # dims unknown, permutation implies rank 3
    ])
    assert tensor_rank(feat).tolist() == [3, 1, 0, 2, 3]
    out = pad_minor_to_major(feat)
    assert out[:, 134:].tolist() == [
        [1, 0, 2, -1, -1, -1],
        [0, -1, -1, -1, -1, -1],
        [-1] * 6,
        [1, 0, -1, -1, -1, -1],
        [0, 2, 1, -1, -1, -1],
    ]
    assert np.array_equal(out[:, :134], feat[:, :134])
    assert np.array_equal(pad_minor_to_major(out), out)  # idempotent
    assert feat[2, 134] == 0  # input untouched
