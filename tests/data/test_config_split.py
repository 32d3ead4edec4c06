"""graphcost data split-configs: one graph split by configuration into train / valid / test."""

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.config_split import ConfigSplitError, config_split_indices, split_by_configuration
from graphcost.datasets import default_dataset_dir


def _shipped_graph() -> Path:
    return sorted((default_dataset_dir() / "train").glob("*.npz"))[0]


def test_split_is_disjoint_and_slices_every_per_config_key(tmp_path):
    src = _shipped_graph()
    written = split_by_configuration(src, tmp_path, 0.25, 0.25, seed=3)
    with np.load(src, allow_pickle=False) as z:
        orig = {k: z[k] for k in z.files}
    k = len(orig["config_runtime"])
    seen = []
    for split, path in written.items():
        with np.load(path, allow_pickle=False) as z:
            part = {key: z[key] for key in z.files}
        assert set(part) == set(orig)
        np.testing.assert_array_equal(part["node_feat"], orig["node_feat"])  # the graph itself is copied
        idx = [int(np.flatnonzero((orig["node_config_feat"] == row).all((1, 2)) & (orig["config_runtime"] == r))[0])
               for row, r in zip(part["node_config_feat"], part["config_runtime"])]
        for key in ("config_runtime", "config_runtime_samples", "config_search_mode"):
            np.testing.assert_array_equal(part[key], orig[key][idx])  # rows stay together
        seen += idx
    assert sorted(seen) == list(range(k))  # disjoint and complete
    assert len(written) == 3


def test_indices_follow_the_fractions_and_the_seed():
    a = config_split_indices(1000, 0.01, 0.01, seed=0)
    assert [len(a[s]) for s in ("train", "valid", "test")] == [10, 10, 980]
    b = config_split_indices(1000, 0.01, 0.01, seed=0)
    assert all(np.array_equal(a[s], b[s]) for s in a)
    assert not np.array_equal(a["train"], config_split_indices(1000, 0.01, 0.01, seed=1)["train"])
    with pytest.raises(ConfigSplitError, match="fractions"):
        config_split_indices(1000, 0.6, 0.5, seed=0)
    with pytest.raises(ConfigSplitError, match="too few"):
        config_split_indices(5, 0.5, 0.3, seed=0)


def test_cli_refuses_to_overwrite_and_bad_files(tmp_path):
    runner = CliRunner()
    src = _shipped_graph()
    ok = runner.invoke(app, ["data", "split-configs", str(src), "--out", str(tmp_path / "d"), "--train", "0.5"])
    assert ok.exit_code == 0, ok.output
    assert "train:" in ok.output and (tmp_path / "d" / "test" / src.name).is_file()
    again = runner.invoke(app, ["data", "split-configs", str(src), "--out", str(tmp_path / "d")])
    assert again.exit_code == 1 and "exists" in again.output and "Traceback" not in again.output
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    bad = runner.invoke(app, ["data", "split-configs", str(junk), "--out", str(tmp_path / "e")])
    assert bad.exit_code == 1 and "junk.npz" in bad.output and "Traceback" not in bad.output
    np.savez(tmp_path / "noruntime.npz", node_feat=np.zeros((2, 140), np.float32))
    bad = runner.invoke(app, ["data", "split-configs", str(tmp_path / "noruntime.npz"), "--out", str(tmp_path / "f")])
    assert bad.exit_code == 1 and "'config_runtime'" in bad.output
