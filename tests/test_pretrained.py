"""The cost models that ship with graphcost: loadable pickle-free, used by `rank` without a model, and
refused with one line when their features are of another version."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import graphcost.pretrained as pretrained
from cli_asserts import one_line_error
from graphcost.cli import app
from graphcost.data.graph import FEATURE_VERSION
from graphcost.data.io.packed import shipped_data_dir
from graphcost.datasets import shipped_dataset_dir
from graphcost.inference.ensemble import resolve_checkpoints


@pytest.mark.parametrize("kind", pretrained.KINDS)
def test_shipped_models_load_weights_only_and_are_described(kind):
    run = pretrained.shipped_model_dir(kind)
    members = resolve_checkpoints(run)  # best.pt, or a seed ensemble's members
    for member in members:
        state = torch.load(member, map_location="cpu", weights_only=True)
        assert state["model_spec"]["kind"] == kind and state["feature_version"] == FEATURE_VERSION
    assert (run / "blend.json").is_file() and (run / "trees.txt").is_file()
    assert not list(run.rglob("checkpoint.pt"))  # no optimizer state ships
    info = json.loads((run.parent / pretrained.MANIFEST).read_text())[kind]
    assert info["version"] >= 1 and "graphcost train" in info["command"]
    assert len(members) == info.get("seeds", 1)  # every member of the recorded ensemble ships
    assert f"v{info['version']}" in pretrained.describe(kind)
    # the release it saw: no more training graphs than the shipped data's train split holds now
    shipped_train = [len(list((shipped_data_dir(name) / "train").glob("*.npz"))) for name in info["data"].split(" + ")]
    assert 1 <= info["train_graphs"] <= sum(shipped_train)  # trained on shipped data ("a + b": several together)
    assert f"{info['train_graphs']} training graphs of {info['data']}" in pretrained.describe(kind)


def test_a_shipped_model_without_one_of_its_files_is_refused(tmp_path, monkeypatch):
    """issue 65: the shipped layout run without blend.json ranked with the graph model alone, silently."""
    root = tmp_path / "pretrained"
    shutil.copytree(pretrained.shipped_model_dir("layout").parent, root)
    (root / "layout" / "blend.json").unlink()
    monkeypatch.setattr(pretrained, "_ROOT", root)
    with pytest.raises(FileNotFoundError, match=r"shipped layout model is incomplete: .* lacks blend\.json"):
        pretrained.shipped_model_dir("layout")
    assert pretrained.shipped_model_dir("tile") == root / "tile"
    (root / pretrained.MANIFEST).write_text("[" * 100_000 + "]" * 100_000)  # nested past the recursion limit
    assert pretrained.describe("tile") == f"the shipped tile model ({root / 'tile'})"


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="no shipped model of kind 'nope'"):
        pretrained.shipped_model_dir("nope")


@pytest.mark.parametrize("dataset, kind", [("cpu_layout", "layout"), ("cpu_flags", "tile")])
def test_rank_without_a_model_uses_the_shipped_one(dataset, kind):
    graph = sorted((shipped_dataset_dir(dataset) / "test").glob("*.npz"))[0]
    res = CliRunner().invoke(app, ["rank", str(graph), "--top", "3", "--tta", "0", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert f"ranking with the shipped {kind} model" in res.output
    rows = json.loads(res.output[res.output.index("["):])
    assert len(rows) == 3 and all(r["runtime"] is not None for r in rows)


def test_rank_of_a_graph_with_one_configuration_lists_it(tmp_path):
    """issue 65: a graph with one configuration was a traceback ("need at least 2 configuration(s)")."""
    from graphcost.data.io.tpugraphs_io import save_graph
    from graphcost.data.synth.collection import synth_tile_graph

    graph = save_graph(synth_tile_graph(num_nodes=10, num_configs=1, seed=1), tmp_path / "one.npz")
    res = CliRunner().invoke(app, ["rank", str(graph), "--tta", "0"])
    assert res.exit_code == 0, res.output
    assert "one configuration: nothing to rank it against" in res.output and "Traceback" not in res.output


def test_rank_refuses_a_model_of_another_feature_version(tmp_path):
    run = tmp_path / "old"
    shutil.copytree(pretrained.shipped_model_dir("layout"), run)
    state = torch.load(run / "best.pt", map_location="cpu", weights_only=True)
    state["feature_version"] = FEATURE_VERSION + 1
    torch.save(state, run / "best.pt")
    graph = sorted((shipped_dataset_dir("cpu_layout") / "test").glob("*.npz"))[0]
    one_line_error(CliRunner().invoke(app, ["rank", str(run), str(graph)]),
                   "best.pt", "feature_version", f"version {FEATURE_VERSION}")


def test_rank_takes_at_most_model_and_graph(tmp_path):
    res = CliRunner().invoke(app, ["rank", "a", "b", "c"])
    assert res.exit_code == 2 and "[MODEL] GRAPH" in res.output


def test_the_shipped_kernel_model_loads_with_its_flag_trees():
    """The shipped kernel model (graphcost/pretrained/kernels) loads as `rank PROGRAM` loads it, and ranks
    by the kernel sum blended with its flag trees (issue 63: the blend led both on unseen families)."""
    from graphcost.kernels.model import KernelCostModel

    model = KernelCostModel.load()
    assert model.blended and 0.0 < model.flag_weight < 1.0
    assert model.meta["programs"] >= 300 and model.meta["families"] >= 25
    scores = model.rank_scores(np.asarray([1e-3, 2e-3, 4e-3]), np.zeros((3, 24), np.float32))
    assert np.argsort(scores).tolist() == [0, 1, 2]  # equal flags: the kernel sum's order


@pytest.mark.parametrize("damage", ["huge_overhead", "zero_scale", "sparse_meta"])
def test_a_damaged_kernel_model_is_refused_before_it_ranks(tmp_path, damage):
    """A copy of the shipped kernel model with a sum rule no timing could fit, or a sparse 3 GB kernel_model.json,
    is one line naming the file and field (issue 81: the first was accepted and changed the ranking, the second
    read whole)."""
    import json
    import shutil

    from graphcost.kernels.model import KernelCostModel
    from graphcost.pretrained import shipped_kernel_model_dir

    copy = tmp_path / "kernels"
    shutil.copytree(shipped_kernel_model_dir(), copy)
    meta = json.loads((copy / "kernel_model.json").read_text())
    if damage == "sparse_meta":
        with open(copy / "kernel_model.json", "r+b") as fh:
            fh.truncate(3 * 1024**3)
        expect = "kernel_model.json: 3221225472 bytes"
    else:
        meta["sum_rule"].update({"b": 1e6} if damage == "huge_overhead" else {"a": 0.0})
        (copy / "kernel_model.json").write_text(json.dumps(meta))
        expect = "key 'sum_rule' field " + ("'b' is 1000000.0" if damage == "huge_overhead" else "'a' is 0.0")
    with pytest.raises(ValueError) as err:
        KernelCostModel.load(copy)
    assert expect in str(err.value) and "\n" not in str(err.value)
