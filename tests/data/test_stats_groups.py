"""`graphcost data stats` grouping and labels (QA fixes): kinds never lumped, official names inferred."""

import shutil

import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.synth import collection as synth
from graphcost.data.stats import stats_for_path

SMALL = dict(num_graphs=3, seed=1, min_nodes=40, max_nodes=60, min_configs=5, max_configs=8, progress=False)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A data root with SYNTHETIC tile:xla and layout:xla:random collections (1 graph per split)."""
    root = tmp_path_factory.mktemp("root")
    synth.write_synthetic_collection(root, "tile:xla", **SMALL)
    synth.write_synthetic_collection(root, "layout:xla:random", config_fraction=0.2, **SMALL)
    return root


def _groups(rows):
    return {r["group"]: r for r in rows}


def test_flat_dir_with_both_kinds_gives_one_row_per_kind(root, tmp_path):
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for f in list((root / "npz/tile/xla").rglob("*.npz")) + list((root / "npz/layout/xla/random").rglob("*.npz")):
        shutil.copy(f, mixed / f"{f.parent.parent.name}_{f.name}")
    rows = _groups(stats_for_path(mixed))
    assert set(rows) == {"mixed [tile]", "mixed [layout]"}  # was one lumped "mixed" row averaging both kinds
    assert rows["mixed [tile]"]["graphs"] == 3 and rows["mixed [layout]"]["graphs"] == 3
    assert rows["mixed [tile]"]["config_nodes_mean"] == 0 and rows["mixed [layout]"]["config_nodes_mean"] > 0
    per_file = _groups(stats_for_path(mixed, per_file=True))
    assert sum(g.startswith("mixed [tile]/") for g in per_file) == 3


@pytest.mark.parametrize(
    "sub,expected",
    [
        ("npz/layout/xla/random", {f"layout:xla:random/{s}" for s in ("train", "valid", "test")}),
        ("npz/layout/xla/random/train", {"layout:xla:random/train"}),
        ("npz/layout", {f"layout:xla:random/{s}" for s in ("train", "valid", "test")}),
        ("npz/tile/xla/test", {"tile:xla/test"}),
        ("npz", {f"{c}/{s}" for c in ("tile:xla", "layout:xla:random") for s in ("train", "valid", "test")}),
    ],
)
def test_official_paths_get_full_collection_names(root, sub, expected):
    rows = _groups(stats_for_path(root / sub))
    assert set(rows) == expected  # a collection dir was labelled "random/train"


def test_error_message_not_on_progress_bar_line(root, tmp_path):
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    shutil.copy(next((root / "npz/tile/xla/train").glob("*.npz")), bad_dir / "a.npz")
    (bad_dir / "b.npz").write_bytes(b"PK\x03\x04 damaged")
    res = CliRunner().invoke(app, ["data", "stats", str(bad_dir)])
    assert res.exit_code == 1
    errors = [line for line in res.output.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("error: ") and "b.npz" in errors[0], res.output
