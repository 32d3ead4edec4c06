"""`rank` / `predict` / `train` on hostile TpuGraphs files (issue 19), through the CLI.

Unlabelled files (placeholder or absent runtimes) are validated like labelled ones minus the
runtime checks: every bad class is a one-line ``error:`` naming the file and the key, exit 1.
Valid but unusual graphs (no edges, a one-node tile kernel, no runtimes) rank and train.
"""

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from bad_npz_cases import (
    CASES,
    drop_runtime,
    hide_labels,
    read_arrays,
    single_node_tile,
    write_arrays,
    zero_edges,
)
from cli_asserts import invoke, one_line_error

from graphcost.data.synth.collection import write_synthetic_collection

torch.set_num_threads(1)  # tiny tensors on 2 shared cores
SMALL = ["--model-opt", "hidden=8", "--model-opt", "opcode_dim=2", "--model-opt", "layout_dim=2",
         "--model-opt", "num_blocks=1", "--epochs", "1", "--batch-configs", "8", "--no-progress", "--device", "cpu"]
COLLECTION = {"layout": "layout:xla:random", "tile": "tile:xla"}
CONFIG_KEY = {"layout": "node_config_feat", "tile": "config_feat"}  # counts configurations when no config_runtime


def _ranking(output: str) -> list[int]:
    """Config indices of a `rank` table, fastest first."""
    return [int(line.split()[1]) for line in output.splitlines() if re.match(r"\s*\d+\s+\d+\s", line)]


def _scored(output: str) -> list[tuple[str, str, str]]:
    """(rank, config, score) of each row of a `rank` table (a measured runtime column left out)."""
    return [tuple(line.split()[:3]) for line in output.splitlines() if re.match(r"\s*\d+\s+\d+\s", line)]


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    for collection in COLLECTION.values():
        write_synthetic_collection(root, collection, num_graphs=5, seed=3, split_fractions=(0.6, 0.2, 0.2),
                                   max_nodes=20, max_configs=16, progress=False)
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_root):
    """kind -> a run directory of a tiny model trained one epoch on the synthetic collection."""
    out = {}
    for kind, collection in COLLECTION.items():
        run = tmp_path_factory.mktemp("run") / kind
        result = invoke("train", "-c", collection, "--data-dir", data_root, *SMALL, "--out", run)
        assert result.exit_code == 0, result.output
        out[kind] = run
    return out


def _test_file(root: Path, kind: str) -> Path:
    return sorted((root / "npz" / kind).rglob("test/*.npz"))[0]


def _rank(run, graph):
    return invoke("rank", run, graph, "--tta", "1", "--device", "cpu")


BAD = [(kind, name, labels) for name, (kinds, _, key, _) in CASES.items() for kind in kinds
       for labels in ("zeros", "absent") if not (labels == "absent" and key == "config_runtime_normalizers")]


@pytest.mark.parametrize("kind,name,labels", BAD)
def test_rank_refuses_bad_unlabelled_file(tmp_path, data_root, runs, kind, name, labels):
    _, mutate, key, fragment = CASES[name]
    arrays = read_arrays(_test_file(data_root, kind))
    bad = hide_labels(mutate(arrays)) if labels == "zeros" else drop_runtime(mutate(arrays))
    if labels == "absent" and key == "config_runtime":
        key = CONFIG_KEY[kind]  # no config_runtime: the configuration count comes from the config features
    path = write_arrays(bad, tmp_path / f"{name}.npz")
    one_line_error(_rank(runs[kind], path), str(path), f"key '{key}'", fragment)


@pytest.mark.parametrize("kind", ["layout", "tile"])
def test_unlabelled_file_ranks_like_the_labelled_one(tmp_path, data_root, runs, kind):
    source = _test_file(data_root, kind)
    labelled = _rank(runs[kind], source)
    assert labelled.exit_code == 0, labelled.output
    order = _ranking(labelled.output)
    assert sorted(order) == list(range(len(read_arrays(source)["config_runtime"])))
    for variant in (hide_labels, drop_runtime):
        path = write_arrays(variant(read_arrays(source)), tmp_path / f"{variant.__name__}.npz")
        result = _rank(runs[kind], path)
        assert result.exit_code == 0, result.output + repr(result.exception)
        assert _scored(result.output) == _scored(labelled.output)  # runtimes play no part in a ranking
        assert "runtime (measured)" in labelled.output and "runtime (measured)" not in result.output  # only shown


@pytest.mark.parametrize("kind", ["layout", "tile"])
def test_nan_checkpoint_is_refused(tmp_path, data_root, runs, kind):
    from graphcost.runs import checkpoint as ckpt

    state = ckpt.load_checkpoint(runs[kind] / "best.pt")
    for value in state["model"].values():
        if value.is_floating_point():
            value.fill_(float("nan"))
    bad = tmp_path / "nan.pt"
    ckpt.save_checkpoint(bad, state)
    graph = _test_file(data_root, kind)
    one_line_error(_rank(bad, graph), str(graph), str(bad), "non-finite score")
    out = tmp_path / "sub.csv"
    result = invoke("predict", bad, "--data-dir", data_root, "-c", COLLECTION[kind], "-o", out, "--tta", "1",
                     "--device", "cpu")
    one_line_error(result, str(bad), "non-finite score")
    assert not out.exists()


def test_predict_ranks_unlabelled_test_files_and_refuses_a_bad_one(tmp_path, data_root, runs):
    root = tmp_path / "data"
    shutil.copytree(data_root / "npz" / "layout", root / "npz" / "layout")
    target = _test_file(root, "layout")
    source = read_arrays(target)
    args = ["--data-dir", root, "-c", "layout:xla:random", "--tta", "1", "--device", "cpu"]
    write_arrays(drop_runtime(source), target)  # a test split without labels
    good = tmp_path / "good.csv"
    result = invoke("predict", runs["layout"], "-o", good, *args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    row = good.read_text().splitlines()[1].split(",")
    assert sorted(int(i) for i in row[1].split(";")) == list(range(len(source["config_runtime"])))
    _, mutate, key, fragment = CASES["cycle"]
    write_arrays(drop_runtime(mutate(source)), target)
    out = tmp_path / "sub.csv"
    one_line_error(invoke("predict", runs["layout"], "-o", out, *args), str(target), f"key '{key}'", fragment)
    assert not out.exists()


@pytest.mark.parametrize("kind", ["layout", "tile"])
def test_graph_without_edges_ranks_and_trains(tmp_path, data_root, runs, kind):
    odd = [zero_edges] + ([single_node_tile] if kind == "tile" else [])  # valid graphs `data stats` accepts
    source = read_arrays(_test_file(data_root, kind))
    for change in odd:
        path = write_arrays(change(source), tmp_path / f"{change.__name__}.npz")
        result = _rank(runs[kind], path)
        assert result.exit_code == 0, result.output + repr(result.exception)
        assert sorted(_ranking(result.output)) == list(range(len(source["config_runtime"])))
    root = tmp_path / "data"
    shutil.copytree(data_root / "npz" / kind, root / "npz" / kind)
    train_files = sorted((root / "npz" / kind).rglob("train/*.npz"))
    for path, change in zip(train_files, odd):
        write_arrays(change(read_arrays(path)), path)
    result = invoke("train", "-c", COLLECTION[kind], "--data-dir", root, *SMALL, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert np.isfinite(float(result.output.split("train loss ")[1].split(",")[0]))


@pytest.mark.parametrize("kind", ["layout", "tile"])
def test_prepare_an_unlabelled_in_memory_graph(kind):
    """The library path (an in-memory record): no runtimes is fine unlabelled, a SchemaError labelled."""
    import dataclasses

    from graphcost.data.transforms.preprocess import prepare_graph
    from graphcost.data.io.schema import SchemaError
    from graphcost.data.synth.collection import synth_layout_graph, synth_tile_graph

    if kind == "tile":
        graph = synth_tile_graph(8, 12, seed=1)
        hidden = dataclasses.replace(graph, config_runtime=None, config_runtime_normalizers=None)
    else:
        graph = synth_layout_graph(30, 12, seed=1, config_fraction=0.2)
        hidden = dataclasses.replace(graph, config_runtime=None)
    prepared = prepare_graph(hidden, dedup=False, labelled=False)
    assert prepared.num_configs == len(graph.config_runtime) and np.all(prepared.runtime == 1)
    with pytest.raises(SchemaError, match="config_runtime.*missing"):
        prepare_graph(hidden, dedup=False)


@pytest.mark.parametrize("kind, key", [("tile", "node_feat")])
def test_huge_feature_is_blamed_on_the_file_not_the_checkpoint(tmp_path, data_root, runs, kind, key):
    """issue 26: `rank` on a file with a 1e38 feature (finite, but it overflows the model) said "are the
    checkpoint's weights finite?"; the weights are: the error names the file's key and value."""
    arrays = read_arrays(_test_file(data_root, kind))
    feat = arrays[key].astype(np.float32)
    feat.flat[3] = 1e38
    path = write_arrays({**arrays, key: feat}, tmp_path / "huge.npz")
    line = one_line_error(_rank(runs[kind], path), str(path), "non-finite score", f"key '{key}'", "1e+38")
    assert "weights finite?" not in line


def test_layout_file_without_configurable_nodes_warns(tmp_path, data_root, runs):
    """issue 26: a layout file with no configurable nodes ranked every configuration 0.0 without a word."""
    arrays = read_arrays(_test_file(data_root, "layout"))
    none = {**arrays, "node_config_ids": arrays["node_config_ids"][:0],
            "node_config_feat": arrays["node_config_feat"][:, :0]}
    path = write_arrays(none, tmp_path / "noconf.npz")
    result = _rank(runs["layout"], path)
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and str(path) in warnings[0] and "no configurable node" in warnings[0]


@pytest.mark.parametrize("kind", ["tile", "layout"])
def test_uint64_edge_id_is_printed_as_it_is(tmp_path, data_root, runs, kind):
    """issue 26: a uint64 edge id 2**64 - 1 was printed as -1."""
    arrays = read_arrays(_test_file(data_root, kind))
    edges = arrays["edge_index"].astype(np.uint64)
    edges[0, 0] = 2**64 - 1
    path = write_arrays({**arrays, "edge_index": edges}, tmp_path / "u64.npz")
    line = one_line_error(_rank(runs[kind], path), str(path), "key 'edge_index'", "18446744073709551615")
    assert "-1" not in line.split("key 'edge_index'")[1]
