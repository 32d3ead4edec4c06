"""A full disk (simulated with a file-size limit: writes fail with EFBIG as they would with ENOSPC) ends train,
dag train and data synth in one line naming the file, with nothing half-written (issue 65 §5; was: torch.save's
"unexpected pos" RuntimeError traceback after ENOSPC)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))  # every file above 2 KB: what a full disk does to it
sys.argv = ["graphcost", *sys.argv[1:]]
from graphcost.cli import main
main()
"""


def _run_full(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", LIMITED, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("args, written", [
    (["train", "--data-dir", "cpu_layout", "--max-graphs", "2", "--epochs", "1", "--no-trees", "--out", "run",
      "--no-progress", "--threads", "1"], "run/best.pt"),
    (["dag", "train", "--dataset", "lp", "--num-graphs", "12", "--epochs", "1", "--threads", "1", "--out", "run"],
     "run/best.pt"),
])
def test_a_full_disk_is_one_line_naming_the_file(tmp_path, args, written):
    result = _run_full(tmp_path, *args)
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert len(errors) == 1 and written in errors[0] and "File too large" in errors[0], errors
    leftovers = [p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]
    assert not leftovers and not (tmp_path / written).exists()  # no temp file, no half checkpoint


def test_data_synth_on_a_full_disk(tmp_path):
    result = _run_full(tmp_path, "data", "synth", "-c", "layout:xla:random", "-o", "out", "-n", "3")
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert len(errors) == 1 and "File too large" in errors[0] and "None" not in errors[0], errors
