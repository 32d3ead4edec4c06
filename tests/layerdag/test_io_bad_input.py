"""QA: malformed flat DAG npz files are DAGFileErrors naming file and key, never numpy/zip tracebacks."""

import numpy as np
import pytest

from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.io import DAGFileError, dags_to_arrays, load_dags, save_dags


def _arrays():
    return dags_to_arrays([DAG(np.array([0, 1, 2], np.int64), np.array([0, 1], np.int64),
                               np.array([1, 2], np.int64), 1.0)])  # fmt: skip


def _write(tmp_path, arrays, name="bad.npz"):
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def test_truncated_file(tmp_path):
    good = save_dags([DAG(np.arange(50) % 3, np.arange(49), np.arange(1, 50), None)], tmp_path / "g.npz")
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[:-40])
    with pytest.raises(DAGFileError, match=r"cut\.npz: key '\*': not a readable npz"):
        load_dags(cut)


def test_corrupt_member(tmp_path):
    good = save_dags([DAG(np.arange(400) % 7, np.arange(399), np.arange(1, 400), None)], tmp_path / "g.npz")
    raw = bytearray(good.read_bytes())
    start = raw.index(b"node_cat.npy") + 40  # inside the deflated member's data
    raw[start : start + 30] = b"\xff" * 30
    broken = tmp_path / "broken.npz"
    broken.write_bytes(bytes(raw))
    with pytest.raises(DAGFileError, match=r"broken\.npz"):
        load_dags(broken)


def test_directory_and_bare_npy(tmp_path):
    with pytest.raises(DAGFileError, match="is a directory"):
        load_dags(tmp_path)
    np.save(tmp_path / "a.npy", np.zeros(3))
    with pytest.raises(DAGFileError, match=r"a\.npy.*single \.npy array"):
        load_dags(tmp_path / "a.npy")


def test_non_numeric_label(tmp_path):
    arrays = _arrays()
    arrays["y"] = np.array(["fast"])
    with pytest.raises(DAGFileError, match=r"key 'y'.*float dtype"):
        load_dags(_write(tmp_path, arrays))


def test_integer_labels_are_accepted(tmp_path):
    arrays = _arrays()
    arrays["y"] = np.array([3])
    assert load_dags(_write(tmp_path, arrays))[0].label == 3.0


@pytest.mark.parametrize("src, dst", [([0, 1, 2], [1, 2, 0]), ([0, 1, 1], [1, 2, 1])])
def test_cycle_or_self_loop_names_the_graph(tmp_path, src, dst):
    arrays = _arrays()
    arrays["src"], arrays["dst"] = np.array(src), np.array(dst)
    arrays["edge_offsets"] = np.array([0, 3])
    with pytest.raises(DAGFileError, match=r"bad\.npz: key 'src': graph 0: .*cycle"):
        load_dags(_write(tmp_path, arrays))


def test_acyclic_graph_not_in_topological_order_is_accepted(tmp_path):
    arrays = _arrays()
    arrays["src"], arrays["dst"] = np.array([2, 1]), np.array([1, 0])  # 2 -> 1 -> 0
    dags = load_dags(_write(tmp_path, arrays))
    np.testing.assert_array_equal(dags[0].src, [2, 1])


def test_save_to_a_directory_is_a_clear_error(tmp_path):
    with pytest.raises(DAGFileError, match="is a directory"):
        save_dags([DAG(np.array([0]), np.zeros(0, np.int64), np.zeros(0, np.int64), None)], tmp_path)


@pytest.mark.parametrize("name", ["lp", "nasbench201"])
@pytest.mark.parametrize("num_graphs", [0, -3, 7])
def test_too_few_graphs_is_a_value_error(name, num_graphs):
    from graphcost.layerdag.datasets import load_dataset

    with pytest.raises(ValueError, match=rf"{name}: num_graphs must be at least 8.*got {num_graphs}"):
        load_dataset(name, num_graphs=num_graphs)


def test_eight_lp_graphs_fill_every_split():
    from graphcost.layerdag.datasets import load_dataset

    splits = load_dataset("lp", num_graphs=8, seed=3)
    assert all(len(v) >= 1 for v in splits.values())


def test_cli_dag_train_with_too_few_graphs_fails_cleanly(tmp_path):
    from typer.testing import CliRunner

    from graphcost.cli import app

    result = CliRunner().invoke(app, ["dag", "train", "--dataset", "lp", "--num-graphs", "3", "--epochs", "1",
                                      "--out", str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code != 0 and "num_graphs must be at least 8" in result.output
    assert isinstance(result.exception, SystemExit)  # typer.Exit, not a traceback


def test_unsupported_compression_method(tmp_path):
    """QA: a damaged zip directory entry (unknown compression method) was a NotImplementedError traceback."""
    path = _write(tmp_path, _arrays(), "method.npz")
    raw = bytearray(path.read_bytes())
    entry = raw.index(b"PK\x01\x02")  # first central-directory entry
    raw[entry + 10 : entry + 12] = (99).to_bytes(2, "little")  # compression method 99
    path.write_bytes(bytes(raw))
    with pytest.raises(DAGFileError, match=r"method\.npz"):
        load_dags(path)


def test_unparsable_npy_header(tmp_path):
    path = _write(tmp_path, _arrays(), "header.npz")
    raw = bytearray(path.read_bytes())
    at = raw.index(b"{'descr'")
    raw[at : at + 2] = b"{("  # an unclosed bracket: the header no longer parses
    path.write_bytes(bytes(raw))
    with pytest.raises(DAGFileError, match=r"header\.npz"):
        load_dags(path)
