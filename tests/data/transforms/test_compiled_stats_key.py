"""graphcost's optional per-configuration key ``config_compiled_stats`` (what the compiler did to
each configuration): saved, validated, loaded, carried through preprocessing (de-duplication keeps
the kept configurations' rows) and the cache, and refused in one line when malformed."""

import dataclasses

import numpy as np
import pytest

from graphcost.data.graph import COMPILED_STATS_DIM
from graphcost.data.io.schema import SchemaError
from graphcost.data.io.tpugraphs_io import load_graph, save_graph
from graphcost.data.transforms.preprocess import prepare_graph
from graphcost.frontend.hlo.compiled_stats import COMPILED_STATS


def _stats(rng, k):
    return rng.integers(0, 1000, size=(k, COMPILED_STATS_DIM)).astype(np.float64)


def test_the_column_count_is_the_statistics():
    assert COMPILED_STATS_DIM == len(COMPILED_STATS)


@pytest.mark.parametrize("kind", ["layout", "tile"])
def test_round_trip_preprocessing_and_cache(kind, rng, layout_graph, tile_graph, tmp_path):
    graph = layout_graph if kind == "layout" else tile_graph
    k = len(graph.config_runtime)
    graph = dataclasses.replace(graph, config_compiled_stats=_stats(rng, k))
    path = save_graph(graph, tmp_path / f"{kind}.npz")
    loaded = load_graph(path)
    assert np.array_equal(loaded.config_compiled_stats, graph.config_compiled_stats)
    for cache in (None, tmp_path / "cache", tmp_path / "cache"):  # the second cached call reads the cache
        prepared = prepare_graph(path, cache_dir=cache)
        assert prepared.num_configs < k  # duplicates were dropped ...
        assert np.array_equal(prepared.compiled, graph.config_compiled_stats[prepared.config_source_index])  # ... rows follow
    plain = save_graph(dataclasses.replace(graph, config_compiled_stats=None), tmp_path / f"plain-{kind}.npz")
    assert load_graph(plain).config_compiled_stats is None and prepare_graph(plain).compiled is None


@pytest.mark.parametrize("bad, problem", [
    (lambda s: s[:-1], "rows but config_runtime has"),
    (lambda s: s[:, :-1], "columns"),
    (lambda s: -s - 1, "negative value"),
    (lambda s: np.where(s > 500, np.nan, s), "non-finite|not finite|NaN"),
])
def test_malformed_statistics_are_refused_in_one_line(bad, problem, rng, layout_graph, tmp_path):
    stats = bad(_stats(rng, len(layout_graph.config_runtime)))
    path = tmp_path / "bad.npz"
    save_graph(dataclasses.replace(layout_graph, config_compiled_stats=stats), path, validate=False)
    with pytest.raises(SchemaError, match=f"bad.npz: key 'config_compiled_stats': .*({problem})"):
        load_graph(path)
