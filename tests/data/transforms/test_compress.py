import numpy as np
import pytest
import torch

from graphcost.data.transforms.compress import (
    MAX_CODE,
    CompressionError,
    compress_layout_config,
    decompress_layout_config,
)


def test_round_trip_random_including_edges(rng):
    feat = rng.integers(-1, 6, size=(50, 7, 18)).astype(np.float32)
    feat[0] = -1.0
    feat[1] = 5.0
    codes = compress_layout_config(feat)
    assert codes.shape == (50, 7, 3) and codes.dtype == np.int32
    assert (codes[0] == 0).all() and (codes[1] == MAX_CODE).all()
    back = decompress_layout_config(codes)
    assert back.dtype == np.float32 and np.array_equal(back, feat)
    back_t = decompress_layout_config(torch.from_numpy(codes))
    assert back_t.dtype == torch.float32 and torch.equal(back_t, torch.from_numpy(feat))


def test_code_formula_matches_paper():
    feat = np.full(18, -1, dtype=np.float32)
    feat[:3] = [1, 0, 2]  # output layout {1, 0, 2, -1, -1, -1}
    feat[6:8] = [0, 1]
    codes = compress_layout_config(feat)
    assert codes.tolist() == [2 * 1 + 1 * 7 + 3 * 49, 1 + 2 * 7, 0]


def test_integer_input_and_all_codes_bijective():
    codes = np.arange(MAX_CODE + 1, dtype=np.int32).reshape(-1, 1).repeat(3, axis=1)  # (7**6, 3)
    feat = decompress_layout_config(codes)
    assert np.array_equal(compress_layout_config(feat.astype(np.int64)), codes)


@pytest.mark.parametrize("bad", [6.0, -2.0, 0.5, np.nan, np.inf, 1e10])
def test_bad_values_raise_clear_error(bad):
    feat = np.zeros((4, 2, 18), dtype=np.float32)
    feat[3, 1, 7] = bad
    with pytest.raises(CompressionError, match=r"g\.npz: key 'node_config_feat': value .* at index \(13, 1, 7\)"):
        compress_layout_config(feat, source="g.npz", offset=10)


def test_error_is_a_schema_error():
    from graphcost.data.io.schema import SchemaError

    with pytest.raises(SchemaError) as info:
        compress_layout_config(np.full((1, 18), 7.0), source="x.npz")
    assert info.value.key == "node_config_feat" and info.value.path == "x.npz"


def test_bad_shape_and_codes():
    with pytest.raises(CompressionError, match="last axis of size 18"):
        compress_layout_config(np.zeros((2, 17)))
    with pytest.raises(CompressionError, match="codes must lie"):
        decompress_layout_config(np.array([[MAX_CODE + 1, 0, 0]]))
    with pytest.raises(CompressionError, match="integers"):
        decompress_layout_config(np.zeros((1, 3), dtype=np.float32))
