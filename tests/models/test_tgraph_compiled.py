"""TGraph's ``compiled_stats`` term: score += g(what the compiler did), for batches that carry it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from graphcost.data.transforms.batching import make_batch
from graphcost.data.transforms.preprocess import prepare_graph
from graphcost.datasets import default_dataset_dir
from graphcost.models.tgraph import TGraph, TGraphConfig
from models_testutil import make_layout_batch, make_tile_batch


def _with_stats(batch, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    return replace(batch, config_compiled=torch.rand(batch.num_configs, 7, generator=gen))


@pytest.mark.parametrize("kind", ["layout", "tile"])
def test_the_term_is_added_where_a_batch_carries_statistics_and_paths_agree(kind):
    torch.manual_seed(0)
    model = TGraph(kind, TGraphConfig.small(compiled_stats=True)).eval()
    bare = make_layout_batch(num_configs=6) if kind == "layout" else make_tile_batch(num_configs=6)
    full = _with_stats(bare)
    with torch.no_grad():
        plain, scored = model(bare), model(full)
        x = torch.log1p(10.0 * full.config_compiled)
        torch.testing.assert_close(scored, plain + model.compiled_head(x).squeeze(-1))
        torch.testing.assert_close(model.forward_dense(full), scored, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(model.score_chunked(full, chunk_size=4), model.score_chunked(bare, chunk_size=4)
                                   + model.compiled_head(x).squeeze(-1))
    off = TGraph(kind, TGraphConfig.small()).eval()  # the default reads no statistics
    with torch.no_grad():
        torch.testing.assert_close(off(full), off(bare))


def test_training_drops_the_statistics_for_a_share_of_whole_batches():
    torch.manual_seed(0)
    model = TGraph("layout", TGraphConfig.small(compiled_stats=True, compiled_dropout=0.5)).train()
    batch = _with_stats(make_layout_batch(num_configs=5))
    with torch.no_grad():
        plain = model(replace(batch, config_compiled=None))
        dropped = [torch.allclose(model(batch), plain) for _ in range(40)]
    assert 5 < sum(dropped) < 35  # about half, each batch whole
    with pytest.raises(ValueError, match="compiled_dropout"):
        TGraph("layout", TGraphConfig.small(compiled_stats=True, compiled_dropout=1.0))


def test_batches_of_a_graph_with_statistics_carry_its_compiled_columns():
    from graphcost.data.transforms.compiled import compiled_columns

    path = sorted((default_dataset_dir() / "valid").glob("*.npz"))[0]
    g = prepare_graph(path, dedup=False)
    assert g.compiled is not None
    idx = np.array([4, 1, 2])
    batch = make_batch(g, idx, None)
    np.testing.assert_array_equal(batch.config_compiled.numpy(), compiled_columns(g.compiled[idx], g.node_feat, 3))
    assert make_batch(replace(g, compiled=None), idx, None).config_compiled is None


def test_compiled_columns_survive_the_pyg_dataset_round_trip():
    """Training with loader workers builds batches through PyG `Data` (`TpuGraphsDataset`)."""
    from graphcost.data.pyg.tpugraphs import batch_to_data, data_to_batch

    path = sorted((default_dataset_dir() / "valid").glob("*.npz"))[0]
    batch = make_batch(prepare_graph(path, dedup=False), np.array([0, 3]), None)
    again = data_to_batch(batch_to_data(batch))
    assert torch.equal(again.config_compiled, batch.config_compiled)
