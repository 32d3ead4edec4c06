"""`graphcost.fit` is `graphcost train` from Python: the same run (graph model, trees, blend, run.json)
and the same test tau on the shipped real CPU layout data at the same seed."""

import json

import pytest
import torch
from train_stubs import run_cli

import graphcost
from graphcost.train import recipe

SMALL = {"hidden": 8, "opcode_dim": 2, "layout_dim": 2, "num_blocks": 1}  # the recipe's TGraph, narrower


def test_fit_matches_graphcost_train_on_the_shipped_data(tmp_path):
    torch.set_num_threads(1)
    opts = [a for k, v in SMALL.items() for a in ("--model-opt", f"{k}={v}")]
    cli_run, lib_run = tmp_path / "cli", tmp_path / "lib"
    run_cli("train", *opts, "--epochs", "2", "--max-graphs", "4", "--seed", "3", "--out", cli_run,
            "--no-progress", "--device", "cpu", "--threads", "1")
    lines: list[str] = []
    spec = graphcost.RunSpec(config=graphcost.recipe_config(
        epochs=2, seed=3, device="cpu", progress=False, model_config={**recipe.MODEL_CONFIG, **SMALL}), max_graphs=4)
    result = graphcost.fit(spec, lib_run, report=lines.append)
    assert result.run_dir == lib_run and result.kind == "layout" and result.metric == "kendall_tau"
    assert result.blend is not None and (lib_run / "blend.json").is_file()  # trees and blend, as the CLI fits
    assert any(line.startswith("blend:") for line in lines) and f"run: {lib_run}" in lines
    cli_info, lib_info = (json.loads((r / "run.json").read_text()) for r in (cli_run, lib_run))
    assert lib_info == cli_info  # the same recorded run: data, settings, trees
    taus = []
    for run in (cli_run, lib_run):
        report = tmp_path / f"{run.name}.json"
        run_cli("evaluate", run, "--json", report, "--device", "cpu", "--threads", "1")
        taus.append(json.loads(report.read_text())["aggregate"]["kendall_tau"])
    assert taus[0] == taus[1], taus


def test_fit_refuses_a_model_for_another_kind_in_one_line(tmp_path):
    spec = graphcost.RunSpec(config=graphcost.recipe_config(model="tile-mlp", model_config={}), max_graphs=2)
    try:
        graphcost.fit(spec, tmp_path / "run")
    except ValueError as exc:
        assert str(exc).startswith("model 'tile-mlp' supports tile graphs, not the layout graphs of "), exc
    else:
        raise AssertionError("a tile model trained on layout data")
    assert not (tmp_path / "run").exists()  # nothing written
    with pytest.raises(ValueError, match="^folds must be 0 .* or at least 2 .*got 1$"):
        graphcost.fit(graphcost.RunSpec(folds=1), tmp_path / "run")


def test_fit_refuses_outputs_inside_the_data_or_on_proc_before_reading_anything(tmp_path):
    """Issue 65: the library verb owns its output guards: a cache or run inside the training data, a run on /proc."""
    import shutil

    from graphcost.datasets import shipped_dataset_dir
    from graphcost.guards.outputs import OutputPathError

    data = tmp_path / "data"
    shutil.copytree(shipped_dataset_dir("cpu_layout"), data)
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    spec = graphcost.RunSpec(data_dir=str(data), max_graphs=2)
    for kwargs, needle in (({"cache_dir": data / "train"}, "cache_dir"), ({"out": data / "train" / "inner"}, "out")):
        with pytest.raises(OutputPathError, match=f"^{needle} .*inside the input data"):
            graphcost.fit(spec, **{"out": tmp_path / "run", **kwargs})
    with pytest.raises(OutputPathError, match="^out /proc/x: lies on a virtual file system"):
        graphcost.fit(spec, "/proc/x")
    with pytest.raises(OutputPathError, match="^out /dev/null: is a character device"):
        graphcost.fit(spec, "/dev/null", overwrite=True)
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before and not (tmp_path / "run").exists()


def test_fit_refuses_a_model_too_large_for_memory_before_building_it(tmp_path):
    """Issue 65: model_config={"hidden": 10**9} from the API tried to allocate 1 TB; it is checked on the meta device."""
    from graphcost.guards.bounds import ArgumentError

    huge = graphcost.RunSpec(config=graphcost.recipe_config(model_config={**recipe.MODEL_CONFIG, "hidden": 10**6}),
                             max_graphs=2)
    with pytest.raises(ArgumentError, match=r"^model_config: model 'tgraph' has .* parameters, .* above max_memory_gb 8$"):
        graphcost.fit(huge, tmp_path / "run")
    zero = graphcost.RunSpec(config=graphcost.recipe_config(model_config={**recipe.MODEL_CONFIG, "hidden": 0}),
                             max_graphs=2)
    with pytest.raises(ArgumentError, match=r"^model_config hidden=0: must be >= 1$"):
        graphcost.fit(zero, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_validation_graph_with_one_configuration_is_left_out_and_said(tmp_path):
    """Issue 65: the only validation graph had one configuration: "best valid kendall_tau -inf" and a UserWarning
    per epoch. Now it is left out with a line, and the lowest training loss picks the checkpoint."""
    import warnings

    import numpy as np

    from graphcost.data.synth.collection import write_synthetic_collection

    base = write_synthetic_collection(tmp_path / "data", "tile:xla", num_graphs=10, progress=False)
    (only,) = sorted((base / "valid").glob("*.npz"))
    with np.load(only) as z:
        arrays = {k: z[k][:1] if k.startswith("config_") else z[k] for k in z.files}
    np.savez(only, **arrays)
    lines: list[str] = []
    spec = graphcost.RunSpec(data_dir=str(tmp_path / "data"), collection="tile:xla",
                             config=graphcost.recipe_config(epochs=1, device="cpu", progress=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on the way
        result = graphcost.fit(spec, tmp_path / "run", report=lines.append)
    assert any(line.startswith("valid: 1 graph(s) left out") and only.name in line for line in lines), lines
    assert np.isfinite(result.best_score) and any("lowest train loss" in line for line in lines)


def test_run_spec_round_trips_through_run_json(tmp_path):
    spec = graphcost.RunSpec(config=graphcost.recipe_config(epochs=3, seed=7, batch_configs=32), data_dir="cpu_flags",
                             collection="tile:xla", max_graphs=5, folds=0, trees=False)
    info = spec.to_json("tile", "cpu_flags", ["xla_cpu_enable_fast_math"])
    assert info["flag_columns"] == ["xla_cpu_enable_fast_math"] and info["trees"] is False
    back = graphcost.RunSpec.from_json(info, tmp_path, device="cpu")
    assert back.to_json("tile", "cpu_flags") == {**{k: v for k, v in info.items() if k != "flag_columns"},
                                                  "config": {**info["config"], "device": "cpu"}}
    assert back.recorded_in == tmp_path / "run.json"  # data_dir came from this run.json


def test_a_flag_run_selects_checkpoints_by_tile_score_and_its_blend_by_kendall_tau(tmp_path):
    """The tile score chooses the flag model's epochs (TGraph §2.5.2), but it barely moves between blend
    weights on flag graphs of a few dozen configurations: the blend is chosen by Kendall τ
    (`graphcost.inference.blend.BLEND_METRIC`)."""
    torch.set_num_threads(1)
    spec = graphcost.RunSpec(config=graphcost.recipe_config(model="tile-mlp", model_config={}, epochs=1, seed=0,
                                                            device="cpu", progress=False),
                             data_dir="cpu_flags", max_graphs=6)
    result = graphcost.fit(spec, tmp_path / "run", report=lambda line: None)
    assert result.kind == "tile" and result.metric == "tile_score"
    blend = json.loads((tmp_path / "run" / "blend.json").read_text())
    assert blend["metric"] == "kendall_tau" and set(blend["valid"]) >= {"blend", "graph model", "trees"}
