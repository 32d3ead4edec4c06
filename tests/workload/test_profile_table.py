"""`graphcost profile`'s table adds up: shares are of the call time shown, the listed kernels' times and shares sum
to the coverage line, every row says where in the user's code the kernel came from, and the JSON says the same."""

import re

import pytest

from graphcost.frontend.hlo.origins import Origin, kernel_origins
from graphcost.kernels.times import ConfigProfile, KernelTime, ProgramProfile
from graphcost.workload.profile import WIDTH, profile_table

ROW = re.compile(r"^(\S+)\s+(\S+)\s+([\d.]+)%\s+([\d.]+)\s+(\d+)  (.*)$")


def _profile(runtime_us=3196.7, wall_us=4278.0, tuned=False) -> ProgramProfile:
    """The newcomer's run: a 3196.7 µs call, profiled at 4278 µs, its largest kernel 1249.3 µs of the profiled call."""
    def kernels(scale):
        where = Origin(("jit(block)/conv_general_dilated",), (("/home/me/block.py", 42),))
        ks = [KernelTime("ynn_fusion.5", "fusion:kCustom", 1249.3e3 * scale, 1, True, "a", "", where),
              KernelTime("while.1", "while", 40e3 * scale, 1, False, "b", "",
                         Origin(("jit(block)/while",), (("/home/me/block.py", 50),)))]
        ks += [KernelTime(f"loop_fusion.{i}", "fusion:kLoop", (100 - 3 * i) * 1e3 * scale, 3, True, f"c{i}", "while.1",
                          Origin((f"jit(block)/while/body/layer_{i}/add",), (("/home/me/layers.py", 10 + i),)))
               for i in range(20)]
        ks.append(KernelTime("copy.3", "copy", 5e3 * scale, 1, True, "d"))  # XLA's own: no metadata
        return sorted(ks, key=lambda k: -k.self_ns)

    configs = [ConfigProfile("default", runtime_us * 1e3, wall_us * 1e3, kernels(1.0))]
    if tuned:
        configs.append(ConfigProfile("tuned", runtime_us * 0.8e3, wall_us * 0.8e3, kernels(0.8)))
    return ProgramProfile("block.py:make", 3, "cross-process", configs)


def _rows(lines):
    return [m.groups() for m in map(ROW.match, lines) if m]


def test_shares_are_of_the_call_shown_and_the_listed_kernels_sum_to_the_coverage_line():
    result = _profile()
    lines = profile_table(result, top=15)
    assert lines[0].startswith("block.py:make: 3196.7 µs per call (default, median of 3 processes)")
    rows = _rows(lines)
    assert len(rows) == 15
    top = rows[0]
    assert top[0] == "ynn_fusion.5" and abs(float(top[3]) / 3196.7 - float(top[2]) / 100) < 1e-3
    assert float(top[2]) == pytest.approx(100 * 1249.3 / 4278.0, abs=0.05)  # its share of the call
    listed = next(line for line in lines if line.startswith("listed:"))
    m = re.search(r"15 of 23 kernels, ([\d.]+) µs = ([\d.]+)% of the call", listed)
    assert m, listed
    assert sum(float(r[3]) for r in rows) == pytest.approx(float(m.group(1)), abs=0.05 * len(rows))
    assert sum(float(r[2]) for r in rows) == pytest.approx(float(m.group(2)), abs=0.05 * len(rows))
    assert float(m.group(1)) / 3196.7 == pytest.approx(float(m.group(2)) / 100, abs=1e-3)
    every = next(line for line in lines if line.startswith("all kernels:"))
    base = result.configs[0]
    assert f"{base.kernel_share:.1%}" in every and f"leaf kernels {base.coverage:.1%}" in every
    assert "argument handling" in every  # the kernels take less than the call


def test_every_row_says_where_the_kernel_came_from_and_every_line_fits_120_columns():
    for tuned in (False, True):
        lines = profile_table(_profile(tuned=tuned), top=50)
        assert all(len(line) <= WIDTH for line in lines), max(lines, key=len)
        text = "\n".join(lines)
        assert "block.py:42: conv_general" in text and "layers.py:10: while/body/lay" in text  # cut to fit beside
        assert tuned or ("block.py:42: conv_general_dilated" in text and "layers.py:10: while/body/layer_0/add" in text)
        assert "jit(block)" not in text  # the outer jit every op name starts with is dropped
        copy_row = next(line for line in lines if line.startswith("copy.3"))
        assert copy_row.rstrip().endswith("-")  # XLA's own copy: no op of the user's


def test_beside_a_tuned_configuration_each_side_is_stated_at_its_own_call():
    lines = profile_table(_profile(tuned=True), top=5)
    assert lines[1].startswith("tuned: 2557.4 µs per call (1.250x)")
    row = next(line for line in lines if line.startswith("ynn_fusion.5"))
    default_us, tuned_us = map(float, re.findall(r"\s(\d+\.\d)\s", row)[:2])
    assert default_us == pytest.approx(1249.3 * 3196.7 / 4278.0, abs=0.1)
    assert tuned_us == pytest.approx(0.8 * 1249.3 * 3196.7 / 4278.0, abs=0.1)
    header = next(i for i, line in enumerate(lines) if line.startswith("kernel (default)"))
    rows = lines[header + 1:header + 6]
    for label, cut in (("default", slice(42, 52)), ("tuned", slice(53, 62))):
        shown = [float(r[cut]) for r in rows if r[cut].strip() != "-"]
        m = re.search(rf"listed, {label}: (\d+) of \d+ kernels, ([\d.]+) µs", "\n".join(lines))
        assert m and int(m.group(1)) == len(shown) and float(m.group(2)) == pytest.approx(sum(shown), abs=0.3)


def test_the_json_states_the_table_s_numbers():
    result = _profile()
    data = result.to_json()["configs"][0]
    lines = profile_table(result, top=15)
    for name, _, share, us, _, _ in _rows(lines):
        k = next(k for k in data["kernels"] if k["name"] == name)
        assert f"{100 * k['share']:.1f}" == share or abs(100 * k["share"] - float(share)) <= 0.051
        assert abs(k["call_ns"] / 1e3 - float(us)) <= 0.051
        assert k["call_ns"] == pytest.approx(k["share"] * data["runtime_ns"], abs=6e-5 * data["runtime_ns"])  # 4 digits
    assert sum(k["share"] for k in data["kernels"] if k["leaf"]) == pytest.approx(data["coverage"], abs=1e-3)
    assert sum(k["share"] for k in data["kernels"]) == pytest.approx(data["kernel_share"], abs=1e-3)
    top = data["kernels"][0]
    assert top["ops"] == ["jit(block)/conv_general_dilated"] and top["sources"] == ["/home/me/block.py:42"]


def test_kernels_that_run_side_by_side_are_said_to_add_to_more_than_the_call():
    result = _profile(wall_us=1000.0)
    assert result.configs[0].kernel_share > 1
    assert "side by side" in profile_table(result)[-1]


MODULE = """HloModule jit_fn, is_scheduled=true, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

FileNames
1 "/home/me/prog.py"

FunctionNames
1 "fn"

FileLocations
1 {file_name_id=1 function_name_id=1 line=6 end_line=6 column=1 end_column=9}
2 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=1 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=1}


%region_0.1 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0), metadata={op_name="reduce_sum"}
  %b = f32[] parameter(1), metadata={op_name="reduce_sum"}
  ROOT %add.0 = f32[] add(%a, %b), metadata={op_name="jit(fn)/reduce_sum" stack_frame_id=2}
}

%fused_computation (param_0: f32[8]) -> f32[8] {
  %param_0 = f32[8]{0} parameter(0)
  %tanh.0 = f32[8]{0} tanh(%param_0), metadata={op_name="jit(fn)/tanh" stack_frame_id=1}
  ROOT %exp.0 = f32[8]{0} exponential(%tanh.0), metadata={op_name="jit(fn)/exp" stack_frame_id=2}
}

ENTRY %main.4 (x.1: f32[8]) -> f32[8] {
  %x.1 = f32[8]{0} parameter(0), metadata={op_name="x"}
  %loop_fusion = f32[8]{0} fusion(%x.1), kind=kLoop, calls=%fused_computation, metadata={op_name="jit(fn)/exp" \
stack_frame_id=2}
  %negate.1 = f32[8]{0} negate(%loop_fusion), metadata={op_name="jit(fn)/neg" source_file="/old/jax.py" source_line=9}
  ROOT %copy.1 = f32[8]{0} copy(%negate.1)
}
""".replace("\\\n", "")


def test_kernel_origins_read_op_names_and_lines_from_the_optimized_module():
    origins = kernel_origins(MODULE)
    fusion = origins["loop_fusion"]
    assert fusion.ops == ("jit(fn)/tanh", "jit(fn)/exp")  # the fused instructions', in their order
    assert fusion.sources == (("/home/me/prog.py", 6), ("/home/me/prog.py", 7))  # through the stack frame table
    assert fusion.lines() == "prog.py:6,7" and fusion.short_ops() == ["tanh", "exp"]
    assert origins["negate.1"].sources == (("/old/jax.py", 9),)  # inline source_file / source_line
    assert origins["copy.1"] == Origin()  # no metadata
    assert Origin(("jit(block)/jit(relu)/max", "jit(block)/add")).short_ops() == ["relu/max", "add"]
    assert kernel_origins("HloModule m\n\nENTRY %e (p: f32[]) -> f32[] {\n  ROOT %p = f32[] parameter(0)\n}\n") == {
        "p": Origin()}
