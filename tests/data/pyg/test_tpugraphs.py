"""TpuGraphsDataset: PyG Data items equal to make_batch's, processed = the prepare_graph cache,
and usable from a torch DataLoader with worker processes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch_geometric.data import Data

from graphcost.data.pyg.tpugraphs import SampleKey, TpuGraphsDataset, batch_to_data, data_to_batch
from graphcost.data.synth.collection import write_synthetic_collection
from graphcost.data.transforms import preprocess
from graphcost.data.transforms.batching import make_batch, sample_config_indices
from graphcost.data.transforms.preprocess import prepare_graph
from graphcost.data.transforms.scaler import FeatureScaler
from graphcost.datasets import shipped_dataset_dir

SHIPPED = shipped_dataset_dir("cpu_layout")


@pytest.fixture(scope="module")
def synth_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    write_synthetic_collection(root, "layout:xla:random", num_graphs=4, seed=3, split_fractions=(1.0, 0.0, 0.0),
                               max_nodes=60, max_configs=30, progress=False)  # fmt: skip
    write_synthetic_collection(root, "tile:xla", num_graphs=3, seed=4, split_fractions=(1.0, 0.0, 0.0),
                               max_configs=20, progress=False)  # fmt: skip
    return root


def _split(root: Path, collection: str) -> Path:
    return root.joinpath("npz", *collection.split(":"), "train")


def assert_matches_make_batch(ds: TpuGraphsDataset, data: Data, index: int) -> None:
    """data == make_batch(prepared graph, data.config_index, ds.scaler), field by field."""
    prepared = ds.prepared(index)
    ref = make_batch(prepared, data.config_index.numpy(), ds.scaler)
    got = data_to_batch(data)
    assert got.graph_name == ref.graph_name == prepared.name and got.kind == ref.kind
    for name, value in ref.__dict__.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(getattr(got, name), value), name
            assert getattr(got, name).dtype == value.dtype, name
        elif value is None:
            assert getattr(got, name) is None, name
    assert data.y.dtype == torch.float64
    np.testing.assert_array_equal(data.y.numpy(), prepared.runtime[data.config_index.numpy()])
    assert data.edge_index.shape[0] == 2 and data.num_nodes == prepared.num_nodes


@pytest.mark.parametrize("collection", ["layout:xla:random", "tile:xla"])
def test_items_match_make_batch(synth_root, tmp_path, collection):
    ds = TpuGraphsDataset(_split(synth_root, collection), tmp_path / "cache", batch_configs=8, seed=5)
    assert len(ds) == len(ds.raw_paths) > 0
    assert all(Path(p).is_file() for p in ds.processed_paths)  # processed = the prepare_graph cache entries
    assert isinstance(ds.scaler, FeatureScaler) and ds.scaler.fitted
    for i in range(len(ds)):
        data = ds[i]
        assert isinstance(data, Data) and data.runtime.shape == (min(8, ds.prepared(i).num_configs),)
        assert_matches_make_batch(ds, data, i)
    # the scaler is fitted on the dataset's prepared graphs, as the trainer fits it on its training graphs
    ref = FeatureScaler().fit(prepare_graph(f) for f in ds.raw_paths)
    np.testing.assert_allclose(ds.scaler.mean_, ref.mean_)


def test_sampling_is_seeded_per_epoch_and_by_key(synth_root, tmp_path):
    ds = TpuGraphsDataset(_split(synth_root, "layout:xla:random"), tmp_path, batch_configs=4, seed=1)
    first = ds[0].config_index
    assert torch.equal(ds[0].config_index, first)  # repeatable
    ds.set_epoch(1)
    assert not torch.equal(ds[0].config_index, first)  # a new sample each epoch
    key = ds[SampleKey(1, 1234)]
    expected = sample_config_indices(ds.prepared(1), 4, np.random.default_rng(1234))
    np.testing.assert_array_equal(key.config_index.numpy(), expected)


def test_processed_entries_are_reused_without_reading_raw(synth_root, tmp_path, monkeypatch):
    split = _split(synth_root, "layout:xla:random")
    TpuGraphsDataset(split, tmp_path)

    def no_raw(*args, **kwargs):
        raise AssertionError("raw npz re-processed although the processed entries exist")

    monkeypatch.setattr(preprocess, "prepare_in_memory", no_raw)
    ds = TpuGraphsDataset(split, tmp_path)
    assert_matches_make_batch(ds, ds[1], 1)


def test_shipped_cpu_layout_with_two_loader_workers(tmp_path):
    train = TpuGraphsDataset(SHIPPED / "train", tmp_path, batch_configs=16, seed=0)
    valid = TpuGraphsDataset(SHIPPED / "valid", tmp_path, batch_configs=16, scaler=train.scaler, dedup=False)
    assert valid.scaler is train.scaler
    in_process = [valid[i] for i in range(len(valid))]
    loader = DataLoader(valid, batch_size=None, num_workers=2)
    items = list(loader)
    assert [d.graph_name for d in items] == [d.graph_name for d in in_process]
    for i, (got, ref) in enumerate(zip(items, in_process)):
        for name in ("x", "edge_index", "node_config_feat", "config_node_index", "config_index", "y"):
            assert torch.equal(got[name], ref[name]), name
        assert_matches_make_batch(valid, got, i)


def test_from_prepared_and_round_trip(synth_root):
    graphs = [prepare_graph(f) for f in sorted(_split(synth_root, "tile:xla").glob("*.npz"))]
    scaler = FeatureScaler().fit(graphs)
    ds = TpuGraphsDataset.from_prepared(graphs, scaler, batch_configs=5, seed=2)
    assert len(ds) == len(graphs) and ds.raw_paths == []
    data = ds[SampleKey(0, 9)]
    idx = sample_config_indices(graphs[0], 5, np.random.default_rng(9))
    ref = make_batch(graphs[0], idx, scaler)
    again = batch_to_data(data_to_batch(data), data.y)
    for name in ("x", "edge_index", "config_feat", "runtime", "y"):
        assert torch.equal(again[name], data[name])
    assert torch.equal(data.config_feat, ref.config_feat)


def test_bad_inputs_name_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such directory"):
        TpuGraphsDataset(tmp_path / "missing", tmp_path / "cache")
    with pytest.raises(FileNotFoundError, match=r"no \*\.npz graphs"):
        TpuGraphsDataset(tmp_path, tmp_path / "cache")
    with pytest.raises(FileNotFoundError, match="gone.npz: no such graph file"):
        TpuGraphsDataset([tmp_path / "gone.npz"], tmp_path / "cache")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.npz").write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="broken.npz"):  # SchemaError (a ValueError) naming the file
        TpuGraphsDataset(bad, tmp_path / "cache")


@pytest.mark.parametrize("collection", ["layout:xla:random", "tile:xla"])
def test_standard_pyg_loader_batches_several_graphs(synth_root, tmp_path, collection):
    """torch_geometric.loader.DataLoader(ds, batch_size=G) batches graphs: node indices offset, configs stacked."""
    from torch_geometric.loader import DataLoader as PyGLoader

    ds = TpuGraphsDataset(_split(synth_root, collection), tmp_path, batch_configs=3, seed=2)
    assert all(ds.prepared(i).num_configs >= 3 for i in range(len(ds)))
    items = [ds[i] for i in range(len(ds))]
    batch = next(iter(PyGLoader(ds, batch_size=len(ds))))
    assert batch.num_graphs == len(ds) and batch.graph_name == [d.graph_name for d in items]
    assert batch.x.shape == (sum(d.num_nodes for d in items), 140)
    for name in ("runtime", "y", "config_index"):
        assert torch.equal(batch[name], torch.stack([d[name] for d in items])), name  # (G, B)
    if collection.startswith("layout"):
        assert torch.equal(batch.node_config_feat, torch.cat([d.node_config_feat for d in items], dim=1))  # (B, ΣC, 18)
        offsets = batch.ptr[:-1].repeat_interleave(torch.tensor([d.config_node_index.numel() for d in items]))
        assert torch.equal(batch.config_node_index, torch.cat([d.config_node_index for d in items]) + offsets)
        # the batched indices pick the same node features as each graph's own
        assert torch.equal(batch.x[batch.config_node_index], torch.cat([d.x[d.config_node_index] for d in items]))
    else:
        assert torch.equal(batch.config_feat, torch.stack([d.config_feat for d in items]))  # (G, B, 24)
    for i, got in enumerate(batch.to_data_list()):  # and back, graph by graph
        assert_matches_make_batch(ds, got, i)


def test_standard_pyg_loader_refuses_graphs_with_different_sample_sizes(synth_root, tmp_path):
    from torch_geometric.loader import DataLoader as PyGLoader

    small = tmp_path / "small"
    write_synthetic_collection(small, "layout:xla:random", num_graphs=1, seed=8, split_fractions=(1.0, 0.0, 0.0),
                               max_nodes=40, max_configs=12, progress=False)  # fmt: skip
    files = sorted(_split(synth_root, "layout:xla:random").glob("*.npz"))[:1] + sorted(_split(small, "layout:xla:random").glob("*.npz"))
    ds = TpuGraphsDataset(files, tmp_path / "cache", batch_configs=10_000)
    assert len({ds.prepared(i).num_configs for i in range(len(ds))}) > 1  # B = K differs between graphs
    with pytest.raises(RuntimeError, match="Sizes of tensors must match|stack expects each tensor to be equal size"):
        next(iter(PyGLoader(ds, batch_size=len(ds))))
    assert next(iter(PyGLoader(ds, batch_size=1))).runtime.shape == (1, ds.prepared(0).num_configs)


def test_a_cache_inside_its_own_input_is_refused(synth_root):
    """TpuGraphsDataset(DATA/train, cache_dir=DATA/train/pc) wrote its cache into its input (issue 81)."""
    from graphcost.guards.outputs import OutputPathError

    split = _split(synth_root, "layout:xla:random")
    with pytest.raises(OutputPathError, match="cache_dir .*lies inside the input raw"):
        TpuGraphsDataset(split, Path(split) / "pc")
    assert not (Path(split) / "pc").exists()
