"""`graphcost collect` end to end on a tiny program: valid npz + manifest, resumable."""

import json

import numpy as np

from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.io.tpugraphs_io import load_graph


def test_collect_writes_valid_npz_and_resumes(tmp_path):
    out = tmp_path / "col"
    args = ["collect", "--programs", "mlp-d1-w64-b8-fwd", "--configs", "4", "--rounds", "2", "--calls", "1",
            "--warmup", "1", "--limit", "1", "--processes", "2", "--max-load", "1000", "--out", str(out)]
    runner = CliRunner()
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    entry = manifest["graphs"]["mlp-d1-w64-b8-fwd"]
    assert manifest["collection"]["configs"] == 4 and "protocol" in manifest["environment"]
    path = out / entry["file"]
    graph = load_graph(path, validate=True)
    assert graph.kind == "layout" and graph.node_config_feat.shape[0] == 4
    with np.load(path) as z:  # the cross-process protocol's samples: label = median over the 2 processes
        samples = z["config_runtime_samples"]
        assert samples.shape == (4, 2) and (samples > 0).all()
        np.testing.assert_array_equal(z["config_runtime"], np.round(np.median(samples, axis=1)).astype(np.int64))
        assert sorted(set(z["config_search_mode"])) == ["default", "random"]
    assert len(entry["processes"]) == 2 and "noise_ratio" in entry and "flagged" in entry
    assert graph.node_config_feat.shape[1:] == (entry["num_configurable"], 18)
    assert len({tuple(r.ravel()) for r in graph.node_config_feat}) == 4  # distinct configurations
    mtime = path.stat().st_mtime_ns
    res2 = runner.invoke(app, args)  # resume: nothing left to do
    assert res2.exit_code == 0, res2.output
    assert path.stat().st_mtime_ns == mtime
    # a resume with different parameters is refused with a clear message
    res3 = runner.invoke(app, args[:4] + ["5"] + args[5:])
    assert res3.exit_code == 1 and "collection" in res3.output


def test_collect_bad_options_are_one_line_errors(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["collect", "--backend", "spark", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--backend must be 'local' or 'ray'" in res.output
    res = runner.invoke(app, ["collect", "--measure-core", "4096", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--measure-core 4096" in res.output
    res = runner.invoke(app, ["collect", "--repeat", "--out", str(tmp_path / "empty")])
    assert res.exit_code == 1 and "no collection here to repeat" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["collect", "--repeat", "--backend", "ray", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--repeat runs on the local backend only" in res.output
