"""`graphcost rank PROGRAM` speaks XLA: its table names options as `graphcost tune` and best.json do, fits 120
columns (every option with --wide), and costs the configurations tune would search (fast-math only when allowed)."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.commands.rank import packed
from graphcost.frontend.programs.flags import CANDIDATES, FLAG_COLUMNS, known_options
from graphcost.kernels.model import CostedConfig
from graphcost.workload import rank as workload_rank
from graphcost.workload.rank import KernelRanking, rank_flag_configs

FAST_MATH = {c.option for c in CANDIDATES if c.fast_math}


def _changed(flags, i):
    default = flags[0].compiler_options()
    return {k: v for k, v in flags[i].compiler_options().items() if default.get(k, object()) != v}


def test_the_default_space_is_tune_s_and_leaves_fast_math_at_its_default():
    from graphcost.tuning.space import FlagSpace, sample_pool

    flags = rank_flag_configs(64, seed=3)
    assert flags[0].compiler_options() == FlagSpace().config(FlagSpace().default()).compiler_options()
    pool, _ = sample_pool(FlagSpace(), 63, 3)  # the candidates tune draws, in its order
    assert [f.values for f in flags[1:]] == [FlagSpace().config(c).values for c in pool]
    assert not any(FAST_MATH & _changed(flags, i).keys() for i in range(len(flags)))
    allowed = rank_flag_configs(64, seed=3, allow_fast_math=True)
    assert any(FAST_MATH & _changed(allowed, i).keys() for i in range(len(allowed)))


def test_packed_options_keep_each_name_whole_within_the_width():
    options = {"xla_cpu_max_isa": "AVX", "xla_cpu_experimental_xnn_graph_fusion_mode":
               "XNN_GRAPH_FUSION_MODE_BYPASS_COST_MODEL", "xla_cpu_ftz": False, "xla_backend_optimization_level": 2}
    text = packed(options, 50)
    assert all(len(line) <= 50 for line in text.splitlines())
    assert "xla_cpu_max_isa: 'AVX'" in text and "xla_cpu_ftz: False" in text
    assert "xla_cpu_experimental_xnn_graph_fusion_mode:\n  'XNN_GRAPH_FUSION_MODE_BYPASS_COST_MODEL'" in text
    assert packed({}, 50) == "(default)"


@pytest.fixture()
def fake_rank(monkeypatch):
    """`rank_program` without compiling: 16 configurations of the default space, the last predicted fastest."""
    asked = {}

    def rank_program(ref, configs=16, seed=0, model=None, allow_fast_math=False, ranked=None, **_):
        asked.update(allow_fast_math=allow_fast_math)
        flags = rank_flag_configs(configs, seed, allow_fast_math)
        costed = [CostedConfig(i, 1e-4 * (1 + (configs - i) / configs), [("ynn_fusion.5", "fusion:kCustom", 5e-5)])
                  for i in range(len(flags))]
        scores = np.asarray([c.seconds for c in costed])
        ranking = KernelRanking(costed, flags, scores, None, SimpleNamespace(meta={"data": "test", "date": "today"}))
        if ranked is not None:
            ranked(ranking)
        return ranking

    monkeypatch.setattr(workload_rank, "rank_program", rank_program)
    return asked


def test_the_table_fits_120_columns_and_names_options_as_tune_does(fake_rank):
    res = CliRunner().invoke(app, ["rank", "prog.py:make", "--configs", "16", "--seed", "1"])
    assert res.exit_code == 0, res.output
    table = res.stdout.splitlines()
    assert max(len(line) for line in table) <= 120
    assert "XLA options changed from the default" in table[0] and "(default)" in res.stdout
    options = {o.candidate.option for o in known_options()}
    assert any(name in res.stdout for name in options - {"xla_cpu_multi_thread_eigen"})
    internal = [f"{c}=" for c in FLAG_COLUMNS]
    assert not any(code in res.stdout for code in internal)  # no internal codes (max_isa_cap=2)
    assert not FAST_MATH & {name for name in options if name in res.stdout}
    assert fake_rank["allow_fast_math"] is False
    assert "fast-math family at its default (--allow-fast-math to include it)" in res.output


def test_json_rows_carry_the_changed_options_as_best_json_does(fake_rank):
    res = CliRunner().invoke(app, ["rank", "prog.py:make", "--configs", "8", "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    flags = rank_flag_configs(8, 0)
    for row in rows:
        assert row["changed"] == json.loads(json.dumps(_changed(flags, row["config"])))
    assert next(r for r in rows if r["config"] == 0)["changed"] == {}


def test_wide_shows_every_option_and_allow_fast_math_reaches_the_space(fake_rank):
    res = CliRunner().invoke(app, ["rank", "prog.py:make", "--configs", "8", "--wide", "--allow-fast-math"])
    assert res.exit_code == 0, res.output
    header = res.stdout.splitlines()[0]
    assert all(o.candidate.option in header for o in known_options())
    assert fake_rank["allow_fast_math"] is True and "fast-math family included" in res.output
