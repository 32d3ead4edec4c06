"""The tuner's kernel report (`graphcost.kernels.report`): the default's top kernels, the same kernels in the kept
configuration, and kernels.csv (`graphcost.tuning.result.trials_kernels_csv`)."""

from __future__ import annotations

import csv
import io

from graphcost.kernels.report import KERNEL_ROW, faster_kernels_line, kernel_rows, kernels_summary
from graphcost.kernels.times import ConfigProfile, KernelTime, ProgramProfile
from graphcost.tuning.result import trials_kernels_csv
from graphcost.tuning.trial import OK, Trial


def _profile(label, runtime, kernels):
    return ConfigProfile(label, runtime, runtime, [KernelTime(n, kind, t, 1, True, fp) for n, kind, t, fp in kernels])


DEFAULT = _profile("default", 1000.0, [("dot.1", "ynn fusion", 600.0, "a"), ("fusion.2", "loop fusion", 300.0, "b"),
                                      ("copy.3", "copy", 50.0, "c")])
KEPT = _profile("kept", 700.0, [("dot.7", "ynn fusion", 400.0, "a"), ("fusion.2", "loop fusion", 250.0, "b2"),
                                ("loop.9", "loop fusion", 30.0, "d")])


def test_summary_pairs_the_default_kernels_with_the_kept_ones():
    s = kernels_summary(DEFAULT, ProgramProfile("p", 3, "cross-process", [DEFAULT, KEPT]), top=5)
    assert [k["name"] for k in s["default"]["top"]] == ["dot.1", "fusion.2", "copy.3"]
    assert s["default"]["top"][0]["share"] == 0.6 and s["default"]["coverage"] == 0.95
    pairs = {p["name"]: p for p in s["kept"]["top"]}
    assert pairs["dot.1"]["kept_name"] == "dot.7" and pairs["dot.1"]["speedup"] == 1.5  # by fingerprint
    assert pairs["fusion.2"]["kept_ns"] == 250.0  # by name: the fusion changed, its name did not
    assert pairs["copy.3"]["kept_ns"] is None  # gone in the kept configuration
    line = faster_kernels_line(s)
    assert line.startswith("kernels, default -> kept: faster: dot.1 (ynn fusion) 0.6 µs -> 0.4 µs, fusion.2")
    assert "; not in the kept configuration: copy.3 (copy) 0.1 µs; new in it: loop.9 (loop fusion) 0.0 µs" in line


def test_no_profile_no_summary_and_default_only():
    assert kernels_summary(None, None) is None
    s = kernels_summary(DEFAULT, None)
    assert "kept" not in s and faster_kernels_line(s) == ""


def test_kernels_csv_has_one_row_per_trial_kernel():
    trials = [Trial((1,), OK, 0.9, strategy="tpe", number=0, extra={"kernels": kernel_rows(KEPT)}),
              Trial((2,), "compile_error", strategy="tpe", number=1)]
    rows = list(csv.DictReader(io.StringIO(trials_kernels_csv(trials))))
    assert len(rows) == len(KEPT.kernels) and list(rows[0])[3:] == list(KERNEL_ROW)
    assert rows[0]["name"] == "dot.7" and float(rows[0]["self_ns"]) == 400.0 and rows[0]["number"] == "0"
