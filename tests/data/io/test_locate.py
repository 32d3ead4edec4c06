"""Where training data comes from (`graphcost.data.io.locate`): official trees, split dirs, flat dirs, the
shipped dataset; and the prepared-graph pool (`graphcost.data.transforms.pool`), eager or lazy."""

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.synth.collection import write_synthetic_collection
from graphcost.data.io import locate
from graphcost.data.transforms import pool


@pytest.fixture(scope="module")
def official(tmp_path_factory):
    root = tmp_path_factory.mktemp("official")
    write_synthetic_collection(root, "tile:xla", num_graphs=6, seed=2, max_configs=12, progress=False)
    return root


def test_official_tree_and_collection_choice(official):
    splits = locate.resolve_splits(official)  # only one collection present: chosen automatically
    assert splits.collection == "tile:xla" and splits.how == "official layout"
    assert all(splits.files[s] for s in ("train", "valid", "test"))
    with pytest.raises(locate.DatasetError, match="layout:xla:default not found"):
        locate.resolve_splits(official, "layout:xla:default")


def test_split_subdirs_and_flat_directory(official, tmp_path):
    base = official / "npz" / "tile" / "xla"
    split_dir = tmp_path / "splits"
    shutil.copytree(base, split_dir)
    splits = locate.resolve_splits(split_dir)
    assert splits.how.startswith("train/valid/test") and len(splits.files["train"]) == len(list((base / "train").glob("*.npz")))
    flat = tmp_path / "flat"
    flat.mkdir()
    for f in base.rglob("*.npz"):
        shutil.copy(f, flat / f.name)
    splits = locate.resolve_splits(flat, seed=3)
    train, valid = splits.files["train"], splits.files["valid"]
    assert len(train) + len(valid) == 6 and len(valid) == 1
    assert not {f.name for f in train} & {f.name for f in valid}  # split by graph (file)
    assert locate.resolve_splits(flat, seed=3).files == splits.files  # deterministic
    assert len(locate.resolve_splits(flat, max_graphs=2).files["train"]) == 2


def test_no_data_argument_uses_the_shipped_dataset(official, monkeypatch):
    monkeypatch.setattr(locate, "shipped_for_collection", lambda collection=None: None)
    result = CliRunner().invoke(app, ["train"])
    assert result.exit_code == 1 and "--data-dir" in result.output and "shipped" in result.output
    monkeypatch.setattr(locate, "shipped_for_collection", lambda collection=None: official)
    splits = locate.resolve_splits(None)
    assert splits.root == official and splits.collection == "tile:xla"


def test_lazy_graphs_train_exactly_like_in_memory_ones(official, tmp_path):
    from graphcost.train.trainer import TrainConfig, Trainer

    files = locate.resolve_splits(official).files
    eager = pool.load_prepared(files["train"], progress=False)
    lazy = pool.load_prepared(files["train"], tmp_path / "cache", progress=False, max_memory_gb=1e-9)
    assert isinstance(lazy, pool.LazyPrepared) and len(lazy) == len(eager)
    assert pool.graph_names(lazy) == [g.name for g in eager]
    assert lazy.subset([1]).names == [eager[1].name] and lazy.subset([1])[0].name == eager[1].name
    valid = pool.load_prepared(files["valid"], progress=False, dedup=False)
    config = TrainConfig(model="tile-mlp", model_config={"hidden": 8, "opcode_dim": 2, "num_layers": 1}, epochs=2,
                         batch_configs=8, device="cpu", progress=False, plots=False)
    a = Trainer(config, eager, valid, tmp_path / "a").fit().history
    b = Trainer(config, lazy, valid, tmp_path / "b").fit().history
    drop = ("train_seconds", "configs_per_s")
    assert [{k: v for k, v in r.items() if k not in drop} for r in a] == [
        {k: v for k, v in r.items() if k not in drop} for r in b
    ]


def test_a_shipped_dataset_by_name_unless_a_directory_of_that_name_exists(tmp_path, monkeypatch):
    from graphcost.data.io.locate import recorded_data_dir
    from graphcost.datasets import shipped_dataset_dir

    monkeypatch.chdir(tmp_path)
    splits = locate.resolve_splits("cpu_flags", "tile:xla")
    assert splits.root == shipped_dataset_dir("cpu_flags") and splits.files["train"]
    assert recorded_data_dir(Path("cpu_flags")) == "cpu_flags"  # found again by any install
    local = tmp_path / "cpu_flags"
    (local / "train").mkdir(parents=True)
    with pytest.raises(locate.DatasetError):  # the local directory wins (and holds no graphs)
        locate.resolve_splits("cpu_flags", "tile:xla")
    assert recorded_data_dir(Path("cpu_flags")) == str(local)
    with pytest.raises(locate.DatasetError, match="not a directory"):
        locate.resolve_splits("cpu_nope")
