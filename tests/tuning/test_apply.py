"""Applying a tuning result: compile_with really compiles with the chosen options and layouts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphcost import compile_with
from graphcost.frontend.programs.user_program import TuneProgram
from graphcost.tuning.space import LayoutSpace, make_space
from graphcost.tuning.result import TunedConfig, load_best


def _fn(a, b):
    import jax.numpy as jnp

    return jnp.tanh(a @ b)


def _args():
    import jax.numpy as jnp

    return jnp.linspace(-1.0, 1.0, 8 * 16).reshape(8, 16), jnp.linspace(0.0, 1.0, 16 * 4).reshape(16, 4)


def test_layouts_reach_the_compiled_module_and_outputs_match():
    a, b = _args()
    space = LayoutSpace(TuneProgram(_fn, (a, b)))
    cfg = TunedConfig.of(space, (1, 0, 0))  # the dot's output column-major
    assert cfg.layouts == [{"site": 0, "primitive": "dot_general", "tensor": "out", "minor_to_major": [0, 1]}]
    fast = compile_with(_fn, cfg)
    np.testing.assert_allclose(np.asarray(fast(a, b)), np.asarray(_fn(a, b)), rtol=1e-6)
    (exe,) = fast.executables.values()
    assert "f32[8,4]{0,1}" in exe.as_text()  # the constrained layout is in the optimized module
    plain = compile_with(_fn, TunedConfig("layout", [0, 0, 0]))  # no layout moved: jax.jit itself
    np.testing.assert_allclose(np.asarray(plain(a, b)), np.asarray(_fn(a, b)), rtol=1e-6)
    assert "f32[8,4]{0,1}" not in plain.lower(a, b).compile().as_text()


def test_flags_only_is_jax_jit_with_the_options():
    """Issue 67: a flag configuration applied is jax.jit(fn, compiler_options=...) itself, so a user's timing of it
    against plain jax.jit(fn) pays no wrapper (it did: flattening the arguments on every call)."""
    import jax

    a, b = _args()
    tuned = compile_with(_fn, {"compiler_options": {"xla_backend_optimization_level": 1}})
    assert type(tuned) is type(jax.jit(_fn)) and tuned.config.compiler_options == {"xla_backend_optimization_level": 1}
    np.testing.assert_allclose(np.asarray(tuned(a, b)), np.asarray(_fn(a, b)), rtol=1e-5)
    with pytest.raises(Exception, match="xla_graphcost_not_an_option"):  # the options reach XLA through jit
        jax.jit(_fn, compiler_options={"xla_graphcost_not_an_option": 1})(a, b)


def test_compiler_options_are_passed_to_xla():
    a, b = _args()
    with pytest.raises(Exception, match="xla_graphcost_not_an_option"):
        compile_with(_fn, {"compiler_options": {"xla_graphcost_not_an_option": 1}})(a, b)
    tuned = compile_with(_fn, {"compiler_options": {"xla_backend_optimization_level": 1}})
    np.testing.assert_allclose(np.asarray(tuned(a, b)), np.asarray(_fn(a, b)), rtol=1e-5)


def test_best_json_round_trip_and_bad_files(tmp_path):
    a, b = _args()
    space = make_space("both", TuneProgram(_fn, (a, b)))
    codes = tuple([0] * len(space.flags.dims)) + (0, 1, 0)
    cfg = TunedConfig.of(space, codes)
    path = tmp_path / "best.json"
    path.write_text(json.dumps(cfg.to_json()))
    assert load_best(path) == cfg
    np.testing.assert_allclose(np.asarray(compile_with(_fn, path)(a, b)), np.asarray(_fn(a, b)), rtol=1e-6)
    path.write_text(json.dumps({**cfg.to_json(), "layouts": "x"}))
    with pytest.raises(ValueError, match=r"best.json: field 'layouts' must be a list"):
        load_best(path)
    wrong = {**cfg.to_json(), "layouts": [{"site": 7, "primitive": "dot_general", "tensor": "out",
                                           "minor_to_major": [0, 1]}]}
    with pytest.raises(ValueError, match="no configurable tensor site7"):
        compile_with(_fn, wrong)(a, b)


LAYOUT = {"site": 0, "primitive": "dot_general", "tensor": "out", "minor_to_major": [0, 1]}


@pytest.mark.parametrize("change, field", [
    ({"layouts": ["not an object"]}, "layouts[0]"),
    ({"layouts": [{k: v for k, v in LAYOUT.items() if k != "site"}]}, "layouts[0].site' is missing"),
    ({"layouts": [{**LAYOUT, "minor_to_major": ["0", 1]}]}, "layouts[0].minor_to_major"),
    ({"layouts": [{**LAYOUT, "minor_to_major": [0.5, 1]}]}, "layouts[0].minor_to_major"),
    ({"layouts": [{**LAYOUT, "site": "0"}]}, "layouts[0].site"),
    ({"compiler_options": {"xla_backend_optimization_level": {"nested": 1}}},
     "compiler_options.xla_backend_optimization_level"),
    ({"codes": [0, "1"]}, "codes[1]"),
], ids=["layout-not-object", "no-site", "string-perm", "float-perm", "string-site", "nested-option", "string-code"])
def test_malformed_best_json_names_the_file_and_field(tmp_path, change, field):
    """issue 26: a malformed best.json raised a bare TypeError / KeyError from compile_with."""
    path = tmp_path / "best.json"
    path.write_text(json.dumps({**TunedConfig("layout", [1, 0, 0], layouts=[LAYOUT]).to_json(), **change}))
    with pytest.raises(ValueError) as info:
        compile_with(_fn, path)(*_args())
    assert str(path) in str(info.value) and field in str(info.value), str(info.value)


def test_unknown_xla_option_is_reported_by_compile_with_not_at_the_first_call(tmp_path):
    path = tmp_path / "best.json"
    path.write_text(json.dumps({**TunedConfig("flags", []).to_json(),  # no codes: [0] is refused since issue 36
                                "compiler_options": {"xla_graphcost_not_an_option": 1}}))
    with pytest.raises(ValueError, match=r"best.json: field 'compiler_options.xla_graphcost_not_an_option' is not "
                                         r"an option of the flag space"):
        compile_with(_fn, path)  # no call


@pytest.mark.parametrize("options, needle", [
    ({"xla_dump_to": "somewhere"}, "'compiler_options.xla_dump_to' is not an option of the flag space"),
    ({"xla_backend_optimization_level": 7}, "'compiler_options.xla_backend_optimization_level' is 7, not one of"),
    ({"xla_cpu_use_xnnpack": 0}, "'compiler_options.xla_cpu_use_xnnpack' is 0, not one of"),  # False, not 0
])
def test_options_outside_the_flag_space_are_never_applied(tmp_path, options, needle):
    """issue 65: a best.json holding "xla_dump_to" made XLA write files wherever the file said."""
    path = tmp_path / "best.json"
    path.write_text(json.dumps({**TunedConfig("flags", []).to_json(), "compiler_options": options}))
    with pytest.raises(ValueError, match=needle):
        compile_with(_fn, path)
    assert not (tmp_path / "somewhere").exists() and not Path("somewhere").exists()
