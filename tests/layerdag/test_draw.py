"""LayerDAG drawings: barycenter ordering, crossing count, category styles, the PNG."""

from __future__ import annotations

import numpy as np

from graphcost.layerdag import draw
from graphcost.layerdag.dag_record import DAG


def _dag(n, edges, attr=None, label=None):
    src, dst = (np.array(x, dtype=np.int64) for x in zip(*edges))
    return DAG(np.asarray(attr if attr is not None else np.zeros(n), dtype=np.int64), src, dst, label)


def test_count_crossings():
    pos = np.array([[0, 0], [1, 0], [0, -1], [1, -1]], dtype=float)
    assert draw.count_crossings(pos, np.array([0, 1]), np.array([3, 2])) == 1  # an X
    assert draw.count_crossings(pos, np.array([0, 1]), np.array([2, 3])) == 0  # parallel
    assert draw.count_crossings(pos, np.array([0, 0]), np.array([2, 3])) == 0  # shared end


def test_barycenter_untangles_a_reversed_layer():
    # layer 0: 0 1 2; layer 1: 3 4 5 wired in reverse (3 crossings in id order), then 6 7 8 in reverse again
    dag = _dag(9, [(0, 5), (1, 4), (2, 3), (3, 8), (4, 7), (5, 6)])
    layers = draw.layers_of(dag)
    assert [ids.tolist() for ids in layers] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    before = draw.count_crossings(draw.positions(layers, 9), dag.src, dag.dst)
    ordered = draw.barycenter_layers(layers, dag.src, dag.dst)
    assert before == 6
    assert draw.count_crossings(draw.positions(ordered, 9), dag.src, dag.dst) == 0
    assert [sorted(ids.tolist()) for ids in ordered] == [ids.tolist() for ids in layers]  # same layers


def test_barycenter_never_worse_than_input():
    rng = np.random.default_rng(3)
    for _ in range(5):
        edges = [(int(u), int(v)) for v in range(4, 30) for u in rng.choice(v, size=2, replace=False)]
        dag = _dag(30, edges)
        layers = draw.layers_of(dag)
        base = draw.count_crossings(draw.positions(layers, 30), dag.src, dag.dst)
        ordered = draw.barycenter_layers(layers, dag.src, dag.dst)
        assert draw.count_crossings(draw.positions(ordered, 30), dag.src, dag.dst) <= base


def test_category_styles_are_distinct_for_many_categories():
    styles = draw.category_styles(range(47))  # TPU Tile: 47 opcodes
    assert len({(tuple(c), m) for c, m in styles.values()}) == 47
    assert draw.grid_shape(6) == (2, 3) and draw.grid_shape(1) == (1, 1) and draw.grid_shape(4) == (2, 2)


def test_draw_dags_png(tmp_path):
    dags = [_dag(4, [(0, 1), (0, 2), (1, 3), (2, 3)], attr=[0, 1, 2, 13], label=1.5 * i) for i in range(4)]
    out = draw.draw_dags(dags, tmp_path / "d.png", title="t", **draw.describe_dataset("nasbench201"))
    assert out.stat().st_size > 1000 and out.read_bytes()[:4] == b"\x89PNG"
    assert draw.describe_dataset("unknown") == {}


def test_titles_count_in_the_singular_and_the_plural():
    """samples.png's titles said "1 nodes ... 1 layers" (issue 80)."""
    from graphcost.layerdag.draw import counted

    assert [counted(1, "node"), counted(0, "edge"), counted(3, "layer")] == ["1 node", "0 edges", "3 layers"]
