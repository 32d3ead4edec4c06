"""release/merge_collections.py: several collections as one training directory (what the shipped flag model
trains on: cpu_zoo_flags + cpu_zoo_flags_tuner), and compare_seed_ensemble.py's leave-family-out folds over their
development families, laid out the same way."""

import json
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "models"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "release"))

from compare_seed_ensemble import development_graphs, fold_layout, summary  # noqa: E402
from merge_collections import merge  # noqa: E402


def _collection(root: Path, graphs: dict[str, tuple[str, str]], columns: list[str]) -> Path:
    """A tiny flag collection: name -> (family, split); one empty-ish npz per graph."""
    entries = {}
    for name, (family, split) in graphs.items():
        (root / split).mkdir(parents=True, exist_ok=True)
        np.savez(root / split / f"{name}.npz", config_runtime=np.arange(3))
        entries[name] = {"family": family, "split": split, "file": f"{split}/{name}.npz"}
    (root / "manifest.json").write_text(json.dumps({"collection": {"space": "flags", "flag_columns": columns},
                                                    "graphs": entries}))
    return root


def test_merge_keeps_the_first_collections_split_and_the_union_of_flag_columns(tmp_path):
    zoo = _collection(tmp_path / "zoo", {"a1": ("a", "train"), "b1": ("b", "valid"), "c1": ("c", "test")},
                      ["x", "y", "fast"])
    tuner = _collection(tmp_path / "tuner", {"a1": ("a", "train"), "b1": ("b", "train"), "d1": ("d", "valid")},
                        ["x", "y", "z"])
    out = merge([zoo, tuner], tmp_path / "out")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["collection"]["flag_columns"] == ["x", "y", "fast", "z"]
    split = {name: e["split"] for name, e in manifest["graphs"].items()}
    # b1 is a validation program of the first collection: its second graph stays on the validation side
    assert split == {"a1": "train", "b1": "valid", "c1": "test", "a1__tuner": "train", "b1__tuner": "valid",
                     "d1__tuner": "valid"}
    assert all((out / e["file"]).is_file() for e in manifest["graphs"].values())
    assert sorted(p.name for p in (out / "valid").glob("*.npz")) == ["b1.npz", "b1__tuner.npz", "d1__tuner.npz"]
    shutil.rmtree(tuner / "train")  # OUT is replaced, not added to
    (tuner / "manifest.json").write_text(json.dumps({"collection": {"space": "flags"}, "graphs": {}}))
    out = merge([zoo, tuner], tmp_path / "out")
    assert sorted(json.loads((out / "manifest.json").read_text())["graphs"]) == ["a1", "b1", "c1"]


def test_seed_ensemble_folds_never_read_a_test_family_and_hold_each_development_family_out_once(tmp_path):
    import bench_real as br
    from types import SimpleNamespace

    zoo = _collection(tmp_path / "zoo", {"a1": ("a", "train"), "b1": ("b", "valid"), "c1": ("c", "test"),
                                         "d1": ("d", "train"), "e1": ("e", "train")}, ["x"])
    # the second collection's copy of c1 is a test program of the first: never read
    tuner = _collection(tmp_path / "tuner", {"a1": ("a", "train"), "c1": ("c", "train"), "f1": ("f", "valid")}, ["x"])
    manifest, graphs = development_graphs([zoo, tuner])
    assert sorted(graphs) == ["a1", "a1__tuner", "b1", "d1", "e1", "f1__tuner"]
    family = {name: e["family"] for name, (_, _, e) in graphs.items()}
    groups = br.family_folds([SimpleNamespace(family=f) for f in family.values()], 3)
    assert sorted(f for g in groups for f in g) == ["a", "b", "d", "e", "f"]
    for k, held_out in enumerate(groups):
        valid = groups[(k + 1) % len(groups)]
        out = fold_layout(manifest, graphs, held_out, valid, tmp_path / f"fold_{k}")
        side = {name: e["split"] for name, e in json.loads((out / "manifest.json").read_text())["graphs"].items()}
        assert {family[n] for n, s in side.items() if s == "test"} == set(held_out)
        assert {family[n] for n, s in side.items() if s == "valid"} == set(valid)
        assert not {family[n] for n, s in side.items() if s == "train"} & (set(held_out) | set(valid))


def test_seed_ensemble_summary_averages_folds_and_counts_where_the_ensemble_leads():
    rows = [{"members": [{"valid": 0.5, "held_out": 0.3}, {"valid": 0.4, "held_out": 0.6}],
             "chosen_on_valid": {"held_out": 0.3}, "member_mean_held_out": 0.45, "ensemble_graph_only": {"held_out": 0.5},
             "ensemble": {"held_out": 0.4}},
            {"members": [{"valid": 0.2, "held_out": 0.4}, {"valid": 0.3, "held_out": 0.2}],
             "chosen_on_valid": {"held_out": 0.2}, "member_mean_held_out": 0.3, "ensemble_graph_only": {"held_out": 0.25},
             "ensemble": {"held_out": 0.2}}]
    s = summary(rows)
    assert s["chosen_on_valid"]["mean"] == 0.25 and s["ensemble_graph_only"]["mean"] == 0.375
    assert s["ensemble_blended"]["mean"] == 0.3
    assert s["best_member_in_hindsight"]["mean"] == 0.5
    assert s["ensemble_beats_chosen_folds"] == 2 and s["ensemble_beats_member_mean_folds"] == 1


def test_a_kept_fold_with_the_default_row_is_measured_again_under_another_blend_rule(tmp_path):
    """bench_real's leave-family-out parts are a resume cache: one made before the recipe's blend rule
    changed must not stand in for today's default row; parts of the table rows are not affected."""
    from types import SimpleNamespace

    import bench_real as br
    from graphcost.inference.blend import BLEND_METRIC, PRIOR_RULE

    args = SimpleNamespace(parts=tmp_path, seeds=3, epochs=None, batch_configs=64, hidden=None, family_split=False,
                           family_folds=5)
    _, with_default = br.fold_part(args, Path("cpu_zoo_flags"), ["default", "sage"], ["bert", "flow"])
    _, tables = br.fold_part(args, Path("cpu_zoo_flags"), ["count", "lightgbm"], ["bert", "flow"])
    assert with_default["blend_metric"] == BLEND_METRIC and with_default["blend_prior"] == PRIOR_RULE
    assert "blend_metric" not in tables and "blend_prior" not in tables


def test_a_fold_claimed_by_a_live_process_is_skipped_and_a_dead_processes_claim_is_taken_over(tmp_path):
    """bench_real's processes started with the same command share the leave-family-out folds out: each fold
    is claimed by one live process; a claim whose process is gone (killed mid-fold) does not block it forever."""
    import os
    import socket
    import subprocess

    import bench_real as br

    part = tmp_path / "parts" / "lofo-x-a_b-default-s3.json"
    mine = br.claim_fold(part)
    assert mine is not None and mine.read_text() == f"{socket.gethostname()}:{os.getpid()}"
    assert br.claim_fold(part) is None  # held by a live process (this one)
    mine.unlink()
    gone = subprocess.Popen(["true"])
    gone.wait()
    (part.parent / (part.name + ".claim")).write_text(f"{socket.gethostname()}:{gone.pid}")
    taken = br.claim_fold(part)
    assert taken is not None and taken.read_text().endswith(f":{os.getpid()}")
    taken.write_text("")  # a claim whose writer died before it wrote its owner
    assert br.claim_fold(part) is not None


def test_fold_parts_of_disjoint_seed_ranges_combine_into_the_mean_and_std_of_every_seed(tmp_path):
    """Seed 0 of a leave-family-out fold measured one day (a one-seed part, no per-seed rows) and seeds 1-2
    another (``--first-seed 1 --seeds 2``) make the 3-seed row without training again; count (deterministic)
    is counted once, not three times."""
    from types import SimpleNamespace

    import bench_real as br
    from graphcost.atomic import atomic_write_json

    def row(*taus):
        seeds = [{"kendall_tau": t} for t in taus]
        return {**br._seed_stats(seeds), "per_seed": seeds}

    args = SimpleNamespace(parts=tmp_path, seeds=3, epochs=None, batch_configs=64, hidden=None, family_split=True,
                           family_folds=5, first_seed=0)
    data, models, group = Path("cpu_zoo_layout"), ["sage", "count"], ["bert", "gpt"]
    old = {m: {k: v for k, v in r.items() if k != "per_seed"} for m, r in {"sage": row(0.5), "count": row(0.4)}.items()}
    fam = {"bert": {"sage": row(0.6), "count": row(0.4), "noise ceiling": {"kendall_tau": 0.9}},
           "gpt": {"sage": row(0.4), "count": row(0.4)}}
    first = {**old, "noise ceiling": {"kendall_tau": 0.8}, "by_family": fam}
    later = {"sage": row(0.6, 0.7), "count": row(0.4), "noise ceiling": {"kendall_tau": 0.8},
             "by_family": {"bert": {"sage": row(0.7, 0.8), "count": row(0.4), "noise ceiling": {"kendall_tau": 0.9}},
                           "gpt": {"sage": row(0.5, 0.6), "count": row(0.4)}}}
    assert br.seed_parts(args, data, models, group) is None  # nothing on disk
    for res, seeds, first_seed in ((first, 1, 0), (later, 2, 1)):
        part, key = br.fold_part(args, data, models, group, seeds=seeds, first_seed=first_seed)
        atomic_write_json({"key": key, "date": "2026-12-01", "result": res}, part)
    assert br.fold_part(args, data, models, group, seeds=2, first_seed=1)[0].name.endswith("-s2from1.json")
    got = br.seed_parts(args, data, models, group)
    assert got["sage"]["seeds"] == 3 and np.isclose(got["sage"]["kendall_tau"], 0.6)
    assert np.isclose(got["sage"]["kendall_tau_std"], np.std([0.5, 0.6, 0.7]))
    assert got["count"]["seeds"] == 1 and got["count"]["kendall_tau"] == 0.4
    assert np.isclose(got["by_family"]["bert"]["sage"]["kendall_tau"], 0.7)
    assert got["by_family"]["bert"]["noise ceiling"] == {"kendall_tau": 0.9}
    args.seeds = 4  # seed 3 is not on disk: nothing to combine
    assert br.seed_parts(args, data, models, group) is None
    args.seeds = 3  # a part of two seeds without its per-seed rows (edited by hand): measured again, no traceback
    part, key = br.fold_part(args, data, models, group, seeds=2, first_seed=1)
    atomic_write_json({"key": key, "date": "2026-12-01", "result": {"sage": {"kendall_tau": 0.6, "seeds": 2}}}, part)
    assert br.seed_parts(args, data, models, group) is None


def test_lofo_leaves_a_fold_another_process_measures_and_averages_once_every_fold_is_done(tmp_path):
    """Two processes of one bench_real command: the fold the other one holds is skipped and nothing is averaged
    yet, even when an out-of-date part of that fold (another recipe's key) is on disk; once the claim is gone the
    same call measures the fold and averages both."""
    from types import SimpleNamespace

    import bench_real as br
    from graphcost.atomic import atomic_write_json

    rng = np.random.default_rng(0)
    records = [br.Record(name=f"{fam}{i}", family=fam, split="train", path=tmp_path / f"{fam}{i}.npz", kind="layout",
                         label=rng.random(6) + 1, repeat=None, modes=None, table=np.zeros((6, 1), np.float32),
                         moved=rng.integers(0, 3, 6))
               for fam in ("a", "b") for i in range(2)]
    args = SimpleNamespace(parts=tmp_path / "parts", seeds=1, epochs=None, batch_configs=64, hidden=None,
                           family_split=False, family_folds=0, first_seed=0, machine="test", threads=1)
    part, key = br.fold_part(args, Path("zoo"), ["count"], ["b"])
    atomic_write_json({"key": {**key, "epochs": 99}, "date": "2026-11-01", "result": {}}, part)  # out of date
    held = br.claim_fold(part)  # "another process" (a live pid: this one)
    assert br.lofo(records, ["count"], args, tmp_path / "work", Path("zoo")) is None
    assert br._read_part(*br.fold_part(args, Path("zoo"), ["count"], ["a"])) is not None  # its own fold is kept
    held.unlink()
    res = br.lofo(records, ["count"], args, tmp_path / "work", Path("zoo"))
    assert sorted(res["families"]) == ["a", "b"] and res["count"]["families"] == 2
    assert "per_seed" not in res["families"]["a"]["count"]  # kept in the parts, not in the averaged result
