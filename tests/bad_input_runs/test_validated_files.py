"""Files are validated before a C library sees them (issue 36): a truncated or edited LightGBM
`trees.txt` is one line naming the file (was: LightGBM's fatal error, a SIGABRT / segfault of the
whole command); a checkpoint holding integers where the model holds floats is refused naming the
file and the key (was: truncated and used)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from bad_runs import edit_checkpoint
from cli_asserts import invoke, one_line_error

from graphcost.models.lightgbm_text import check_model_text
from graphcost.models.trees import TreeError, TreeRanker


def _trees_run(cost_copy: Path) -> Path:
    trees = cost_copy / "trees.txt"
    assert trees.is_file() and (cost_copy / "blend.json").is_file(), "the fixture run was trained with --trees"
    return trees


def _cuts(text: str) -> dict[str, str]:
    """Damaged versions of a LightGBM text model."""
    header, _, body = text.partition("\n")
    tree0 = body.index("Tree=0")
    return {
        "empty": "",
        "header-only": header + "\n",
        "truncated-in-first-tree": text[: len(header) + 1 + tree0 + 40],
        "truncated-half": text[: len(text) // 2],
        "garbage": header + "\n" + "\x00\xff garbage \n" * 20,
        "child-out-of-range": text.replace("left_child=", "left_child=9999 ", 1),
        "leaf-values-short": text.replace("leaf_value=", "leaf_value=1\nleaf_valuex=", 1),
    }


def test_damaged_trees_are_one_line_in_rank_and_evaluate(cost_copy, data_root):
    trees = _trees_run(cost_copy)
    good = trees.read_text()
    graph = sorted(data_root.rglob("valid/*.npz"))[0]
    for case, text in _cuts(good).items():
        trees.write_text(text)
        one_line_error(invoke("rank", cost_copy, graph, "--tta", "0", "--device", "cpu"), trees)
        one_line_error(invoke("evaluate", cost_copy, "--tta", "0", "--device", "cpu"), trees)
    trees.write_text(good)
    assert invoke("rank", cost_copy, graph, "--tta", "0", "--device", "cpu").exit_code == 0


def test_a_truncated_model_does_not_kill_the_process(cost_copy, tmp_path):
    """In a fresh process, as a user runs it: the old code died by LightGBM's fatal error (SIGABRT)."""
    trees = _trees_run(cost_copy)
    text = trees.read_text()
    header, _, body = text.partition("\n")
    trees.write_text(text[: len(header) + 1 + body.index("Tree=0") + 40])
    code = f"from graphcost.models.trees import TreeRanker\nTreeRanker.load({str(trees)!r})"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "TreeError" in run.stderr and str(trees) in run.stderr, (run.returncode, run.stderr)


def test_check_model_text_accepts_what_lightgbm_writes(cost_copy):
    trees = _trees_run(cost_copy)
    model = TreeRanker.load(trees)
    _, _, body = trees.read_text().partition("\n")
    check_model_text(body, trees)
    with pytest.raises(ValueError, match="not where tree_sizes puts it"):
        check_model_text(body[: len(body) // 2], trees)
    assert model.kind in ("layout", "tile")
    with pytest.raises(TreeError, match="not a usable LightGBM model"):
        trees.write_text(trees.read_text()[:300])
        TreeRanker.load(trees)


def _int64_weight(state):
    name = next(k for k, v in state["model"].items() if v.is_floating_point())
    state["model"][name] = (state["model"][name] * 1000).to(torch.int64)
    state["_name"] = name


def test_integer_weights_are_refused_naming_file_and_key(cost_copy):
    ckpt = cost_copy / "best.pt"
    names = {}
    edit_checkpoint(ckpt, lambda s: (_int64_weight(s), names.update(name=s.pop("_name"))))
    line = one_line_error(invoke("evaluate", ckpt, "--device", "cpu", "--tta", "0"), ckpt, f"key 'model.{names['name']}'")
    assert "int64" in line and "float32" in line


def test_integer_weights_in_a_dag_checkpoint_are_refused(dag_copy, tmp_path):
    ckpt = dag_copy / "best.pt" if (dag_copy / "best.pt").is_file() else dag_copy / "checkpoint.pt"
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    name = next(k for k, v in state["model"].items() if v.is_floating_point())
    state["model"][name] = state["model"][name].to(torch.int64)
    torch.save(state, ckpt)
    one_line_error(invoke("dag", "sample", ckpt, "-n", "1", "--tmax", "1", "--threads", "1", "--out", tmp_path / "s.npz"),
                   ckpt, f"key 'model.{name}'")  # fmt: skip
