"""The edge denoiser's and the layer-size head's set statistics (LayerDAG extensions, see
graphcost.layerdag.denoisers / layer_size), old checkpoints without them, and --diffusion-steps."""

import dataclasses

import pytest
import torch
from dag_fixtures import TINY, tiny_dags
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.layerdag.denoisers import EdgeDenoiser
from graphcost.layerdag.encoder import frontier_histogram
from graphcost.layerdag.model import LayerDAG, LayerDAGConfig
from graphcost.layerdag.sample import sample_dags
from graphcost.layerdag.train import LayerDAGTrainConfig, load_checkpoint, load_model, train_layerdag


def test_predecessor_set_stats_by_hand():
    # prefix: 0 (attr 0, layer 0), 1 (attr 1, layer 1), 2 (attr 0, layer 1); new node 3 (layer 2)
    # candidates (0,3) on, (1,3) on, (2,3) off
    ed = EdgeDenoiser(num_categories=2, dim=8, num_mpnn=1, set_features=True)
    attr, depth = torch.tensor([0, 1, 0, 1]), torch.tensor([0, 1, 1, 2])
    src, dst, state = torch.tensor([0, 1, 2]), torch.tensor([3, 3, 3]), torch.tensor([1, 1, 0])
    others, same, prev, gap = ed.predecessor_set_stats(attr, depth, src, dst, state)
    assert others.tolist() == [1, 1, 2]  # other present candidates into 3
    assert same.tolist() == [0, 0, 1]  # ... with the candidate's attribute (2 sees node 0's attr 0)
    assert prev.tolist() == [1, 0, 1]  # ... from layer 1 (node 1)
    assert gap.tolist() == [1, 0, 0]  # depth(v) - depth(u) - 1


def test_predecessor_set_stats_cap_and_two_targets():
    ed = EdgeDenoiser(num_categories=3, dim=8, num_mpnn=1, set_features=True)
    k = EdgeDenoiser.MAX_COUNT + 3  # more present candidates than the cap
    attr = torch.cat([torch.zeros(k, dtype=torch.long), torch.tensor([2, 2])])
    depth = torch.cat([torch.zeros(k, dtype=torch.long), torch.tensor([1, 1])])
    src = torch.cat([torch.arange(k), torch.arange(k)])
    dst = torch.cat([torch.full((k,), k), torch.full((k,), k + 1)])
    state = torch.cat([torch.ones(k, dtype=torch.long), torch.zeros(k, dtype=torch.long)])  # node k: all on; k+1: none
    others, same, prev, gap = ed.predecessor_set_stats(attr, depth, src, dst, state)
    assert (others[:k] == EdgeDenoiser.MAX_COUNT).all() and (others[k:] == 0).all()
    assert (same[:k] == EdgeDenoiser.MAX_COUNT).all() and (prev[k:] == 0).all() and (gap == 0).all()


def test_edge_logits_see_the_other_candidates():
    # the graph (edge_index) is held fixed and only candidate 1's noisy state flips: without the
    # statistics candidate 2's logit cannot change, with them it must
    torch.manual_seed(0)
    attr, depth = torch.tensor([0, 1, 0, 1]), torch.tensor([0, 1, 1, 2])
    src, dst = torch.tensor([0, 1, 2]), torch.tensor([3, 3, 3])
    args = (attr, depth, torch.tensor([0, 0, 0, 1]), torch.tensor([[0, 0], [1, 2]]), torch.zeros(4, dtype=torch.long), 1,
            torch.tensor([5]), torch.zeros(1, 8), src, dst, torch.zeros(3, dtype=torch.long))  # fmt: skip
    for stats in (False, True):
        ed = EdgeDenoiser(num_categories=2, dim=8, num_mpnn=1, set_features=stats).eval()
        with torch.no_grad():
            off, on = ed(*args, torch.tensor([1, 0, 0])), ed(*args, torch.tensor([1, 1, 0]))
        assert torch.isclose(off[2], on[2]).item() != stats


def test_frontier_histogram():
    attr, depth = torch.tensor([0, 1, 1, 0, 2]), torch.tensor([0, 1, 1, 0, 0])
    batch = torch.tensor([0, 0, 0, 1, 1])  # graph 0: deepest layer 1 = nodes 1, 2; graph 1: layer 0 = nodes 3, 4
    assert frontier_histogram(attr, depth, batch, 2, 3).tolist() == [[0, 2, 0], [1, 0, 1]]


def test_size_head_sees_the_frontier():
    torch.manual_seed(0)
    cfg = dataclasses.replace(LayerDAGConfig.sized("small", num_categories=2, max_layer_size=6, max_layers=4, max_nodes=20,
                                                   node_marginal=[0.5, 0.5]), **TINY)  # fmt: skip
    assert cfg.size_set_features and cfg.edge_set_features
    sm = LayerDAG(cfg).eval().size_model
    edges, batch = torch.tensor([[0, 0], [1, 2]]), torch.zeros(3, dtype=torch.long)
    run = lambda attr: sm(torch.tensor(attr), torch.tensor([0, 1, 1]), edges, batch, 1, torch.tensor([2]), torch.zeros(1, 16))
    assert run([0, 1, 1]).shape == (1, 7) and not torch.allclose(run([0, 1, 1]), run([0, 0, 1]))


def test_checkpoint_without_edge_and_size_statistics_loads(tmp_path):
    torch.set_num_threads(1)
    train_layerdag(tiny_dags(12, 0), tmp_path / "r", LayerDAGTrainConfig(device="cpu", epochs=1, batch_size=6), progress=False,
                   edge_set_features=False, size_set_features=False, **TINY)  # fmt: skip
    ckpt = load_checkpoint(tmp_path / "r")
    for key in ("edge_set_features", "size_set_features"):  # a config written before the fields existed
        del ckpt["model_config"][key]
    torch.save(ckpt, tmp_path / "old.pt")
    model = load_model(tmp_path / "old.pt")
    assert not model.config.edge_set_features and not hasattr(model.edge_model, "gap_emb")
    assert not model.config.size_set_features and not hasattr(model.size_model, "front_proj")
    assert len(sample_dags(model, 2, labels=[0.3, 0.6], seed=0, progress=False)) == 2


@pytest.mark.parametrize("steps", [6])
def test_cli_diffusion_steps(tmp_path, steps):
    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["dag", "train", "--dataset", "lp", "--num-graphs", "12", "--epochs", "1", "--threads", "1",
                                 "--diffusion-steps", str(steps), "--out", str(run)])  # fmt: skip
    assert r.exit_code == 0, r.output
    cfg = load_model(run).config
    assert (cfg.T_node, cfg.T_edge) == (steps, steps)
    r = CliRunner().invoke(app, ["dag", "train", "--dataset", "lp", "--num-graphs", "12", "--diffusion-steps", "0",
                                 "--out", str(tmp_path / "r0")])  # fmt: skip
    assert r.exit_code == 2 and "--diffusion-steps" in r.output
