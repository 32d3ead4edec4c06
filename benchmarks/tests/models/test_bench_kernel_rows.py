"""The kernel rows of bench_real.json: benchmarks/models/bench_kernels.py puts its ``kernels`` and
``roofline`` rows into a protocol in bench_real's row shape, and a later bench_real run of that protocol keeps them."""

from __future__ import annotations

import json


def _kernel_run() -> dict:
    row = {"kendall_tau": 0.45, "kendall_tau_std": 0.01, "seeds": 3, "programs": 10, "by_family": {}}
    return {"data": "/tmp/x/cpu_zoo_kernels_flags_cpu", "programs": 10, "families": 3, "kernels+flags": row,
            "kernels": {**row, "kendall_tau": 0.43}, "roofline": {**row, "kendall_tau": 0.16},
            "lightgbm": {**row, "kendall_tau": 0.44}, "count": {**row, "kendall_tau": 0.28}}


def test_rows_go_into_the_protocol_in_its_shape_and_survive_a_rerun(tmp_path):
    import bench_kernels as bk
    import bench_real as br

    results = tmp_path / "bench_real.json"
    results.write_text(json.dumps({"results": {"lofo_flags": {"default": {"kendall_tau": 0.47}, "meta": {"data": "d"}}}}))
    bk.put_into(_kernel_run(), results, "lofo_flags", tmp_path / "lofo_flags.json")
    proto = json.loads(results.read_text())["results"]["lofo_flags"]
    assert proto["default"] == {"kendall_tau": 0.47}
    for name, tau in (("kernels", 0.45), ("roofline", 0.16)):
        row = proto[name]
        assert (row["kendall_tau"], row["kendall_tau_std"], row["seeds"]) == (tau, 0.01, 3)
        assert row["model"] and "cpu_zoo_kernels_flags_cpu: 10 programs of 3 families" in row["data"]
        assert row["same_data_rows"] == {"kernels": 0.43, "kernels+flags": 0.45, "lightgbm": 0.44, "count": 0.28}
    rerun = {"default": {"kendall_tau": 0.5}, "meta": {"data": "other"}}  # bench_real re-runs the protocol
    kept = br.keep_earlier_rows(proto, rerun)
    assert kept["default"] == {"kendall_tau": 0.5} and kept["kernels"] == proto["kernels"]
    assert kept["roofline"] == proto["roofline"]


def test_the_kernels_row_is_the_blend_that_scored_higher_on_the_validation_families(tmp_path):
    import bench_kernels as bk

    run = _kernel_run()
    run["kernels+copies"] = {**run["kernels+flags"], "kendall_tau": 0.70}
    run["validation"] = {"w=0.5": 0.50, "w=1": 0.48}
    run["validation_copies"] = {"w=0.5": 0.49, "w=1": 0.48}  # lower on validation: not chosen, whatever the test says
    assert bk.kernels_row(run)[0] == "kernels+flags"
    run["validation_copies"]["w=0.75"] = 0.52
    assert bk.kernels_row(run)[0] == "kernels+copies"
    results = tmp_path / "bench_real.json"
    results.write_text(json.dumps({"results": {}}))
    bk.put_into(run, results, "lofo", tmp_path / "lofo.json")
    row = json.loads(results.read_text())["results"]["lofo"]["kernels"]
    assert row["kendall_tau"] == 0.70 and "copies" in row["model"]


def test_the_ceiling_comes_from_the_repeat_beside_the_collection(tmp_path):
    """bench_kernels' ``ceiling`` row: Kendall's τ between the collection's labels and its independent repeat's
    (the collection beside it named ``_repeat``), per program measured at the same configurations."""
    import numpy as np

    import bench_kernels as bk

    feat = np.arange(8, dtype=np.float32).reshape(4, 2)
    for root, labels in ((tmp_path / "col", {"a": [1, 2, 3, 4], "b": [1, 2, 3, 4]}),
                         (tmp_path / "col_repeat", {"a": [1, 2, 4, 3]})):
        (root / "train").mkdir(parents=True)
        for name, label in labels.items():
            np.savez(root / "train" / f"{name}.npz", config_feat=feat, config_runtime=np.asarray(label, np.int64))
        (root / "manifest.json").write_text(json.dumps({"graphs": {n: {"file": f"train/{n}.npz"} for n in labels}}))
    ceiling = bk.repeat_ceiling(tmp_path / "col")
    assert set(ceiling) == {"a"} and abs(ceiling["a"] - 4 / 6) < 1e-9  # 5 of 6 pairs agree: τ = (5 - 1) / 6
    assert bk.repeat_ceiling(tmp_path / "col_repeat") == {}


def test_the_kernels_row_is_the_blend_that_won_on_validation_even_with_a_nan_weight():
    """A weight with no finite validation figure (w=0 where a model is missing) must not decide the choice."""
    import bench_kernels as bk

    out = {"kernels+copies": {}, "validation": {"w=0": float("nan"), "w=1": 0.703},
           "validation_copies": {"w=0": 0.695, "w=0.5": 0.707}}
    assert bk.kernels_row(out) == bk.COPIES_ROW
