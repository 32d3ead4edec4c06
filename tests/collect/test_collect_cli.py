"""`graphcost collect` end to end on a tiny program: valid npz + manifest, resumable."""

import json

import numpy as np
import pytest

pytest.importorskip("jax")

from typer.testing import CliRunner  # noqa: E402

from graphcost.cli import app  # noqa: E402
from graphcost.data.io.tpugraphs_io import load_graph  # noqa: E402
from graphcost.measure.cross_process import check_executable_ids  # noqa: E402


def test_collect_writes_valid_npz_and_resumes(tmp_path):
    out = tmp_path / "col"
    args = ["collect", "--programs", "mlp-d1-w64-b8-fwd", "--configs", "4", "--rounds", "2", "--calls", "1",
            "--warmup", "1", "--limit", "1", "--processes", "2", "--max-load", "1000", "--out", str(out)]
    runner = CliRunner()
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    entry = manifest["graphs"]["mlp-d1-w64-b8-fwd"]
    assert manifest["collection"]["configs"] == 4 and "protocol" in manifest["environment"]
    path = out / entry["file"]
    graph = load_graph(path, validate=True)
    assert graph.kind == "layout" and graph.node_config_feat.shape[0] == 4
    assert manifest["collection"]["label"] == "level-median"  # the default statistic, recorded
    with np.load(path) as z:  # the cross-process protocol's samples: label = level-normalised median over 2 processes
        samples = z["config_runtime_samples"].astype(np.float64)
        assert samples.shape == (4, 2) and (samples > 0).all()
        ids = check_executable_ids(z["config_executable_ids"], 4)  # configurations of one executable: one label
        pooled = np.stack([np.median(samples[ids == g], axis=0) for g in ids])  # (4, P): each config's executable
        levels = np.median(pooled[np.unique(ids, return_index=True)[1]], axis=0)  # (P,) over executables
        expected = np.median(pooled / levels, axis=1) * np.median(levels)
        np.testing.assert_array_equal(z["config_runtime"], np.round(expected).astype(np.int64))
        assert entry["num_executables"] == len(set(ids.tolist()))
        assert sorted(set(z["config_search_mode"])) == ["default", "random"]
    assert len(entry["processes"]) == 2 and "noise_ratio" in entry and "flagged" in entry
    assert graph.node_config_feat.shape[1:] == (entry["num_configurable"], 18)
    assert len({tuple(r.ravel()) for r in graph.node_config_feat}) == 4  # distinct configurations
    mtime = path.stat().st_mtime_ns
    res2 = runner.invoke(app, args)  # resume: nothing left to do
    assert res2.exit_code == 0, res2.output
    assert path.stat().st_mtime_ns == mtime
    # a resume with different parameters is refused with a clear message
    res3 = runner.invoke(app, args[:4] + ["5"] + args[5:])
    assert res3.exit_code == 1 and "collection" in res3.output
    res4 = runner.invoke(app, args + ["--action", "repeat"])  # the repeat: its agreement per executable, its session recorded
    assert res4.exit_code == 0, res4.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert -1.0 <= manifest["graphs"]["mlp-d1-w64-b8-fwd"]["repeat"]["spearman_vs_label"] <= 1.0
    assert [set(s) for s in manifest["repeat_sessions"]] == [{"date_utc", "cpu_model", "loadavg_start"}]


def test_collect_bad_options_are_one_line_errors(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["collect", "--backend", "spark", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--backend must be 'local' or 'ray'" in res.output
    res = runner.invoke(app, ["collect", "--measure-core", "4096", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--measure-core 4096" in res.output
    res = runner.invoke(app, ["collect", "--action", "repeat", "--out", str(tmp_path / "empty")])
    assert res.exit_code == 1 and "no collection here to repeat" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["collect", "--action", "repeat", "--backend", "ray", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--action repeat works on OUT on this machine" in res.output
    res = runner.invoke(app, ["collect", "--repeat-share", "0.1", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--repeat-share needs --action repeat" in res.output


REPEAT_ARGS = ["--programs", "mlp-d1-w64-b8-fwd", "--configs", "2", "--rounds", "1", "--calls", "1", "--warmup", "0",
               "--processes", "1", "--measure-core", "-1", "--multi-thread"]


def _collection_key():
    """The manifest key `collect` computes for REPEAT_ARGS (now, with this process's XLA_FLAGS)."""
    from graphcost.collect.jobs import CollectOptions
    from graphcost.measure.interleaved import TimingProtocol
    from graphcost.measure.cross_process import CrossProcess

    return CollectOptions(space="layout", mode="both", configs=2, seed=0,
                          protocol=TimingProtocol(rounds=1, calls=1, warmup=0, seed=0),
                          cross=CrossProcess(processes=1, measure_core=-1)).key()


@pytest.mark.parametrize("case", ["dotdot", "absolute", "symlink", "not_object", "no_file", "missing_npz",
                                  "damaged_npz", "unknown_program"])
def test_collect_repeat_refuses_a_bad_manifest_entry(tmp_path, case):
    """issue 26: --repeat resolves every manifest path and refuses one leaving --out (it rewrote a file
    outside the collection); a damaged entry is a one-line error naming the manifest key or the file."""
    from cli_asserts import one_line_error

    col, other = tmp_path / "col", tmp_path / "other"
    (col / "train").mkdir(parents=True)
    other.mkdir()
    victim = other / "x.npz"
    np.savez(victim, config_runtime=np.array([1, 2]))
    before = victim.read_bytes()
    name, entry = "mlp-d1-w64-b8-fwd", {"file": "train/mlp-d1-w64-b8-fwd.npz", "split": "train"}
    needle = {"dotdot": "leads outside", "absolute": "leads outside", "symlink": "leads outside",
              "not_object": "must be an object", "no_file": ".file' must be", "missing_npz": "cannot read",
              "damaged_npz": "cannot read", "unknown_program": "unknown zoo program"}[case]
    if case == "dotdot":
        entry["file"] = "../other/x.npz"
    elif case == "absolute":
        entry["file"] = str(victim)
    elif case == "symlink":
        (col / entry["file"]).symlink_to(victim)
    elif case == "not_object":
        entry = 5
    elif case == "no_file":
        del entry["file"]
    elif case == "damaged_npz":
        (col / entry["file"]).write_bytes(b"PK\x03\x04 not a zip")
    elif case == "unknown_program":
        name = "nope"
    manifest = {"collection": _collection_key(), "graphs": {name: entry}}
    (col / "manifest.json").write_text(json.dumps(manifest))
    line = one_line_error(CliRunner().invoke(app, ["collect", "--action", "repeat", "--out", str(col), *REPEAT_ARGS]), needle)
    assert "manifest.json" in line or "x.npz" in line or "fwd.npz" in line
    assert victim.read_bytes() == before


@pytest.mark.parametrize("case", ["out_file", "out_below_file", "cache_file", "programs_comma"])
def test_collect_bad_paths_and_empty_programs_are_one_line_errors(tmp_path, case):
    """issue 26: --out an existing file gave a traceback; --cache-dir a file ran silently without a cache;
    --programs , exited 0 with no graphs."""
    a_file = tmp_path / "a_file"
    a_file.write_text("mine")
    args = {"out_file": ["--out", a_file], "out_below_file": ["--out", a_file / "sub"],
            "cache_file": ["--out", tmp_path / "col", "--cache-dir", a_file],
            "programs_comma": ["--out", tmp_path / "col", "--programs", ","]}[case]
    needle = {"out_file": "--out", "out_below_file": "--out", "cache_file": "--cache-dir",
              "programs_comma": "--programs"}[case]
    res = CliRunner().invoke(app, ["collect", *map(str, args), "--configs", "2", "--processes", "1"])
    assert res.exit_code in (1, 2) and res.exit_code != 0 and "Traceback" not in res.output, res.output
    assert needle in res.output and a_file.read_text() == "mine"
    if case != "programs_comma":
        from cli_asserts import one_line_error

        one_line_error(res, needle, "a_file")
    assert not (tmp_path / "col").exists()


def test_collect_refuses_a_manifest_nested_50000_deep(tmp_path):
    """issue 26: a JSON file nested 50,000 deep raised RecursionError (here: a collection's manifest)."""
    from cli_asserts import one_line_error

    col = tmp_path / "col"
    col.mkdir()
    (col / "manifest.json").write_text("[" * 50_000 + "]" * 50_000)
    one_line_error(CliRunner().invoke(app, ["collect", "--action", "repeat", "--out", str(col), *REPEAT_ARGS]),
                   "manifest.json", "unreadable manifest")


def test_collect_flags_measures_the_widened_space_and_refuses_an_old_collection(tmp_path):
    from graphcost.frontend.programs.flags import collect_columns, flag_configs

    out = tmp_path / "flags"
    args = ["collect", "--space", "flags", "--programs", "mlp-d1-w64-b8-fwd", "--configs", "6", "--rounds", "1",
            "--calls", "1", "--warmup", "0", "--limit", "1", "--processes", "1", "--max-load", "1000",
            "--out", str(out)]
    runner = CliRunner()
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["collection"]["flag_columns"] == list(collect_columns())
    graph = load_graph(out / manifest["graphs"]["mlp-d1-w64-b8-fwd"]["file"], validate=True)
    assert graph.kind == "tile" and graph.config_feat.shape == (6, 24)
    np.testing.assert_array_equal(graph.config_feat, [c.values for c in flag_configs(6, seed=0)])
    assert (graph.config_feat[:, 7:] != graph.config_feat[0, 7:]).any()  # options beyond the old 7 were measured
    # a collection made before the space was widened (no flag_columns in its key) is not resumed into
    manifest["collection"].pop("flag_columns")
    (out / "manifest.json").write_text(json.dumps(manifest))
    res = runner.invoke(app, args)
    assert res.exit_code == 1 and "use another --out directory" in res.output and "Traceback" not in res.output


def test_collect_flags_mode_tuner_samples_as_the_tuner_does(tmp_path):
    """--space flags --mode tuner: the configurations `graphcost tune` spreads its candidates over
    (`tuning.space.sample_pool` of the default FlagSpace), fast-math at its default, the origin of each
    stored; a layout mode is refused for flags in one line."""
    from graphcost.frontend.programs.flags import known_options, tuner_flag_configs
    from graphcost.tuning.space import FlagSpace, sample_pool

    out = tmp_path / "flags"
    args = ["collect", "--space", "flags", "--mode", "tuner", "--programs", "mlp-d1-w64-b8-fwd", "--configs", "8",
            "--rounds", "1", "--calls", "1", "--warmup", "0", "--limit", "1", "--processes", "1", "--max-load", "1000",
            "--out", str(out)]
    runner = CliRunner()
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    fast_math = {o.candidate.name for o in known_options() if o.candidate.fast_math}
    assert manifest["collection"]["mode"] == "tuner"
    assert fast_math and not fast_math & set(manifest["collection"]["flag_columns"])
    file = out / manifest["graphs"]["mlp-d1-w64-b8-fwd"]["file"]
    graph = load_graph(file, validate=True)
    configs, origin = tuner_flag_configs(8, seed=0)
    np.testing.assert_array_equal(graph.config_feat, [c.values for c in configs])
    space = FlagSpace()  # the very configurations the tuner's pool sampling draws
    pool, pool_origin = sample_pool(space, 7, seed=0)
    assert [space.config(c).values for c in [space.default(), *pool]] == [c.values for c in configs]
    assert ["default", *pool_origin] == origin
    fm_cols = [o.candidate.column for o in known_options() if o.candidate.fast_math]
    assert (graph.config_feat[:, fm_cols] == graph.config_feat[0, fm_cols]).all()  # fast-math never moves
    with np.load(file, allow_pickle=False) as z:
        assert z["config_search_mode"].tolist() == origin and origin[0] == "default" and "random" in origin
    res = runner.invoke(app, ["collect", "--space", "flags", "--mode", "random", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "--mode must be 'both' or 'tuner' for --space flags" in res.output


def test_sample_pool_spreads_as_the_tuner_searches():
    """`sample_pool`: distinct non-default configurations, alternately rho-samples and 1-3 changes of the default."""
    from graphcost.tuning.space import FlagSpace, sample_pool

    space = FlagSpace()
    pool, origin = sample_pool(space, 60, seed=3)
    assert len(pool) == 60 == len(set(pool)) and space.default() not in pool
    changed = [sum(c != 0 for c in codes) for codes in pool]
    assert all(1 <= n <= 3 for n, o in zip(changed, origin) if o == "default")
    assert max(n for n, o in zip(changed, origin) if o == "random") > 3  # rho-samples reach far from the default
    assert pool == sample_pool(space, 60, seed=3)[0] != sample_pool(space, 60, seed=4)[0]
