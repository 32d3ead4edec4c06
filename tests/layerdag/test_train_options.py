"""Training/sampling options: cosine lr decay (resume exact after an interruption), the 'mode' last
reverse step, the node denoiser's set features and loading checkpoints without them."""

import dataclasses

import numpy as np
import pytest
import torch
from dag_fixtures import TINY, tiny_dags

import graphcost.layerdag.train as train_mod
from graphcost.layerdag.model import LayerDAG, LayerDAGConfig
from graphcost.layerdag.sample import sample_dags
from graphcost.layerdag.tokenise import tokenise
from graphcost.layerdag.train import LayerDAGTrainConfig, load_checkpoint, load_model, train_layerdag


def test_cosine_decay_resumes_exactly_after_interruption(tmp_path, monkeypatch):
    torch.set_num_threads(1)
    data = tiny_dags(12, 0)
    cfg = LayerDAGTrainConfig(device="cpu", epochs=3, batch_size=4, lr=1e-2, lr_decay="cosine")
    full, _ = train_layerdag(data, tmp_path / "a", cfg, progress=False, **TINY)
    # the decay really lowers the lr: the final optimiser lr is below the base lr
    assert load_checkpoint(tmp_path / "a")["optim"]["param_groups"][0]["lr"] < 0.2 * cfg.lr
    saves = []
    real_save = train_mod.atomic_torch_save

    def crash_after_first_epoch(obj, path):
        real_save(obj, path)
        saves.append(path)
        if path.name == train_mod.CHECKPOINT:
            raise KeyboardInterrupt  # killed right after the epoch-1 checkpoint

    monkeypatch.setattr(train_mod, "atomic_torch_save", crash_after_first_epoch)
    with pytest.raises(KeyboardInterrupt):
        train_layerdag(data, tmp_path / "b", cfg, progress=False, **TINY)
    monkeypatch.setattr(train_mod, "atomic_torch_save", real_save)
    assert load_checkpoint(tmp_path / "b")["epoch"] == 1
    resumed, hist = train_layerdag(data, tmp_path / "b", cfg, resume=True, progress=False, **TINY)
    assert [h["epoch"] for h in hist] == [1, 2, 3]
    for (k, p), q in zip(full.state_dict().items(), resumed.state_dict().values()):
        assert torch.allclose(p, q, atol=1e-6), k
    with pytest.raises(ValueError, match="lr_decay"):
        train_layerdag(data, tmp_path / "c", LayerDAGTrainConfig(device="cpu", epochs=1, lr_decay="step"), progress=False, **TINY)


def test_the_defaults_are_the_benchmarked_recipe_and_resume_keeps_its_schedule(tmp_path):
    """Issues 65/66: `dag train` with no options is the recipe BENCHMARKS.md measures (graphcost.layerdag.dag_recipe); a run
    resumed with another --lr-decay is refused (the schedule is a function of the step)."""
    from graphcost.layerdag import dag_recipe
    from graphcost.runs.checkpoint import CheckpointError

    cfg = LayerDAGTrainConfig()
    assert (cfg.lr, cfg.lr_decay) == (dag_recipe.LR, dag_recipe.LR_DECAY) == (3e-3, "cosine")
    assert dag_recipe.label_dropout_for(True) == 0.1 and dag_recipe.label_dropout_for(False) == 0.0
    for conditional, dropout, weight in ((True, 0.1, 0.75), (True, 0.0, 0.0), (False, 0.0, 0.0)):
        config = LayerDAGConfig(num_categories=3, max_layer_size=4, max_layers=4, max_nodes=16, conditional=conditional,
                                label_dropout=dropout)
        assert dag_recipe.guidance_for(config) == weight
    data = tiny_dags(8, 0)
    train_layerdag(data, tmp_path / "r", LayerDAGTrainConfig(device="cpu", epochs=1, batch_size=4), progress=False,
                   **TINY)
    with pytest.raises(CheckpointError, match="train_config.lr_decay.*'cosine', resumed with 'none'"):
        train_layerdag(data, tmp_path / "r", LayerDAGTrainConfig(device="cpu", epochs=2, batch_size=4, lr_decay="none"),
                       resume=True, progress=False, **TINY)


def test_mode_final_step_is_deterministic_and_differs_from_sampling(tmp_path):
    torch.set_num_threads(1)
    model, _ = train_layerdag(tiny_dags(16, 0), tmp_path / "r", LayerDAGTrainConfig(device="cpu", epochs=3, batch_size=8, lr=3e-3), progress=False, **TINY)
    lab = np.linspace(0.2, 0.9, 8)
    a = sample_dags(model, 8, labels=lab, seed=3, progress=False, final_step="mode")
    b = sample_dags(model, 8, labels=lab, seed=3, progress=False, final_step="mode")
    c = sample_dags(model, 8, labels=lab, seed=3, progress=False, final_step="sample")
    same = lambda x, y: all(np.array_equal(p.node_attr, q.node_attr) and np.array_equal(p.src, q.src)  # noqa: E731
                            and np.array_equal(p.dst, q.dst) for p, q in zip(x, y))  # fmt: skip
    assert same(a, b) and not same(a, c)
    for d in a:  # still DAGs with in-range attributes (tokenise raises on cycles / duplicate edges)
        tokenise(d)
        assert d.node_attr.min() >= 0 and d.node_attr.max() < 3
    with pytest.raises(ValueError, match="final_step"):
        sample_dags(model, 1, labels=[0.5], progress=False, final_step="argmax")


def test_node_denoiser_set_features():
    torch.manual_seed(0)
    cfg = LayerDAGConfig.sized("small", num_categories=2, max_layer_size=6, max_layers=4, max_nodes=20,
                               node_marginal=[0.5, 0.5])  # fmt: skip
    cfg = dataclasses.replace(cfg, **TINY)
    assert cfg.node_set_features
    nm = LayerDAG(cfg).eval().node_model
    # prefix: a root (label 0) and a layer of two nodes with labels (1, 1) vs (0, 1): only the
    # deepest-layer histogram differs (the context must differ); the root is not part of it
    edges = torch.tensor([[0, 0], [1, 2]])
    ctx = lambda attr: nm.graph_context(torch.tensor(attr), torch.tensor([0, 1, 1]), edges, torch.zeros(3, dtype=torch.long), 1,  # noqa: E731
                                        torch.zeros(1, 16))  # fmt: skip
    a, b = ctx([0, 1, 1]), ctx([0, 0, 1])
    assert a.shape == (1, 32) and not torch.allclose(a[:, 16:], b[:, 16:])
    assert torch.allclose(nm.front_proj(torch.tensor([[0.0, 2.0]]) / 4.0), a[:, 16:])  # histogram (0, 2)
    g, t, layer, cond = a, torch.tensor([2]), torch.tensor([1]), torch.zeros(1, 16)
    # the same first two tokens; (i) two padded slots become real nodes (|V| changes), (ii) the other
    # tokens' noisy labels change (histogram changes): the first two tokens' logits must change
    x = torch.zeros(1, 4, dtype=torch.long)
    small = nm(g, x, torch.tensor([[False, False, True, True]]), t, layer, cond)[0, :2]
    large = nm(g, x, torch.tensor([[False, False, False, False]]), t, layer, cond)[0, :2]
    other = nm(g, torch.tensor([[0, 0, 1, 1]]), torch.tensor([[False, False, False, False]]), t, layer, cond)[0, :2]
    assert not torch.allclose(small, large) and not torch.allclose(large, other)
    # permutation equivariant: permuting the set permutes the logits
    perm = torch.tensor([2, 0, 3, 1])
    xs = torch.tensor([[0, 0, 1, 1]])
    full = torch.zeros(1, 4, dtype=torch.bool)
    assert torch.allclose(nm(g, xs[:, perm], full, t, layer, cond), nm(g, xs, full, t, layer, cond)[:, perm], atol=1e-5)


def test_checkpoint_from_before_size_conditioning_loads(tmp_path):
    torch.set_num_threads(1)
    train_layerdag(tiny_dags(12, 0), tmp_path / "r", LayerDAGTrainConfig(device="cpu", epochs=1, batch_size=6), progress=False, node_set_features=False, **TINY)
    ckpt = load_checkpoint(tmp_path / "r")
    del ckpt["model_config"]["node_set_features"]  # a config written before the field existed
    torch.save(ckpt, tmp_path / "old.pt")
    model = load_model(tmp_path / "old.pt")
    assert not model.config.node_set_features and not hasattr(model.node_model, "hist_proj")
    assert len(sample_dags(model, 2, labels=[0.3, 0.6], seed=0, progress=False)) == 2

