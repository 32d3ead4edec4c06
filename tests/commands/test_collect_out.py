"""`collect --out` writes only into a collection (issue 36): a training or tuning run, or a directory of
other files, is refused in one line before anything is measured or written."""

from __future__ import annotations

import pytest
from cli_asserts import invoke, one_line_error

from graphcost.collect.guard import check_collection_out

FAST = ["--programs", "mlp-d1-w64-b8-fwd", "--limit", "1", "--configs", "2", "--rounds", "1", "--calls", "1",
        "--warmup", "0", "--processes", "1", "--max-load", "1000", "--measure-core", "-1"]


def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("files, needles", [
    ({"run.json": "{}", "checkpoint.pt": "x"}, ["holds a training or tuning run (run.json)", "another directory"]),
    ({"study.db": "x", "trials.csv": "x"}, ["holds a training or tuning run (study.db)"]),
    ({"notes.txt": "mine", "prog.py": "x"}, ["not a collection (no manifest.json)", "such as notes.txt"]),
    ({"train/a.npz": "x", "valid/b.npz": "x"}, ["not a collection (no manifest.json)", "such as train"]),
])
def test_collect_out_into_a_run_or_other_files_is_refused(tmp_path, files, needles):
    """issue 36: `collect --out RUN` wrote a manifest and split directories into a training run."""
    out = tmp_path / "dir"
    for name, text in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    before = _tree(out)
    one_line_error(invoke("collect", "--out", out, *FAST), f"--out {out}", *needles)
    assert _tree(out) == before and not (out / "manifest.json").exists()


def test_a_new_empty_or_started_collection_passes(tmp_path):
    check_collection_out(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_collection_out(tmp_path / "empty")
    started = tmp_path / "started"  # killed before its first graph: resumed
    (started / ".work" / "mlp").mkdir(parents=True)
    (started / "train").mkdir()
    (started / "train" / "x.npz").write_text("x")
    check_collection_out(started)
    done = tmp_path / "done"
    done.mkdir()
    (done / "manifest.json").write_text("{}")
    check_collection_out(done)  # the manifest itself is checked by the collection
