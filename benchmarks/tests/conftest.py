"""The tests of the benchmark scripts. benchmarks/ is no package (each script imports its siblings by their bare
names, as when it runs): the folders these tests import from go on sys.path here, at its end: this folder's helpers
(bench_modules), benchmarks/tune (tune_replay) and the tuner's test fakes (tests/tuning: tune_fakes)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "tune", HERE.parents[1] / "tests" / "tuning"):
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
