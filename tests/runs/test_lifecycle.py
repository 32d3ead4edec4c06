"""One output directory's lifecycle (graphcost.runs.lifecycle.RunDirectory, issue 65): checked before any work,
locked, emptied only on overwrite, released; nested opens of the same directory by the library verb a command
calls; and the library verbs `tune` and `train_layerdag` refusing a directory another process holds."""

from __future__ import annotations

import pytest

from graphcost.guards.atomic import LOCK_NAME, DirectoryLockedError, OutputExistsError, lock_dir
from graphcost.guards.outputs import OutputPathError
from graphcost.runs.lifecycle import RunDirectory


def held_by_another(path) -> bool:
    """Whether a fresh process finds `path`'s lock taken."""
    import subprocess
    import sys

    code = "import sys; from graphcost.guards.atomic import lock_dir; lock_dir(sys.argv[1])"
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True).returncode != 0


def test_checks_run_before_any_work_and_name_the_argument(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(OutputPathError, match=r"^out .*file\.txt: is a file"):
        RunDirectory(tmp_path / "file.txt", "out")
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    with pytest.raises(OutputExistsError, match=r"^--out .*run: already holds"):
        RunDirectory(run, "--out")
    data = tmp_path / "data"
    (data / "train").mkdir(parents=True)
    with pytest.raises(OutputPathError, match="inside the input data"):
        RunDirectory(data / "train" / "out", "out", data=[("data", data)])
    assert not (data / "train" / "out").exists() and not list(run.glob(LOCK_NAME))


def test_enter_locks_clears_only_on_overwrite_and_releases(tmp_path):
    run = tmp_path / "run"
    (run / "cache").mkdir(parents=True)
    (run / "run.json").write_text("{}")
    (run / "cache" / "kept.npz").write_text("k")
    with RunDirectory(run, "out", overwrite=True, keep=(run / "cache",)) as out:
        assert out == run and sorted(p.name for p in run.iterdir()) == [LOCK_NAME, "cache"]
        assert held_by_another(run)
    assert not held_by_another(run)  # released when the block ended


def test_a_directory_another_process_holds_is_neither_entered_nor_cleared(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "best.pt").write_bytes(b"weights")
    with lock_dir(run):  # what another live run holds
        with pytest.raises(DirectoryLockedError, match="in use by another graphcost process"):
            with RunDirectory(run, "--out", overwrite=True):
                pass
    assert (run / "best.pt").read_bytes() == b"weights"


def test_the_library_verb_inside_a_command_nests(tmp_path):
    """The command opens --out (locks, clears); the verb it calls opens the same directory again: no second
    lock (it would refuse its own process) and no second clearing of what the command wrote."""
    run = tmp_path / "run"
    with RunDirectory(run, "--out"):
        (run / "run.json").write_text("{}")  # written by the command under its lock
        with RunDirectory(run, "out", overwrite=True) as inner:  # the verb
            assert inner == run
        assert (run / "run.json").is_file()
        assert held_by_another(run)  # still the command's: the inner block released nothing
    assert not held_by_another(run)


def test_tune_from_python_refuses_an_out_another_process_holds(tmp_path):
    """issue 65: tune's lock lived only in `graphcost tune`; from Python two runs could share one study
    directory's outputs."""
    import numpy as np

    import graphcost

    out = tmp_path / "tuned"
    with lock_dir(out):
        with pytest.raises(DirectoryLockedError, match=r"^out .*in use by another graphcost process"):
            graphcost.tune(lambda x: x * 2.0, np.ones(4, np.float32), budget=1, out=out, progress=False)
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]  # nothing was measured or written


def test_train_layerdag_refuses_an_out_dir_another_process_holds(tmp_path):
    import numpy as np

    from graphcost.layerdag.dag_record import DAG
    from graphcost.layerdag.train import LayerDAGTrainConfig, train_layerdag

    dags = [DAG(np.array([0, 1, 1]), np.array([0, 0]), np.array([1, 2])) for _ in range(4)]
    with lock_dir(tmp_path / "run"):
        with pytest.raises(DirectoryLockedError, match="^out_dir "):
            train_layerdag(dags, tmp_path / "run", LayerDAGTrainConfig(device="cpu", epochs=1), progress=False)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [LOCK_NAME]
