"""A small npz whose members declare more memory than the machine has is refused from its headers
(issue 65: a 27 MB file declaring an (11,000,000, 140) float32 node_feat took 5 GB within seconds)."""

import numpy as np
import pytest

from graphcost.guards import bounds
from graphcost.data.io.schema import SchemaError
from graphcost.data.io.tpugraphs_io import load_graph


def test_declared_size_bomb_is_refused_before_reading(layout_arrays, write_npz, monkeypatch):
    bomb = dict(layout_arrays, node_feat=np.zeros((200_000, 140), np.float32))  # 112 MB of zeros, ~100 KB deflated
    path = write_npz(bomb, "bomb.npz", compressed=True)
    assert path.stat().st_size < 2_000_000
    monkeypatch.setattr(bounds, "available_memory_bytes", lambda: 50 * 2**20)  # a machine with 50 MiB to spare
    with pytest.raises(SchemaError, match=r"bomb\.npz.*node_feat.*\(200000, 140\) float32.*more than the 0\.0488 GiB"):
        load_graph(path)


def test_a_file_that_fits_is_read(layout_arrays, write_npz, monkeypatch):
    path = write_npz(layout_arrays, "ok.npz", compressed=True)
    monkeypatch.setattr(bounds, "available_memory_bytes", lambda: 50 * 2**20)
    assert load_graph(path).node_feat.shape == layout_arrays["node_feat"].shape
    assert bounds.available_memory_bytes() > 0


def test_split_configs_refuses_the_bomb_too(layout_arrays, write_npz, tmp_path, monkeypatch):
    from graphcost.data.config_split import ConfigSplitError, split_by_configuration

    path = write_npz(dict(layout_arrays, node_feat=np.zeros((200_000, 140), np.float32)), "bomb.npz", compressed=True)
    monkeypatch.setattr(bounds, "available_memory_bytes", lambda: 50 * 2**20)
    with pytest.raises(ConfigSplitError, match=r"bomb\.npz.*node_feat.*more than the"):
        split_by_configuration(path, tmp_path / "out", 0.6, 0.2)
    assert not (tmp_path / "out").exists()


def test_a_bomb_that_fits_the_machine_is_refused_by_what_one_graph_can_need(layout_arrays, write_npz, monkeypatch):
    """The bound is what one graph's arrays can need (`npz_stream.DECLARED_BYTES_MAX`), not the machine's memory: a
    declaration past it is refused on a machine with 64 GiB free (issue 81: a 6 GB bomb passed a 21 GB bound)."""
    from graphcost.data.io import npz_stream

    monkeypatch.setattr(npz_stream, "DECLARED_BYTES_MAX", 50 * 2**20)  # the same rule, at a size a test can write
    path = write_npz(dict(layout_arrays, node_feat=np.zeros((200_000, 140), np.float32)), "bomb.npz", compressed=True)
    monkeypatch.setattr(bounds, "available_memory_bytes", lambda: 64 * 2**30)
    with pytest.raises(SchemaError, match=r"bomb\.npz.*node_feat.*of the most one graph's arrays can need"):
        load_graph(path)
