import numpy as np

from graphcost.data.transforms import dedup as dd
from graphcost.data.transforms.compress import compress_layout_config


def test_keeps_min_runtime_per_distinct_config():
    codes = np.array([[[1, 2, 3]], [[4, 5, 6]], [[1, 2, 3]], [[1, 2, 3]], [[4, 5, 6]], [[7, 7, 7]]], np.int32)
    runtime = np.array([5.0, 3.0, 2.0, 9.0, 1.0, 4.0])
    keep = dd.dedup_rows(codes, runtime)
    assert keep.tolist() == [2, 4, 5]


def test_ties_keep_smallest_index_and_chunked_hashes_match(rng):
    feat = rng.integers(-1, 6, size=(8, 4, 18)).astype(np.float32)[rng.integers(0, 8, size=200)]
    codes = compress_layout_config(feat)
    runtime = rng.integers(0, 3, size=200).astype(np.float64)  # many ties
    chunked = np.concatenate([dd.row_hashes(codes[s : s + 7]) for s in range(0, 200, 7)])
    assert np.array_equal(chunked, dd.row_hashes(codes))
    keep = dd.dedup_min_runtime(chunked, runtime, codes)
    # brute force reference
    ref = {}
    for i, row in enumerate(codes.reshape(200, -1)):
        key = row.tobytes()
        if key not in ref or runtime[i] < runtime[ref[key]]:
            ref[key] = i
    assert keep.tolist() == sorted(ref.values())


def test_hash_collision_falls_back_to_exact():
    rows = np.array([[1, 2], [3, 4], [1, 2]], np.int32)
    fake = np.zeros(3, np.uint64)  # every row "collides"
    keep = dd.dedup_min_runtime(fake, np.array([3.0, 1.0, 2.0]), rows)
    assert keep.tolist() == [1, 2]


def test_tile_float_rows_and_signed_zero():
    rows = np.array([[0.0, 1.5], [-0.0, 1.5], [2.0, 1.5]], np.float32)
    assert dd.dedup_rows(rows, np.array([2.0, 1.0, 3.0])).tolist() == [1, 2]
