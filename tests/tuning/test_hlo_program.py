"""An XLA HLO module as the program (issue 67 item 2): `graphcost.frontend.programs.hlo_program` through
`load_program`, `graphcost tune MODULE.pb`, `graphcost rank MODULE.pb`, dump directories, --inputs and the
one-line refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.frontend.programs import hlo_program
from graphcost.frontend.programs.user_program import ProgramError, load_program, program_file

FAST = ["--rounds", "1", "--calls", "1", "--processes", "1", "--round-size", "2", "--no-kernels", "--no-ablation"]


def f(x, w, idx):
    return jnp.tanh(x @ w), jnp.take(x, idx, axis=0).sum()


ARGS = (np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8), np.linspace(1, -1, 24, dtype=np.float32).reshape(8, 3),
        np.array([3, 0], np.int32))


@pytest.fixture(scope="module")
def module_pb(tmp_path_factory):
    path = tmp_path_factory.mktemp("hlo") / "f.pb"
    path.write_bytes(jax.jit(f).lower(*ARGS).compiler_ir("hlo").as_serialized_hlo_module_proto())
    return path


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory):
    """A real XLA_FLAGS=--xla_dump_to dump (protos and text) of one jitted function."""
    out = tmp_path_factory.mktemp("dump")
    code = ("import jax, jax.numpy as jnp, numpy as np\n"
            "jax.jit(lambda x, w: jnp.tanh(x @ w))(np.ones((4, 8), np.float32), np.ones((8, 3), np.float32))\n")
    env = {**os.environ, "XLA_FLAGS": f"--xla_dump_to={out} --xla_dump_hlo_as_proto --xla_dump_hlo_as_text",
           "JAX_PLATFORMS": "cpu"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    return out


def _write_text_module(tmp_path, text, name="m.hlo", as_proto=False):
    path = tmp_path / name
    if as_proto:
        from jax._src.lib import xla_client as xc

        path.write_bytes(xc.hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto())
    else:
        path.write_text(text)
    return path


def test_a_module_runs_like_its_function_and_takes_compiler_options(module_pb):
    fn, args, name = load_program(str(module_pb))
    assert name == "jit_f" and [a.shape for a in args] == [(4, 8), (8, 3), (2,)]
    assert args[2].dtype == np.int32 and ((0 <= args[2]) & (args[2] < 2)).all()  # below the smallest dimension
    for got, want in zip(fn(*ARGS), f(*ARGS)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    again = load_program(str(module_pb))[1]
    assert all(np.array_equal(a, b) for a, b in zip(args, again))  # seeded: the workers build the same arguments
    lowered = jax.jit(fn).lower(*args)
    plain, unfused = lowered.compile().as_text(), lowered.compile({"xla_disable_hlo_passes": "fusion"}).as_text()
    assert plain != unfused  # per-compilation XLA options reach the module's compile
    assert program_file(str(module_pb)) == module_pb.resolve()


def test_inputs_npz_by_name_or_order_and_its_refusals(module_pb, tmp_path):
    good = tmp_path / "in.npz"
    np.savez(good, arg0=ARGS[0], arg1=ARGS[1], arg2=ARGS[2])
    fn, args, _ = load_program(hlo_program.with_inputs(str(module_pb), good))
    assert all(np.array_equal(a, b) for a, b in zip(args, ARGS))
    ordered = tmp_path / "ordered.npz"
    np.savez(ordered, *ARGS)  # arr_0, arr_1, arr_2
    assert np.array_equal(load_program(f"{module_pb}?inputs={ordered}")[1][2], ARGS[2])

    cases = {"shape": dict(arg0=ARGS[0][:2], arg1=ARGS[1], arg2=ARGS[2]),
             "dtype": dict(arg0=ARGS[0].astype(np.float64), arg1=ARGS[1], arg2=ARGS[2]),
             "names": dict(a=ARGS[0], b=ARGS[1], c=ARGS[2])}
    expect = {"shape": "array arg0 is float32[2, 8], but parameter 0 of f.pb is float32[4, 8]",
              "dtype": "array arg0 is float64[4, 8]", "names": "expected 3 arrays named arg0..arg2"}
    for what, arrays in cases.items():
        bad = tmp_path / f"{what}.npz"
        np.savez(bad, **arrays)
        with pytest.raises(ProgramError) as err:
            load_program(hlo_program.with_inputs(str(module_pb), bad))
        assert str(bad) in str(err.value) and expect[what] in str(err.value) and "\n" not in str(err.value)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, arg0=np.array([{"a": 1}], dtype=object), arg1=ARGS[1], arg2=ARGS[2])
    with pytest.raises(ProgramError, match="array arg0 is object"):
        load_program(hlo_program.with_inputs(str(module_pb), pickled))  # refused by its header, never loaded
    text = tmp_path / "text.npz"
    text.write_text("not an npz")
    with pytest.raises(ProgramError, match="not an npz archive"):
        load_program(hlo_program.with_inputs(str(module_pb), text))
    with pytest.raises(ValueError, match="only an XLA module program"):
        hlo_program.with_inputs("prog.py:make", good)


def test_hlo_text_parses_and_elided_constants_are_refused(tmp_path):
    text = jax.jit(f).lower(*ARGS).compiler_ir("hlo").as_hlo_text()
    fn, args, _ = load_program(str(_write_text_module(tmp_path, text)))
    np.testing.assert_allclose(np.asarray(fn(*ARGS)[0]), np.asarray(f(*ARGS)[0]), rtol=1e-5, atol=1e-6)
    big = np.arange(100, dtype=np.float32)
    elided = jax.jit(lambda x: x + big).lower(big).compiler_ir("hlo").as_hlo_text()
    assert "{...}" in elided
    with pytest.raises(ProgramError, match="elides constants.*--xla_dump_hlo_as_proto"):
        load_program(str(_write_text_module(tmp_path, elided, "elided.hlo")))
    with pytest.raises(ProgramError, match="not HLO text"):
        load_program(str(_write_text_module(tmp_path, "hello", "hello.hlo")))


def test_a_dump_directory_picks_the_module_before_optimizations(dump_dir, tmp_path):
    note = hlo_program.picked(str(dump_dir))
    assert note and "before_optimizations.hlo.pb" in note and "picked" in note
    fn, args, name = load_program(str(dump_dir))
    assert name == "jit__lambda" and [a.shape for a in args] == [(4, 8), (8, 3)]
    np.testing.assert_allclose(np.asarray(fn(*args)), np.tanh(args[0] @ args[1]), rtol=1e-5, atol=1e-6)
    after = next(dump_dir.glob("*after_optimizations.hlo.pb"))
    with pytest.raises(ProgramError, match="after XLA's optimizations.*before_optimizations"):
        load_program(str(after))
    two = tmp_path / "two"
    two.mkdir()
    pb = next(dump_dir.glob("*.before_optimizations.hlo.pb"))
    for i in (1, 3):
        (two / f"module_000{i}.jit_g.before_optimizations.hlo.pb").write_bytes(pb.read_bytes())
    with pytest.raises(ProgramError, match="2 modules before optimizations .*module_0001.*module_0003.*"
                                           "xla_dump_hlo_module_re"):
        load_program(str(two))


def test_64_bit_parameters_turn_on_x64(tmp_path):
    text = ("HloModule m64\n\nENTRY main {\n  p0 = f64[3]{0} parameter(0)\n  p1 = s64[3]{0} parameter(1)\n"
            "  c = f64[3]{0} convert(p1)\n  ROOT a = f64[3]{0} add(p0, c)\n}\n")
    was = jax.config.read("jax_enable_x64")
    try:
        fn, args, _ = load_program(str(_write_text_module(tmp_path, text)))
        assert args[0].dtype == np.float64 and args[1].dtype == np.int64
        np.testing.assert_array_equal(np.asarray(fn(*args)), args[0] + args[1])
    finally:
        jax.config.update("jax_enable_x64", was)


def test_tune_a_module_file_writes_best_json(module_pb, tmp_path):
    out = tmp_path / "tuned"
    res = CliRunner().invoke(app, ["tune", str(module_pb), "--budget", "2", "--strategy", "random", "--out", str(out),
                                   *FAST])
    assert res.exit_code == 0, res.output
    assert "jit_f: 2 configurations measured" in res.output
    best = json.loads((out / "best.json").read_text())
    assert best["space"] == "flags" and "compiler_options" in best


def test_the_final_checks_workers_rebuild_a_module_from_its_reference(dump_dir, tmp_path):
    from graphcost.measure.interleaved import TimingProtocol
    from graphcost.tuning.crossproc import remeasure_cross_process
    from graphcost.tuning.space import FlagSpace

    default = FlagSpace().default()
    inputs = tmp_path / "in.npz"
    np.savez(inputs, np.ones((4, 8), np.float32), np.ones((8, 3), np.float32))
    rem = remeasure_cross_process(hlo_program.with_inputs(str(dump_dir), inputs), "flags",
                                  [default, (1, *default[1:])], processes=1, protocol=TimingProtocol(rounds=1, calls=1, warmup=1))
    assert rem.runtime_ns.shape == (1, 2) and (rem.runtime_ns > 0).all() and rem.protocol == "cross-process"


def test_collect_a_module_file_and_resume(module_pb, tmp_path):
    """graphcost collect --programs MODULE.pb: the module measured in fresh processes (rebuilt from its reference),
    a flag graph of family hlo in the manifest; a second run finds it done."""
    spec = hlo_program.module_spec(str(module_pb))
    assert spec.family == "hlo" and spec.name.startswith("hlo-f-") and spec.hparams["module"] == str(module_pb.resolve())
    assert hlo_program.module_spec(str(module_pb)).name == spec.name  # the same module: the same name
    out = tmp_path / "coll"
    cmd = ["collect", "--programs", f"{module_pb},mlp-d2-w64-b8-fwd", "--space", "flags", "--configs", "2",
           "--rounds", "1", "--calls", "1", "--warmup", "1", "--processes", "1", "--max-wait", "0", "--out", str(out)]
    res = CliRunner().invoke(app, cmd[:3] + ["--list"])
    assert res.exit_code == 0 and spec.name in res.output.split() and "mlp-d2-w64-b8-fwd" in res.output.split()
    cmd[2] = str(module_pb)
    res = CliRunner().invoke(app, cmd)
    assert res.exit_code == 0, res.output
    entry = json.loads((out / "manifest.json").read_text())["graphs"][spec.name]
    assert entry["family"] == "hlo" and entry["hparams"] == {"module": str(module_pb.resolve())}
    with np.load(out / entry["file"]) as g:
        assert g["config_feat"].shape[0] == 2 and (g["config_runtime"] > 0).all()
    res = CliRunner().invoke(app, cmd)
    assert res.exit_code == 0, res.output  # resumed: nothing left to measure
    layout = CliRunner().invoke(app, [*cmd[:-1], str(tmp_path / "layout")] + ["--space", "layout"])
    assert "collect it with --space flags" in layout.output  # a module has no layout sites: skipped, and why


def test_rank_a_module_file(module_pb):
    res = CliRunner().invoke(app, ["rank", str(module_pb), "--configs", "3"])
    assert res.exit_code == 0, res.output
    assert "(default)" in res.output and "ranking" in res.output


@pytest.mark.parametrize("case", ["missing", "not_a_proto", "empty_dir", "tuple_param", "token_param", "inputs_on_py"])
def test_bad_modules_are_one_line_errors(tmp_path, case):
    from cli_asserts import one_line_error

    target, extra, needles = None, [], []
    if case == "missing":
        target, needles = tmp_path / "nope.pb", ["nope.pb", "no such file"]
    elif case == "not_a_proto":
        target = tmp_path / "junk.pb"
        target.write_bytes(b"\x01\x02 this is no protobuf")
        needles = ["junk.pb", "not a usable HloModuleProto"]
    elif case == "empty_dir":
        target = tmp_path / "dump"
        target.mkdir()
        needles = ["dump", "no HLO module before optimizations", "--xla_dump_hlo_as_proto"]
    elif case == "tuple_param":
        target = _write_text_module(tmp_path, "HloModule t\n\nENTRY main {\n  p = (f32[2]{0}, f32[2]{0}) parameter(0)\n"
                                    "  ROOT g = f32[2]{0} get-tuple-element(p), index=0\n}\n", "t.pb", as_proto=True)
        needles = ["t.pb", "parameter 0 is a tuple"]
    elif case == "token_param":
        target = _write_text_module(tmp_path, "HloModule k\n\nENTRY main {\n  p = f32[2]{0} parameter(0)\n"
                                    "  t = token[] parameter(1)\n  ROOT n = f32[2]{0} negate(p)\n}\n", "k.pb", as_proto=True)
        needles = ["k.pb", "parameter 1 is a token"]
    else:
        (tmp_path / "p.py").write_text("def make():\n    return (lambda x: x), (1.0,)\n")
        target, extra, needles = f"{tmp_path / 'p.py'}:make", ["--inputs", str(tmp_path / "in.npz")], ["only an XLA module"]
    one_line_error(CliRunner().invoke(app, ["rank", str(target), *extra]), *needles)
    if case in ("missing", "inputs_on_py"):  # tune: the same line (its fresh-process check reports it)
        one_line_error(CliRunner().invoke(app, ["tune", str(target), *extra, "--out", str(tmp_path / "o"), *FAST]),
                       *needles)


def _npy_header(shape, dtype="<f4") -> bytes:
    """An .npy file's magic and header declaring `shape`, with no data after it."""
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


@pytest.mark.parametrize("case", ["fifo", "bare_npy", "truncated", "declared_huge", "zip_bomb"])
def test_hostile_inputs_are_refused_before_anything_is_loaded(module_pb, tmp_path, case):
    """Module inputs from outside: a FIFO, a bare .npy, a truncated archive, a member whose header declares
    10^12 elements, a member that inflates far past its parameter (issue 81) are one line each, read no data."""
    import zipfile

    bad = tmp_path / "in.npz"
    if case == "fifo":
        os.mkfifo(bad)
    elif case == "bare_npy":
        with open(bad, "wb") as fh:
            np.save(fh, ARGS[0])
    elif case == "truncated":
        np.savez(bad, *ARGS)
        bad.write_bytes(bad.read_bytes()[:200])
    elif case == "declared_huge":
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr("arg0.npy", _npy_header((1_000_000, 1_000_000)) + b"\0" * 64)
            z.writestr("arg1.npy", _npy_header((8, 3)) + ARGS[1].tobytes())
            z.writestr("arg2.npy", _npy_header((2,), "<i4") + ARGS[2].tobytes())
    else:
        np.savez_compressed(bad, arg0=np.zeros((4096, 4096), np.float32), arg1=ARGS[1], arg2=ARGS[2])
    expect = {"fifo": "not a regular file", "bare_npy": "not an npz archive", "truncated": "not an npz archive",
              "declared_huge": "array arg0 is float32[1000000, 1000000], but parameter 0 of f.pb is float32[4, 8]",
              "zip_bomb": "array arg0 holds 67108992 bytes uncompressed, but parameter 0 of f.pb"}[case]
    with pytest.raises(ProgramError) as err:
        load_program(hlo_program.with_inputs(str(module_pb), bad))
    assert expect in str(err.value) and "\n" not in str(err.value) and str(bad) in str(err.value)


def test_a_declared_huge_parameter_is_refused_before_its_arguments_are_generated(tmp_path):
    path = _write_text_module(tmp_path, "HloModule big\n\nENTRY main {\n  p = f32[100000,100000] parameter(0)\n"
                                        "  ROOT n = f32[100000,100000] negate(p)\n}\n")
    with pytest.raises(ProgramError, match=r"take 40 GB \(parameter 0: float32\[100000, 100000\]\)"):
        load_program(str(path))


@pytest.mark.parametrize("case", ["fifo", "dev_zero"])
def test_a_module_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path, case):
    """A FIFO (a hang) or a link to /dev/zero (an endless read) as the module: one line (issue 81)."""
    path = tmp_path / "m.pb"
    if case == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(ProgramError, match="not a regular file"):
        load_program(str(path))
