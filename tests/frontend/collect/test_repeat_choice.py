"""`collect --repeat --repeat-share`: which graphs a partial repeat measures; the round-robin over families it shares with `select_programs`."""
from graphcost.frontend.collect.local import repeat_choice


def _graphs(n_per_family: dict[str, int], repeated: tuple[str, ...] = ()) -> dict:
    graphs = {f"{fam}-{i}": {"family": fam} for fam, n in n_per_family.items() for i in range(n)}
    for name in repeated:
        graphs[name]["repeat"] = {"spearman_vs_label": 0.9}
    return graphs


def test_a_share_is_spread_over_families_and_rounds_up():
    graphs = _graphs({"a": 10, "b": 5, "c": 5, "d": 1})  # 21 graphs
    chosen = repeat_choice(graphs, 0.1, seed=0)  # ceil(2.1) = 3
    assert len(chosen) == 3 and len({graphs[n]["family"] for n in chosen}) == 3
    assert repeat_choice(graphs, 0.1, seed=0) == chosen  # seeded
    assert len(repeat_choice(graphs, 0.5, seed=0)) == 11
    assert len(repeat_choice(graphs, 1e-6, seed=0)) == 1  # at least one


def test_graphs_repeated_earlier_count_and_their_families_come_last():
    graphs = _graphs({"a": 4, "b": 4, "c": 4}, repeated=("a-0",))
    chosen = repeat_choice(graphs, 0.25, seed=1)  # target 3, one done
    assert len(chosen) == 2 and {graphs[n]["family"] for n in chosen} == {"b", "c"}
    assert "a-0" not in repeat_choice(graphs, 1.0, seed=1)
    done = _graphs({"a": 2}, repeated=("a-0", "a-1"))
    assert repeat_choice(done, 0.5, seed=0) == []


def test_round_robin_spreads_over_queues_and_stops_when_they_run_out():
    from graphcost.frontend.collect.jobs import round_robin, select_programs, list_programs

    assert round_robin([[1, 2, 3], [4], [5, 6]], 5) == [1, 4, 5, 2, 6]
    assert round_robin([[1], [2]], 10) == [1, 2]  # fewer when the queues run out
    n = len(list_programs("mlp"))
    chosen = select_programs("mlp", limit=n - 1)  # more than the cheaper half holds: was an endless loop
    assert 0 < len(chosen) < n and len({s.name for s in chosen}) == len(chosen)
