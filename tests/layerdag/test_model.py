"""Encoder equivariance, a tiny LayerDAG that trains, samples valid DAGs and resumes exactly."""

import numpy as np
import pytest
import torch
from dag_fixtures import TINY, random_dag, tiny_dags

from graphcost.layerdag.denoising_schedule import LinearSchedule
from graphcost.layerdag.encoder import DAGEncoder
from graphcost.layerdag.sample import sample_dags
from graphcost.layerdag.tokenise import tokenise
from graphcost.layerdag.train import LayerDAGTrainConfig, load_model, train_layerdag

STEADY = "none"  # resume tests extend --epochs, which a cosine schedule (the recipe's default) depends on


def test_encoder_permutation_equivariant():
    torch.manual_seed(0)
    enc = DAGEncoder(num_categories=5, dim=16, num_layers=3).eval()
    dag = random_dag(np.random.default_rng(1), 12, p=0.3, shuffle=False)
    attr, depth = torch.from_numpy(dag.node_attr), torch.from_numpy(tokenise(dag).layer)
    ei = torch.stack([torch.from_numpy(dag.src), torch.from_numpy(dag.dst)])
    batch = torch.zeros(12, dtype=torch.long)
    cond = torch.randn(1, 16)
    h, g = enc(attr, depth, ei, batch, 1, cond=cond)
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(3))  # new node i = old perm[i]
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(12)
    h2, g2 = enc(attr[perm], depth[perm], inv[ei], batch, 1, cond=cond)
    assert torch.allclose(h2, h[perm], atol=1e-5)
    assert torch.allclose(g2, g, atol=1e-5)
    # direction matters: reversing edges changes the states
    h3, _ = enc(attr, depth, ei.flip(0), batch, 1, cond=cond)
    assert not torch.allclose(h3, h, atol=1e-3)


def _is_valid(dag):
    lay = tokenise(dag)  # raises on cycles / self-loops / duplicates
    has_pred = np.zeros(dag.num_nodes, bool)
    has_pred[dag.dst] = True
    return lay is not None and all(has_pred[lay.layer > 0])


def test_tiny_model_trains_and_samples_valid_dags(tmp_path):
    torch.set_num_threads(1)
    data = tiny_dags(24, 0, max_nodes=10)
    model, hist = train_layerdag(data, tmp_path / "run", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=8, batch_size=8, lr=3e-3),
                                 progress=False, **TINY)  # fmt: skip
    losses = [h["train_loss"] for h in hist]
    assert losses[-1] < losses[0] - 0.3, losses
    labels = [0.2, 0.8, 0.5, 0.9, 0.1, 0.3]
    dags = sample_dags(model, 6, labels=labels, seed=1, progress=False)
    assert len(dags) == 6
    for d in dags:
        assert d.num_nodes >= 1 and d.num_nodes <= model.config.max_nodes
        assert d.node_attr.min() >= 0 and d.node_attr.max() < 3
        assert _is_valid(d)
    assert [d.label for d in dags] == labels
    # the layer-index schedule samples from the same model; reloading gives the same samples
    sched = LinearSchedule(t_min=1, t_max=model.config.T_node, l_max=model.config.max_layers)
    a = sample_dags(model, 3, labels=labels[:3], schedule=sched, seed=5, progress=False)
    b = sample_dags(load_model(tmp_path / "run"), 3, labels=labels[:3], schedule=sched, seed=5, progress=False)
    for x, y in zip(a, b):
        assert np.array_equal(x.node_attr, y.node_attr) and np.array_equal(x.src, y.src)
        assert _is_valid(x)
    with pytest.raises(ValueError, match="label"):
        sample_dags(model, 2, progress=False)


def test_checkpoint_resume_matches_uninterrupted(tmp_path):
    torch.set_num_threads(1)
    data = tiny_dags(12, 4, max_nodes=10)
    cfg = LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=3, batch_size=6)
    full, _ = train_layerdag(data, tmp_path / "a", cfg, progress=False, **TINY)
    train_layerdag(data, tmp_path / "b", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, batch_size=6), progress=False, **TINY)
    resumed, hist = train_layerdag(data, tmp_path / "b", cfg, resume=True, progress=False, **TINY)
    assert [h["epoch"] for h in hist] == [1, 2, 3]
    for (k, p), q in zip(full.state_dict().items(), resumed.state_dict().values()):
        assert torch.allclose(p, q, atol=1e-6), k


def test_corrupt_checkpoint_is_a_clear_error(tmp_path):
    bad = tmp_path / "checkpoint.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="checkpoint"):
        load_model(tmp_path)
