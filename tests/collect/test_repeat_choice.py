"""`collect --repeat --repeat-share`: which graphs a partial repeat measures; the round-robin over families it shares with `select_programs`."""
from graphcost.collect.local import repeat_choice


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
    from graphcost.collect.jobs import round_robin, select_programs, list_programs

    assert round_robin([[1, 2, 3], [4], [5, 6]], 5) == [1, 4, 5, 2, 6]
    assert round_robin([[1], [2]], 10) == [1, 2]  # fewer when the queues run out
    n = len(list_programs("mlp"))
    chosen = select_programs("mlp", limit=n - 1)  # more than the cheaper half holds: was an endless loop
    assert 0 < len(chosen) < n and len({s.name for s in chosen}) == len(chosen)


def _dated(graphs: dict, start: str, minutes_apart: int) -> None:
    from datetime import datetime, timedelta

    t0 = datetime.strptime(start, "%Y-%m-%dT%H:%M")
    for k, name in enumerate(graphs):
        graphs[name]["date_utc"] = (t0 + timedelta(minutes=k * minutes_apart)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_each_measuring_session_gets_its_own_share():
    from graphcost.collect.local import measuring_sessions

    early = _graphs({"a": 10, "b": 10}, repeated=("a-0", "a-1", "b-0", "b-1"))  # 20 graphs, 4 repeated
    _dated(early, "2026-11-26T10:00", 2)
    late = {f"late-{k}": v for k, v in _graphs({"c": 6, "d": 4}).items()}  # 10 graphs, two hours later
    _dated(late, "2026-11-26T13:00", 3)
    undated = {"u-0": {"family": "u"}, "u-1": {"family": "u", "date_utc": "yesterday"}}
    graphs = {**early, **late, **undated}
    sessions = measuring_sessions(graphs)
    assert [sorted(s) for s in sessions] == [sorted(undated), sorted(early), sorted(late)]
    chosen = repeat_choice(graphs, 0.1, seed=0)
    # the early session's 4 repeats cover far more than its share, yet the late one still gets
    # ceil(0.1 * 10) = 1 and the undated one its minimum of 1: a 10% share overall would have asked for none
    assert sorted(graphs[n]["family"] for n in chosen) in (["c", "u"], ["d", "u"])
    assert len(repeat_choice(graphs, 0.3, seed=0)) == 1 + 2 + 3  # undated 1, early 6-4 = 2, late 3
