"""best.pt model selection: written when the validation loss improves, preferred by load_model,
exact under resume; whole-model ('total') and per-module ('module', the default) selection."""

import numpy as np
import torch
from dag_fixtures import TINY, random_dag, tiny_dags

from graphcost.layerdag.train import BEST, CHECKPOINT, LayerDAGTrainConfig, load_checkpoint, load_model, train_layerdag

STEADY = "none"  # resume tests extend --epochs, which a cosine schedule (the recipe's default) depends on


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_best_checkpoint_tracks_lowest_validation_loss_and_resumes_exactly(tmp_path):
    torch.set_num_threads(1)
    train, valid = tiny_dags(16, 0), tiny_dags(6, 1)
    # a high learning rate so the validation loss does not fall monotonically
    cfg = LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=6, batch_size=4, lr=3e-2, select="total")
    _, hist = train_layerdag(train, tmp_path / "full", cfg, valid_dags=valid, progress=False, **TINY)
    best = load_checkpoint(tmp_path / "full" / BEST)
    vl = [h["valid_loss"] for h in hist]
    assert best["epoch"] == int(np.argmin(vl)) + 1 and abs(best["valid_loss"] - min(vl)) < 1e-9
    last = load_checkpoint(tmp_path / "full")
    assert last["epoch"] == 6 and best["epoch"] < 6  # this seed/lr: the loss rises after its minimum
    # load_model prefers best.pt; last=True gives checkpoint.pt
    assert _same_weights(load_model(tmp_path / "full").state_dict(), best["model"])
    assert _same_weights(load_model(tmp_path / "full", last=True).state_dict(), last["model"])
    # interrupted after 3 epochs and resumed: same best.pt and same final checkpoint
    cfg3 = LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=3, batch_size=4, lr=3e-2, select="total")
    train_layerdag(train, tmp_path / "res", cfg3, valid_dags=valid, progress=False, **TINY)
    _, hist2 = train_layerdag(train, tmp_path / "res", cfg, valid_dags=valid, resume=True, progress=False, **TINY)
    assert [h["valid_loss"] for h in hist2] == vl
    best2 = load_checkpoint(tmp_path / "res" / BEST)
    assert best2["epoch"] == best["epoch"] and _same_weights(best2["model"], best["model"])
    assert _same_weights(load_checkpoint(tmp_path / "res")["model"], last["model"])


def test_no_valid_split_no_best_and_fresh_run_drops_stale_best(tmp_path):
    torch.set_num_threads(1)
    train, valid = tiny_dags(8, 0), tiny_dags(4, 1)
    run = tmp_path / "run"
    train_layerdag(train, run, LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, batch_size=4), valid_dags=valid, progress=False, **TINY)
    assert (run / BEST).is_file()
    # retrain from scratch without a validation split: the old best.pt must not shadow the new weights
    train_layerdag(train, run, LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=1, batch_size=4, seed=3), progress=False, **TINY)
    assert not (run / BEST).exists() and (run / CHECKPOINT).is_file()
    assert _same_weights(load_model(run).state_dict(), load_checkpoint(run)["model"])


def test_zero_epochs_or_batch_size_rejected(tmp_path):
    """Refused when the settings are built (issue 65), before any training directory is touched."""
    import pytest

    from graphcost.guards.bounds import ArgumentError

    with pytest.raises(ArgumentError, match="^epochs must be an integer >= 1, got 0"):
        LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=0)
    with pytest.raises(ArgumentError, match="^batch_size must be an integer from 1 to"):
        LayerDAGTrainConfig(batch_size=0)
    assert not any(tmp_path.iterdir())


def _conditional_data(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        d = random_dag(rng, int(rng.integers(3, 9)), p=0.35, num_categories=3)
        d.label = float(rng.uniform(1.0, 10.0))
        out.append(d)
    return out


def _module_part(state: dict, module: str) -> dict:
    from graphcost.layerdag.model import LayerDAG

    return {k: v for k, v in state.items() if LayerDAG.module_of(k) == module}


def test_per_module_selection_keeps_each_modules_best_epoch_and_resumes_exactly(tmp_path):
    from graphcost.layerdag.model import MODULES

    torch.set_num_threads(1)
    train, valid = _conditional_data(16, 0), _conditional_data(6, 1)
    cfg = LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=6, batch_size=4, lr=3e-2)  # select='module' is the default
    assert cfg.select == "module"
    per_epoch = {}  # one epoch at a time (resume is exact) to keep every epoch's weights
    for e in range(1, cfg.epochs + 1):
        step = LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=e, batch_size=4, lr=3e-2)
        _, hist = train_layerdag(train, tmp_path / "full", step, valid_dags=valid, resume=True, progress=False, **TINY)
        per_epoch[e] = load_checkpoint(tmp_path / "full")["model"]
    best = load_checkpoint(tmp_path / "full" / BEST)
    epochs = {m: int(np.argmin([h[f"valid_{m}"] for h in hist])) + 1 for m in MODULES}
    assert best["module_epochs"] == epochs
    assert len(set(epochs.values())) > 1  # this seed/lr: the modules peak at different epochs
    # each module's weights in best.pt are exactly that module's weights at its own best epoch
    for m, e in epochs.items():
        assert _same_weights(_module_part(best["model"], m), _module_part(per_epoch[e], m))
    # the merged weights load into a working model that samples
    from graphcost.layerdag.sample import sample_dags

    model = load_model(tmp_path / "full")
    assert _same_weights(model.state_dict(), best["model"])
    assert len(sample_dags(model, 2, labels=[2.0, 5.0], progress=False)) == 2
    # one uninterrupted run gives the same selection; so does one interrupted after 2 epochs and resumed
    train_layerdag(train, tmp_path / "one", cfg, valid_dags=valid, progress=False, **TINY)
    best1 = load_checkpoint(tmp_path / "one" / BEST)
    assert best1["module_epochs"] == epochs and _same_weights(best1["model"], best["model"])
    train_layerdag(train, tmp_path / "res", LayerDAGTrainConfig(device="cpu", lr_decay=STEADY, epochs=2, batch_size=4, lr=3e-2), valid_dags=valid,
                   progress=False, **TINY)  # fmt: skip
    train_layerdag(train, tmp_path / "res", cfg, valid_dags=valid, resume=True, progress=False, **TINY)
    best2 = load_checkpoint(tmp_path / "res" / BEST)
    assert best2["module_epochs"] == epochs and _same_weights(best2["model"], best["model"])


def test_legacy_shared_label_embedding_checkpoint_loads():
    from graphcost.layerdag.model import LayerDAG, LayerDAGConfig

    cfg = LayerDAGConfig(num_categories=3, max_layer_size=4, max_layers=4, max_nodes=10, node_marginal=[0.3, 0.3, 0.4],
                         conditional=True, **TINY)  # fmt: skip
    torch.manual_seed(0)
    model = LayerDAG(cfg)
    state = {k: v for k, v in model.state_dict().items() if "_label_emb." not in k}
    shared = {k.replace("size_label_emb.", "label_emb."): v for k, v in model.state_dict().items() if k.startswith("size_label_emb.")}
    state.update(shared)  # the old layout: one shared label_emb
    fresh = LayerDAG(cfg)
    fresh.load_state_dict(state)
    lab = torch.tensor([1.0, 3.0])
    for m in MODULES_NAMES:
        assert torch.equal(fresh.cond(lab, 2, m), model.cond(lab, 2, "size"))


MODULES_NAMES = ("size", "node", "edge")
