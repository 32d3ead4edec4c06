"""compare_seed_ensemble.py's leave-family-out folds over the development families of several collections, laid out
as graphcost.collect.merge lays them out, and its summary."""

import json

from collection_stubs import tiny_flag_collection

from compare_seed_ensemble import development_graphs, fold_layout, summary


def test_seed_ensemble_folds_never_read_a_test_family_and_hold_each_development_family_out_once(tmp_path):
    import bench_real as br
    from types import SimpleNamespace

    zoo = tiny_flag_collection(tmp_path / "zoo", {"a1": ("a", "train"), "b1": ("b", "valid"), "c1": ("c", "test"),
                                         "d1": ("d", "train"), "e1": ("e", "train")}, ["x"])
    # the second collection's copy of c1 is a test program of the first: never read
    tuner = tiny_flag_collection(tmp_path / "tuner", {"a1": ("a", "train"), "c1": ("c", "train"), "f1": ("f", "valid")}, ["x"])
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
