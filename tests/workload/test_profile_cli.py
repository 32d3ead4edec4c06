"""`graphcost profile PROGRAM`: per-kernel times (cross-process), beside a tuned configuration."""

import json
import textwrap

import pytest

pytest.importorskip("jax")

from typer.testing import CliRunner  # noqa: E402

from graphcost.cli import app  # noqa: E402


@pytest.fixture()
def program(tmp_path):
    prog = tmp_path / "tiny.py"
    prog.write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        def make():
            def fn(x, w):
                return jax.lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c @ w), x).sum()
            return fn, (jnp.ones((48, 48)), jnp.ones((48, 48)))
    """))
    return f"{prog}:make"


def test_profile_prints_kernels_writes_json_and_plot(program, tmp_path):
    out, png = tmp_path / "p.json", tmp_path / "p.png"
    res = CliRunner().invoke(app, ["profile", program, "--processes", "2", "--json", str(out), "--plot", str(png)])
    assert res.exit_code == 0, res.output
    assert "listed: " in res.output and "while" in res.output
    assert "tiny.py:7: while/body" in res.output  # each kernel's source line and op name
    rows = [line.split() for line in res.output.splitlines() if line.startswith(("while", "wrapped_", "ynn_", "copy"))]
    shares = sum(float(r[2].rstrip("%")) for r in rows)
    listed = res.output.split("listed: ", 1)[1].splitlines()[0]
    assert shares == pytest.approx(float(listed.split(" = ")[1].split("%")[0]), abs=0.05 * len(rows) + 0.01)
    data = json.loads(out.read_text())
    assert data["processes"] == 2 and data["protocol"] == "cross-process"
    default = data["configs"][0]
    assert default["label"] == "default" and 0 < default["coverage"] <= 1.5
    loop = [k for k in default["kernels"] if k["kind"] == "while"]
    assert loop and not loop[0]["leaf"]
    assert any(k["parent"] == loop[0]["name"] and k["executions"] == 3 for k in default["kernels"])
    assert png.stat().st_size > 1000
    again = CliRunner().invoke(app, ["profile", program, "--json", str(out)])
    assert again.exit_code == 1 and "exists" in again.output  # nothing overwritten unless asked


def test_profile_beside_a_tuned_configuration(program, tmp_path):
    from graphcost.tuning.result import TunedConfig
    from graphcost.tuning.space import make_space

    space = make_space("flags", None)
    codes = [0] * len(space.dims)
    codes[[d.name for d in space.dims].index("ynn_library_fusion")] = 1
    best = tmp_path / "best.json"
    best.write_text(json.dumps(TunedConfig.of(space, tuple(codes)).to_json()))
    out = tmp_path / "p.json"
    res = CliRunner().invoke(app, ["profile", program, "--config", str(best), "--processes", "1", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "tuned:" in res.output and "default µs" in res.output and "tiny.py:7" in res.output
    assert [c["label"] for c in json.loads(out.read_text())["configs"]] == ["default", "tuned"]


def test_profile_bad_program_is_one_line(tmp_path):
    res = CliRunner().invoke(app, ["profile", str(tmp_path / "nope.py") + ":make"])
    assert res.exit_code == 1 and "no such file" in res.output and "Traceback" not in res.output


def test_profile_json_and_plot_on_one_file_is_refused_before_the_program_runs(program, tmp_path):
    """`--json X --plot X` printed "wrote X" twice and the PNG replaced the JSON (issue 81)."""
    same = tmp_path / "out.json"
    res = CliRunner().invoke(app, ["profile", program, "--json", str(same), "--plot", str(same)])
    assert res.exit_code == 1 and "--plot" in res.output and "the same file as --json" in res.output
    assert "Traceback" not in res.output and not same.exists()
