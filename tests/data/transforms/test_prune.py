import numpy as np

from graphcost.data.transforms.prune import identity_prune, prune_around_configurable

# Data flow 0->1->2->3->4->5, 6->7->8->9, 5->9, 3->9; rows [u, v] = u consumes v.
EDGES = np.array([[1, 0], [2, 1], [3, 2], [4, 3], [5, 4], [7, 6], [8, 7], [9, 8], [9, 5], [9, 3]])


def test_hand_built_graph():
    res = prune_around_configurable(10, EDGES, np.array([8, 2]))
    # configurable 2 (producer 1, consumer 3) and 8 (producer 7, consumer 9)
    assert res.kept_nodes.tolist() == [1, 2, 3, 7, 8, 9]
    assert res.old_to_new.tolist() == [-1, 0, 1, 2, -1, -1, -1, 3, 4, 5]
    # kept edges in original order: [2,1] [3,2] [8,7] [9,8] [9,3]; [9,5] dropped (5 not kept)
    assert res.edge_index.tolist() == [[1, 0], [2, 1], [4, 3], [5, 4], [5, 2]]
    assert res.node_config_ids.tolist() == [4, 1]  # order of node_config_ids preserved
    assert res.edge_index.dtype == np.int64


def test_no_configurable_nodes_and_identity():
    res = prune_around_configurable(10, EDGES, np.array([], dtype=np.int64))
    assert res.num_nodes == 0 and res.edge_index.shape == (0, 2)
    ident = identity_prune(10, EDGES, np.array([3]))
    assert ident.kept_nodes.tolist() == list(range(10)) and np.array_equal(ident.edge_index, EDGES)


def test_random_graph_invariants(layout_graph):
    g = layout_graph
    res = prune_around_configurable(len(g.node_feat), g.edge_index, g.node_config_ids)
    kept = set(res.kept_nodes.tolist())
    cfg = set(g.node_config_ids.tolist())
    expected = set(cfg)
    for u, v in g.edge_index:
        if u in cfg:
            expected.add(int(v))
        if v in cfg:
            expected.add(int(u))
    assert kept == expected
    back = res.kept_nodes[res.edge_index]
    want = [tuple(e) for e in g.edge_index.tolist() if e[0] in kept and e[1] in kept]
    assert [tuple(e) for e in back.tolist()] == want
    assert np.array_equal(res.kept_nodes[res.node_config_ids], g.node_config_ids)
