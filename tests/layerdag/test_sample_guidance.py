"""Classifier-free guidance for conditional LayerDAG (label dropout in training, guided sampling)."""

from types import SimpleNamespace

import pytest
import torch
from dag_fixtures import TINY
from test_train_best import _conditional_data
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.layerdag.batch import build_batch, prepare
from graphcost.layerdag.experiment import evaluate_model
from graphcost.layerdag.model import MODULES
from graphcost.layerdag.sample import _guided, sample_dags
from graphcost.layerdag.train import LayerDAGTrainConfig, build_model, train_layerdag


def _keys(dags):
    return [(d.node_attr.tolist(), d.src.tolist(), d.dst.tolist()) for d in dags]


def test_guided_logits_formula_and_single_call_at_zero():
    calls = []

    def net(x, cond):
        calls.append(cond)
        return x + (torch.tensor([0.0, 2.0]) if cond == "y" else torch.tensor([1.0, -1.0]))

    cpu = SimpleNamespace(device=torch.device("cpu"))
    x = torch.tensor([1.0, 1.0])
    assert torch.equal(_guided(cpu, 0.0, net, (x, "y"), (x, None)), torch.tensor([1.0, 3.0])) and calls == ["y"]
    # l(y) + w (l(y) - l(null)) with l(y) = [1, 3], l(null) = [2, 0], w = 2: [1 + 2(-1), 3 + 2(3)]
    assert torch.equal(_guided(cpu, 2.0, net, (x, "y"), (x, None)), torch.tensor([-1.0, 9.0]))


def _losses(model, graphs, labels, null=False):
    """Teacher-forced losses with fixed noise; `null`: every graph gets the null (zero) label embedding."""
    model.config.conditional = not null  # an unconditional model's cond() is the null embedding
    try:
        with torch.no_grad():
            out = model.loss(build_batch(graphs), labels, torch.Generator().manual_seed(0))
    finally:
        model.config.conditional = True
    return {k: float(v) for k, v in out.items()}


def test_label_dropout_trains_the_null_label_only_in_training_mode():
    data = _conditional_data(8, 0)
    graphs = [prepare(d) for d in data]
    labels = torch.tensor([d.label for d in data])
    model, _ = build_model(data, label_dropout=1 - 1e-9, **TINY)  # every label dropped (p(keep) ~ 1e-9)
    model.train()
    dropped, null = _losses(model, graphs, labels), _losses(model, graphs, labels, null=True)
    assert dropped == null  # training saw the null label only
    model.eval()  # validation: never dropped, so the label matters again
    assert _losses(model, graphs, labels) != _losses(model, graphs, labels, null=True)
    model.config.label_dropout = 0.0  # same weights, no dropout: labels used in training too
    model.train()
    assert _losses(model, graphs, labels) != null


def test_label_dropout_rejected_without_labels_or_out_of_range():
    data = _conditional_data(4, 0)
    with pytest.raises(ValueError, match=r"label_dropout must be in \[0, 1\)"):
        build_model(data, label_dropout=1.0, **TINY)
    for d in data:
        d.label = None
    with pytest.raises(ValueError, match="needs labelled training graphs"):
        build_model(data, label_dropout=0.1, **TINY)


@pytest.fixture(scope="module")
def guided_model(tmp_path_factory):
    torch.set_num_threads(1)
    run = tmp_path_factory.mktemp("cfg")
    model, _ = train_layerdag(_conditional_data(12, 0), run, LayerDAGTrainConfig(device="cpu", epochs=2, batch_size=4, lr=1e-2),
                              progress=False, label_dropout=0.2, **TINY)  # fmt: skip
    return model.eval(), run


def test_guidance_changes_samples_deterministically_and_zero_is_the_plain_sampler(guided_model):
    model, _ = guided_model
    labels = [0.2, 0.9, 0.5, 0.7]
    plain = sample_dags(model, 4, labels=labels, seed=3, progress=False)
    zero = sample_dags(model, 4, labels=labels, seed=3, progress=False, guidance=0.0)
    assert _keys(plain) == _keys(zero)
    a = sample_dags(model, 4, labels=labels, seed=3, progress=False, guidance=4.0)
    b = sample_dags(model, 4, labels=labels, seed=3, progress=False, guidance=4.0)
    assert _keys(a) == _keys(b)
    assert _keys(a) != _keys(plain)


def test_guidance_is_a_no_op_when_the_label_embedding_is_the_null_one(guided_model):
    # zero the last layer of each module's label MLP: l(y) == l(null), so l(y) + w (l(y) - l(null)) == l(y)
    model, _ = guided_model
    model = type(model)(model.config)
    model.load_state_dict(guided_model[0].state_dict())
    with torch.no_grad():
        for m in MODULES:
            last = getattr(model, f"{m}_label_emb").mlp[-1]
            last.weight.zero_()
            last.bias.zero_()
    labels = [0.2, 0.9, 0.5]
    plain = sample_dags(model, 3, labels=labels, seed=1, progress=False)
    guided = sample_dags(model, 3, labels=labels, seed=1, progress=False, guidance=3.0)
    assert _keys(plain) == _keys(guided)


def test_guidance_refused_when_the_model_cannot_honour_it(guided_model):
    model, _ = guided_model
    with pytest.raises(ValueError, match="guidance must be >= 0"):
        sample_dags(model, 1, labels=[0.5], guidance=-1.0, progress=False)
    plain, _ = build_model(_conditional_data(6, 1), **TINY)
    with pytest.raises(ValueError, match="trained without label dropout"):
        sample_dags(plain, 1, labels=[0.5], guidance=1.0, progress=False)
    unlabelled = _conditional_data(6, 2)
    for d in unlabelled:
        d.label = None
    lp_like, _ = build_model(unlabelled, **TINY)
    splits = {"train": unlabelled, "valid": unlabelled, "test": unlabelled}
    with pytest.raises(ValueError, match="needs a conditional LayerDAG"):  # not silently ignored
        evaluate_model(lp_like, splits, "toy", num_samples=1, progress=False, guidance=1.0)


def test_cli_label_dropout_and_guidance(tmp_path, guided_model):
    _, run = guided_model
    out = tmp_path / "g.npz"
    r = CliRunner().invoke(app, ["dag", "sample", str(run), "-n", "2", "--label", "0.5", "--guidance", "1.5", "--tmax", "2",
                                 "--threads", "1", "--device", "cpu", "--out", str(out)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert out.is_file()
    r = CliRunner().invoke(app, ["dag", "sample", str(run), "-n", "2", "--label", "0.5", "--guidance", "-2", "--out", str(tmp_path / "g2.npz")])
    assert r.exit_code != 0 and "--guidance" in r.output and ">= 0" in r.output
    lp = tmp_path / "lp"
    r = CliRunner().invoke(app, ["dag", "train", "--dataset", "lp", "--num-graphs", "12", "--epochs", "1", "--threads", "1",
                                 "--label-dropout", "0.1", "--device", "cpu", "--out", str(lp)])  # fmt: skip
    assert r.exit_code != 0 and "label" in r.output and "Traceback" not in r.output
