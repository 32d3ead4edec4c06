"""bench_real.py's leave-family-out fold parts: a resume cache measured again under another blend rule, claimed by
one live process at a time, combined over disjoint seed ranges, averaged once every fold is done."""

from pathlib import Path

import numpy as np


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
    from graphcost.guards.atomic import atomic_write_json

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
    from graphcost.guards.atomic import atomic_write_json

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
