"""LayerDAG datasets: flat npz I/O, LP generator + validity checker, TPU Tile, NAS-Bench-201 expansion."""

import numpy as np
import pytest

from graphcost.data.splits import kfold_train_valid_test, train_valid_test_split
from graphcost.layerdag.datasets import load_dataset
from graphcost.layerdag.datasets.lp import generate_lp_dataset, is_valid_lp, lp_validity, lp_violations
from graphcost.layerdag.datasets.nasbench201 import CAT, expand_architecture, parse_cell
from graphcost.layerdag.dag_record import DAG
from graphcost.layerdag.io import DAGFileError, load_dags, save_dags


def dag(labels, edges, label=None):
    src = np.array([u for u, _ in edges], np.int64)
    dst = np.array([v for _, v in edges], np.int64)
    return DAG(np.array(labels, np.int64), src, dst, label)


def test_flat_io_round_trip(tmp_path):
    dags = [dag([0, 1, 1], [(0, 1), (0, 2)], 1.5), dag([2], [], None)]
    path = save_dags(dags, tmp_path / "g.npz")
    back = load_dags(path)
    assert len(back) == 2
    np.testing.assert_array_equal(back[0].node_attr, [0, 1, 1])
    np.testing.assert_array_equal(back[0].dst, [1, 2])
    assert back[0].label == pytest.approx(1.5) and back[1].label is None
    assert not list(tmp_path.glob("*.tmp*"))


def test_flat_io_reads_shared_tile_file(shared_data):
    dags = load_dags(shared_data / "tpu_tile_graphs" / "val.npz")
    assert len(dags) == 630
    assert sum(d.num_nodes for d in dags) == 26048
    assert all(np.all(d.src < d.dst) for d in dags)


@pytest.mark.parametrize(
    "mutate, key",
    [
        (lambda a: a.pop("y"), "y"),
        (lambda a: a.__setitem__("src", a["src"] + 5), "src"),
        (lambda a: a.__setitem__("node_offsets", a["node_offsets"][:-1]), "node_offsets"),
        (lambda a: a.__setitem__("node_cat", a["node_cat"].astype(np.float32)), "node_cat"),
    ],
)
def test_flat_io_errors_name_the_key(tmp_path, mutate, key):
    from graphcost.layerdag.io import dags_to_arrays

    arrays = dags_to_arrays([dag([0, 1, 1], [(0, 1), (0, 2)], 1.0)])
    mutate(arrays)
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(DAGFileError, match=f"key '{key}'"):
        load_dags(path)


def test_generated_lp_graphs_are_valid_and_deterministic():
    a, b = generate_lp_dataset(50, seed=3), generate_lp_dataset(50, seed=3)
    assert lp_validity(a) == 1.0
    assert all(np.array_equal(x.src, y.src) and np.array_equal(x.node_attr, y.node_attr) for x, y in zip(a, b))
    assert max(d.num_nodes for d in a) > 5


VALID = dag([0, 1, 0, 1], [(0, 1), (0, 2), (1, 3), (2, 3)])  # layers {0}, {1,2}, {3}; node 3 preds labels 1,0


@pytest.mark.parametrize(
    "bad, reason",
    [
        (dag([0, 1, 0], [(0, 2), (1, 2)]), "layer 1 has 2 nodes"),  # two source nodes
        (dag([0, 1, 1, 0], [(0, 1), (0, 2), (1, 3), (2, 3)]), "same label"),  # preds 1,2 both label 1
        (dag([0, 1, 0, 1], [(0, 1), (1, 2), (2, 3), (0, 3), (1, 3)]), "at most 2"),
        (dag([0, 1, 2], [(0, 1), (1, 2)]), "binary"),
        (dag([0, 1], [(0, 1), (1, 0)]), "cycle"),
        (dag([0] + [1] * 4, [(0, i) for i in range(1, 5)]), "allowed"),  # 4 label-1 nodes after 0: bound is 0+2
    ],
)
def test_validity_checker_rejects_hand_made_invalid_graphs(bad, reason):
    assert is_valid_lp(VALID), lp_violations(VALID)
    problems = lp_violations(bad)
    assert problems and any(reason in p for p in problems), problems


def test_train_valid_test_split_is_a_partition():
    parts = train_valid_test_split(list(range(100)), seed=1)
    assert sorted(parts["train"] + parts["valid"] + parts["test"]) == list(range(100))
    assert len(parts["train"]) == 80


def test_kfold_train_valid_test_tests_every_graph_once():
    items = list(range(103))
    folds = [kfold_train_valid_test(items, 10, f, seed=4) for f in range(10)]
    assert sorted(i for parts in folds for i in parts["test"]) == items  # each graph tested exactly once
    for f, parts in enumerate(folds):
        assert sorted(parts["train"] + parts["valid"] + parts["test"]) == items
        assert parts["valid"] == folds[(f - 1) % 10]["test"]  # valid = the previous fold's test part
        assert len(parts["test"]) in (10, 11) and len(parts["train"]) in (81, 82, 83)
    assert kfold_train_valid_test(list(range(100)), 10, 9, seed=3) == train_valid_test_split(list(range(100)), seed=3)
    for bad, msg in (({"folds": 2}, "folds must be an integer >= 3"), ({"fold": 10}, "fold must be in 0..9"),
                     ({"fold": -1}, "fold must be in 0..9")):  # fmt: skip
        with pytest.raises(ValueError, match=msg):
            kfold_train_valid_test(items, **{"folds": 10, "fold": 0, **bad})
    with pytest.raises(ValueError, match="needs at least 10 graphs, got 9"):
        kfold_train_valid_test(list(range(9)), 10, 0)


def test_tpu_tile_split(shared_data):
    parts = load_dataset("tpu-tile")
    assert sum(len(v) for v in parts.values()) == 630
    assert all(d.label is not None and d.label > 0 for d in parts["test"])


def test_nasbench_full_cell_expands_to_149_nodes():
    arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
    g = expand_architecture(arch, 3.0)
    # input + stem + 15 cells x (6 ops + 3 sums) + 2 reductions x 5 + pool + linear
    assert g.num_nodes == 2 + 15 * 9 + 2 * 5 + 2
    assert int((g.node_attr == CAT["nor_conv_3x3"]).sum()) == 15 * 3
    assert np.all(g.src < g.dst)  # creation order is topological


def test_nasbench_dead_operators_are_removed():
    g = expand_architecture("|nor_conv_1x1~0|+|none~0|none~1|+|none~0|nor_conv_3x3~1|none~2|")
    # node 2 has no inputs and feeds nothing used -> removed; node 3 = conv3x3(conv1x1(x))
    assert int((g.node_attr == CAT["cell_sum"]).sum()) == 15 * 2
    with pytest.raises(ValueError):
        parse_cell("|conv~0|+|")


def test_nasbench_loader_labels(shared_data):
    parts = load_dataset("nasbench201", num_graphs=50, device="pixel3")
    assert sum(len(v) for v in parts.values()) == 50
    assert all(d.label > 0 for d in parts["train"])
    with pytest.raises(ValueError, match="no device"):
        load_dataset("nasbench201", num_graphs=10, device="abacus")
