"""`graphcost rank PROGRAM` checks and builds everything once: the CLI calls one verb (`rank_program`), which
reads the reference, loads the kernel model and draws the configurations once, and maps its errors to one line
naming the option."""

from __future__ import annotations

from collections import Counter

import numpy as np
from cli_asserts import TINY_PROGRAM as PROGRAM
from cli_asserts import count_calls
from typer.testing import CliRunner

from graphcost.cli import app


def test_rank_reads_the_reference_loads_the_model_and_draws_the_space_once(tmp_path, monkeypatch):
    import graphcost.frontend.programs.hlo_program as hlo_program
    import graphcost.frontend.programs.user_program as user_program
    import graphcost.measure.program_check as program_check
    import graphcost.workload.rank as rank
    from graphcost.kernels.model import KernelCostModel

    calls: Counter = Counter()
    for module, attr in ((hlo_program, "with_inputs"), (user_program, "load_program"),
                         (program_check, "check_program"), (rank, "rank_flag_configs")):
        count_calls(monkeypatch, calls, module, attr)
    for module in (user_program, program_check):  # check_reference under both names it is called by
        count_calls(monkeypatch, calls, module, "check_reference")
    real_load = KernelCostModel.load.__func__
    monkeypatch.setattr(KernelCostModel, "load", classmethod(
        lambda cls, *a, **k: calls.update(["KernelCostModel.load"]) or real_load(cls, *a, **k)))
    seen = {}

    def measure_ranking(ref, configs, seed, check, allow_fast_math=False):
        seen.update(ref=ref, check=check)
        return np.arange(1.0, configs + 1) * 1e3

    monkeypatch.setattr(rank, "measure_ranking", measure_ranking)
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    res = CliRunner().invoke(app, ["rank", f"{prog}:make", "--configs", "2", "--measure", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert "kernels that dominate the default" in res.output and "Kendall tau of the ranking" in res.output
    assert seen["ref"] == f"{prog}:make" and seen["check"] is not None  # measured under the check's deadline
    # the program is loaded only in child processes (the check's, the costing's), never here
    assert calls == Counter({"with_inputs": 1, "check_reference": 1, "check_program": 1, "rank_flag_configs": 1,
                             "KernelCostModel.load": 1})


def test_rank_errors_name_the_option(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    res = CliRunner().invoke(app, ["rank", f"{prog}:make", "--inputs", str(tmp_path / "in.npz")])
    assert res.exit_code == 1 and "error: --inputs" in res.output and "only an XLA module" in res.output
    res = CliRunner().invoke(app, ["rank", f"{tmp_path / 'nope.py'}:make"])
    assert res.exit_code == 1 and "no such file" in res.output and "Traceback" not in res.output


def test_the_verb_s_messages_name_what_its_caller_names():
    import pytest

    from graphcost.guards.bounds import ArgumentError
    from graphcost.workload.rank import rank_program

    with pytest.raises(ArgumentError, match="^--configs must be an integer"):
        rank_program("prog.py:make", configs=1, names={"configs": "--configs"})
    with pytest.raises(ArgumentError, match="^configs must be an integer"):
        rank_program("prog.py:make", configs=1)
