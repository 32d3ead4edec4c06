"""Per-kernel times from profiler events: nesting of loops, assignment to calls, medians over calls."""

import numpy as np
import pytest

from graphcost.measure.kernel_profile import (ThunkEvent, assign_to_calls, combine_calls, is_control_flow,
                                                       profile_arrays, repeats_for, resolve_nesting)


def test_a_while_loop_encloses_its_body_and_keeps_only_what_it_adds():
    # while.1 runs 3 iterations of (fusion, ynn_fusion); a copy runs before it, a nested while inside the 2nd iteration
    events = [ThunkEvent("copy.1", 0, 10),
              ThunkEvent("while.1", 10, 100),
              ThunkEvent("fusion", 12, 10), ThunkEvent("ynn_fusion", 22, 20),
              ThunkEvent("fusion", 43, 10), ThunkEvent("while.2", 53, 20), ThunkEvent("add_fusion", 55, 15),
              ThunkEvent("fusion", 75, 10), ThunkEvent("ynn_fusion", 85, 20)]
    k = resolve_nesting(events)
    assert k["copy.1"].leaf and k["copy.1"].self_ns == 10 and k["copy.1"].parent == ""
    assert k["fusion"].count == 3 and k["fusion"].self_ns == 30 and k["fusion"].parent == "while.1"
    assert k["ynn_fusion"].count == 2 and k["ynn_fusion"].self_ns == 40
    assert k["add_fusion"].parent == "while.2" and k["add_fusion"].leaf
    assert not k["while.2"].leaf and k["while.2"].self_ns == 5  # 20 - 15
    # while.1's direct children: 3 fusions, 2 ynn, while.2 = 30 + 40 + 20 = 90 of its 100
    assert not k["while.1"].leaf and k["while.1"].self_ns == pytest.approx(10)
    # leaf times + what the parents add = the span of the thunks (0..110), nothing counted twice
    assert sum(x.self_ns for x in k.values()) == pytest.approx(110)


def test_kernels_that_overlap_without_control_flow_are_not_nested():
    # the executor runs independent thunks side by side: a long library fusion holds a short one's interval
    k = resolve_nesting([ThunkEvent("ynn_fusion.1", 0, 100), ThunkEvent("ynn_fusion.2", 10, 20)])
    assert k["ynn_fusion.1"].leaf and k["ynn_fusion.1"].self_ns == 100 and k["ynn_fusion.2"].parent == ""
    assert is_control_flow("while.3") and is_control_flow("conditional") and not is_control_flow("while_fusion")


def test_custom_enclosing_set():
    k = resolve_nesting([ThunkEvent("loop", 0, 50), ThunkEvent("body", 10, 20)], encloses=lambda n: n == "loop")
    assert k["body"].parent == "loop" and k["loop"].self_ns == 30


def test_events_go_to_the_call_whose_annotation_holds_their_start():
    annotations = [("graphcost:0:0", 0, 100), ("graphcost:0:1", 200, 100), ("graphcost:1:0", 400, 50),
                   ("other", 0, 1000), ("graphcost:x:y", 0, 5)]
    thunks = [("a", 10, 5), ("b", 20, 70), ("a", 210, 8), ("c", 410, 30), ("stray", 350, 10)]
    calls = assign_to_calls(annotations, thunks)
    assert set(calls) == {(0, 0), (0, 1), (1, 0)}
    assert [e.name for e in calls[(0, 0)][1]] == ["a", "b"] and calls[(0, 0)][0] == 100
    assert [e.name for e in calls[(1, 0)][1]] == ["c"]


def test_medians_over_calls_count_a_missing_kernel_as_zero():
    per_call = [resolve_nesting([ThunkEvent("a", 0, 10), ThunkEvent("b", 10, 4)]),
                resolve_nesting([ThunkEvent("a", 0, 12)]),
                resolve_nesting([ThunkEvent("a", 0, 30), ThunkEvent("b", 30, 6)])]
    p = combine_calls(per_call, [20, 25, 40])
    assert p.kernels["a"].self_ns == 12 and p.kernels["b"].self_ns == 4 and p.wall_ns == 25 and p.calls == 3
    assert p.coverage == pytest.approx(16 / 25) and [k.name for k in p.top(1)] == ["a"]
    arrays = profile_arrays({1: p}, configs=2)
    assert arrays["kernel_name"].tolist() == ["a", "b"] and arrays["kernel_config"].tolist() == [1, 1]
    assert np.isnan(arrays["profile_wall_ns"][0]) and arrays["profile_calls"].tolist() == [0, 3]


def test_repeats_fill_the_target_within_bounds():
    assert repeats_for(1e6) == 20 and repeats_for(10e6) == 3 and repeats_for(5e6) == 6 and repeats_for(0) == 3


def test_profile_of_a_jitted_loop_resolves_its_body():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from graphcost.measure.kernel_profile import profile_calls

    def f(x, w):
        return jax.lax.fori_loop(0, 4, lambda i, c: jnp.tanh(c @ w), x).sum()

    x = jnp.ones((64, 64))
    exe = jax.jit(f).lower(x, x).compile()
    p = profile_calls([lambda: exe(x, x)], [3])[0]
    loops = [k for k in p.kernels.values() if k.name.startswith("while")]
    assert loops and not loops[0].leaf
    body = [k for k in p.kernels.values() if k.parent == loops[0].name]
    assert body and max(k.count for k in body) == 4  # the body's kernels run once per iteration
    assert 0 < p.leaf_ns <= p.wall_ns


def test_peaks_are_measured_and_positive():
    pytest.importorskip("jax")
    from graphcost.measure.peaks import measure_peaks

    peaks = measure_peaks(n=128, mib=4, calls=2)
    assert peaks["peak_flops"] > 1e6 and peaks["peak_bytes_per_s"] > 1e6 and peaks["cpu_model"]
