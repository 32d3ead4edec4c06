"""Damaged run.json / ensemble.json / checkpoints of cost-model runs: one-line `error:` naming the
file and the field, exit code 1 (issue 19, checkpoints and run directories)."""

import json
import shutil
from pathlib import Path

import pytest
from bad_runs import CHECKPOINT_CASES, RUN_JSON_CASES, edit_checkpoint, edit_json
from cli_asserts import invoke, one_line_error


@pytest.mark.parametrize("case, change, field", RUN_JSON_CASES, ids=[c[0] for c in RUN_JSON_CASES])
def test_evaluate_refuses_a_bad_run_json(cost_copy, case, change, field):
    edit_json(cost_copy / "run.json", change)
    one_line_error(invoke("evaluate", cost_copy, "--device", "cpu"), cost_copy / "run.json", field)


@pytest.mark.parametrize("case", ["missing-config", "string-folds", "string-epochs", "numeric-data-dir"])
def test_resume_refuses_a_bad_run_json(cost_copy, case):
    _, change, field = next(c for c in RUN_JSON_CASES if c[0] == case)
    edit_json(cost_copy / "run.json", change)
    result = invoke("train", "--resume", "--out", cost_copy, "--device", "cpu", "--no-progress")
    one_line_error(result, cost_copy / "run.json", field)


@pytest.mark.parametrize("case, change, words", CHECKPOINT_CASES, ids=[c[0] for c in CHECKPOINT_CASES])
def test_evaluate_refuses_a_bad_checkpoint(cost_copy, case, change, words):
    ckpt = cost_copy / "best.pt"
    edit_checkpoint(ckpt, change)
    one_line_error(invoke("evaluate", ckpt, "--device", "cpu", "--tta", "0"), ckpt, words)


def _fake_cv_run(tmp_path, manifest_text: str) -> Path:
    """A cross-validation run directory whose ensemble.json is `manifest_text` (checked before any member loads)."""
    run = tmp_path / "cv"
    (run / "fold_00").mkdir(parents=True)
    (tmp_path / "outside.pt").write_bytes(b"")
    (run / "ensemble.json").write_text(manifest_text)
    return run


def _members(members) -> str:
    return json.dumps({"members": members})


@pytest.mark.parametrize(
    "manifest, words",
    [
        (_members(["../outside.pt"]), "outside the run directory"),
        (_members(["fold_00/../../outside.pt"]), "outside the run directory"),
        (_members(["/etc/passwd"]), "outside the run directory"),
        (_members([]), "field 'members'"),
        (_members("fold_00/best.pt"), "field 'members'"),
        (_members([3]), "field 'members'"),
        (json.dumps(["fold_00/best.pt"]), "field 'members'"),
        ("{not json", "not a readable JSON file"),
    ],
    ids=["parent", "dotdot-inside", "absolute", "empty", "string", "number", "not-an-object", "invalid-json"],
)
def test_ensemble_json_is_checked(tmp_path, manifest, words):
    run = _fake_cv_run(tmp_path, manifest)
    one_line_error(invoke("evaluate", run, "--device", "cpu"), run / "ensemble.json", words)


def test_ensemble_member_inside_the_run_is_used(tmp_path, cost_run):
    run = tmp_path / "cv"
    shutil.copytree(cost_run, run / "fold_00")
    shutil.copy(cost_run / "run.json", run / "run.json")
    (run / "ensemble.json").write_text(json.dumps({"members": ["fold_00/best.pt"]}))
    result = invoke("evaluate", run, "--device", "cpu", "--tta", "0")
    assert result.exit_code == 0, result.output


def _data_copy(data_root, tmp_path, change_test_file):
    """A copy of `data_root` whose test graphs are changed by `change_test_file(path)`."""
    data = Path(shutil.copytree(data_root, tmp_path / "data"))
    tests = sorted(data.rglob("test/*.npz"))
    assert tests
    for f in tests:
        change_test_file(f)
    return data, tests


def test_evaluate_names_a_damaged_test_file(cost_copy, data_root, tmp_path):
    """issue 26: a damaged npz in test/ raised BadZipFile from the split choice (`has_runtimes`)."""
    data, tests = _data_copy(data_root, tmp_path, lambda f: f.write_bytes(b"PK\x03\x04 damaged"))
    one_line_error(invoke("evaluate", cost_copy, "--data-dir", data, "--device", "cpu"), tests[0].name)


def test_evaluate_keeps_a_labelled_test_split_with_constant_runtimes(cost_copy, data_root, tmp_path):
    """issue 26: a test file whose runtimes are all equal (labelled, but not rankable) silently switched
    the report to the valid split with a note saying the test split had no runtimes."""
    import numpy as np

    def constant(f):
        with np.load(f, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["config_runtime"] = np.full_like(arrays["config_runtime"], 1000)
        np.savez(f, **arrays)

    data, tests = _data_copy(data_root, tmp_path, constant)
    result = invoke("evaluate", cost_copy, "--data-dir", data, "--device", "cpu")
    assert "split: test" in result.output and "has no runtimes" not in result.output, result.output
    assert "all equal" in result.output and tests[0].stem in result.output


@pytest.mark.parametrize("args, needle", [
    (["--lr", "inf"], "--lr must be a finite number > 0"),
    (["--lr", "0"], "--lr must be a finite number > 0"),
    (["--seed", str(10**20)], "--seed must be an integer from 0 to"),
    (["--max-memory-gb", "-1"], "--max-memory-gb must be a finite number > 0"),
    (["--max-memory-gb", "nan"], "--max-memory-gb must be a finite number > 0"),
    (["--model-opt", "hidden=0"], "--model-opt hidden=0: must be >= 1"),
    (["--model-opt", "hidden=100000000"], "above --max-memory-gb 8"),
], ids=["lr-inf", "lr-0", "seed-1e20", "mem-negative", "mem-nan", "hidden-0", "hidden-1e8"])
def test_train_refuses_numbers_it_cannot_use(data_root, tmp_path, args, needle):
    """issue 26: --lr inf / --seed 1e20 failed naming no option; hidden=0 and a negative or NaN
    --max-memory-gb were accepted; hidden=100000000 tried a 70 GB allocation. Since issue 36 an
    infinite or NaN float and an integer past int64 are usage errors (exit 2) naming the option,
    for every option of every command (`graphcost.commands.numbers`)."""
    out = tmp_path / "run"
    result = invoke("train", "-c", "layout:xla:random", "--data-dir", data_root, "--epochs", "1",
                    "--no-progress", "--device", "cpu", "--out", out, *args)  # fmt: skip
    if args[1] in ("inf", "nan", str(10**20)):
        assert result.exit_code == 2 and args[0] in result.output and "Traceback" not in result.output, result.output
    else:
        one_line_error(result, needle)
    assert not out.exists()


def test_evaluate_refuses_a_run_json_nested_50000_deep(cost_copy):
    """issue 26: a run.json nested 50,000 deep raised RecursionError."""
    (cost_copy / "run.json").write_text("[" * 50_000 + "]" * 50_000)
    one_line_error(invoke("evaluate", cost_copy, "--device", "cpu"), cost_copy / "run.json", "nested too deeply")
