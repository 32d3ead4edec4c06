"""The kernel rows of bench_real.json (issue 63 "Done means"): benchmarks/bench_kernels.py puts its ``kernels`` and
``roofline`` rows into a protocol in bench_real's row shape, and a later bench_real run of that protocol keeps them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


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
        assert row["same_data_rows"] == {"kernels": 0.43, "lightgbm": 0.44, "count": 0.28}
    rerun = {"default": {"kendall_tau": 0.5}, "meta": {"data": "other"}}  # bench_real re-runs the protocol
    kept = br.keep_earlier_rows(proto, rerun)
    assert kept["default"] == {"kendall_tau": 0.5} and kept["kernels"] == proto["kernels"]
    assert kept["roofline"] == proto["roofline"]
