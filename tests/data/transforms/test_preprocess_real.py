"""data-prep on REAL TpuGraphs data: the autotuner record in ../shared/data/tpu_graphs_raw,
converted to the npz schema by the HLO frontend (3,163 nodes, 62 configurable, 112 runs)."""

import numpy as np
import pytest

from graphcost.data.transforms.compress import decompress_layout_config
from graphcost.data.transforms.padding import tensor_rank
from graphcost.data.transforms.preprocess import prepare_graph


@pytest.fixture(scope="module")
def real_layout(shared_data):
    from graphcost.frontend.hlo.convert import convert_layout
    from graphcost.frontend.hlo.tuning_proto import parse_module_tuning_data

    raw = (shared_data / "tpu_graphs_raw" / "module_tuning_data_layout.pb").read_bytes()
    graph, _ = convert_layout(parse_module_tuning_data(raw), "module_tuning_data_layout.pb")
    return graph


def test_padding_rank_rule_on_real_features(real_layout):
    feat = real_layout.node_feat
    rank = tensor_rank(feat)
    m2m = feat[:, 134:140]
    # beyond the rank the raw layout is 0-padded; within it, it is a permutation of 0..rank-1
    assert (m2m[np.arange(6)[None, :] >= rank[:, None]] == 0).all()
    for i in range(len(feat)):
        assert sorted(m2m[i, : rank[i]].tolist()) == list(range(rank[i])), i


def test_prepare_real_layout(real_layout, tmp_path):
    g = real_layout
    p = prepare_graph(g)
    assert p.num_nodes < len(g.node_feat) // 5  # pruning keeps a small neighbourhood
    assert np.array_equal(p.kept_nodes[p.config_node_index], g.node_config_ids)
    assert p.num_configs < p.num_source_configs == len(g.config_runtime)  # real duplicates exist
    decoded = decompress_layout_config(p.config_codes)
    assert np.array_equal(decoded, g.node_config_feat[p.config_source_index])
    src = g.node_config_feat.reshape(len(g.config_runtime), -1)
    for j, orig in enumerate(p.config_source_index):
        same = (src == src[orig]).all(axis=1)
        assert p.runtime[j] == g.config_runtime[same].min()
    # rank-0 nodes (tuples/scalars) are all -1, others -1 beyond their rank
    rank = tensor_rank(g.node_feat[p.kept_nodes])
    assert (p.node_feat[:, 134:][np.arange(6)[None, :] >= rank[:, None]] == -1).all()
