"""The fuzz suite on the module surface: generated HLO text modules, and `--inputs` npz files good and damaged,
through `graphcost rank` and `graphcost profile` (strategies in `modules.py`).

Each case runs the command in a fresh process under the CLI suite's address-space cap
(`deep.DEEP_ADDRESS_SPACE_GB`), so a signal (XLA's SIGSEGV, an abort) is seen as such, and must end within
`LIMIT_S` with exit 0, or exit 1 and exactly one ``error:`` line, never a traceback. A module with a custom
call nobody registered must be refused; a good npz must be taken (exit 0) where its module is.

CI draws a few cases (a rank case costs seconds, a profile case tens of seconds); ``GRAPHCOST_FUZZ_DEEP=1``
draws `DEEP_RANK` / `DEEP_PROFILE`.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from deep import DEEP
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from modules import NPZ_DAMAGES, hlo_modules, write_inputs

LIMIT_S = 120.0
DEEP_RANK, DEEP_PROFILE = 40, 10  # 4.5 minutes on the 2-core machine at load 9 (BENCHMARKS.md, "Module size")
if DEEP:
    pytestmark = pytest.mark.timeout(0)


def _settings(ci: int, deep: int):
    return settings(max_examples=deep if DEEP else ci, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck),
                    phases=(Phase.explicit, Phase.generate))  # no shrinking: each case is a process of seconds


# The cap is set in the child itself (`deep.cap_address_space`, the deep mode's cap), before graphcost is imported: a
# ``preexec_fn`` would make this (JAX-importing, multithreaded) test process fork and run Python code in the fork,
# which JAX rightly warns may deadlock.
_LAUNCH = ("import resource, runpy, sys; sys.path.insert(0, sys.argv.pop(1)); from deep import cap_address_space; "
           "cap_address_space(); resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); sys.argv[0] = 'graphcost'; "
           "runpy.run_module('graphcost', run_name='__main__', alter_sys=True)")


def run_cli(*args) -> subprocess.CompletedProcess:
    """`graphcost ARGS` in a fresh process under the address-space cap."""
    here = os.path.dirname(os.path.abspath(__file__))  # where `deep` is
    return subprocess.run([sys.executable, "-c", _LAUNCH, here, *map(str, args)], capture_output=True, text=True,
                          timeout=LIMIT_S, env={**os.environ, "JAX_PLATFORMS": "cpu"})


def check_outcome(proc: subprocess.CompletedProcess) -> None:
    """Exit 0, or exit 1 with exactly one `error:` line; no traceback, no signal."""
    output = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1), (proc.returncode, output[-3000:])
    assert "Traceback" not in output, output[-3000:]
    if proc.returncode == 1:
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, output[-3000:]


@_settings(ci=4, deep=DEEP_RANK)
@given(module=hlo_modules(), damage=st.sampled_from(NPZ_DAMAGES), with_inputs=st.booleans())
def test_rank_of_generated_modules_and_inputs(tmp_path_factory, module, damage, with_inputs):
    tmp = tmp_path_factory.mktemp("mod")
    path = tmp / "m.hlo"
    path.write_text(module.text)
    args = ["rank", path, "--configs", "2", "--format", "json"]
    if with_inputs:
        args += ["--inputs", write_inputs(tmp / "in.npz", module.params, damage, seed=len(module.text))]
    proc = run_cli(*args)
    check_outcome(proc)
    if module.custom_call:
        assert proc.returncode == 1, proc.stderr[-2000:]
    elif not with_inputs or damage.startswith("good"):
        assert proc.returncode == 0, (module.text, proc.stderr[-2000:])
    else:
        assert proc.returncode == 1, (damage, proc.stderr[-2000:])


@_settings(ci=2, deep=DEEP_PROFILE)
@given(module=hlo_modules(), damage=st.sampled_from(NPZ_DAMAGES), with_inputs=st.booleans())
def test_profile_of_generated_modules_and_inputs(tmp_path_factory, module, damage, with_inputs):
    tmp = tmp_path_factory.mktemp("prof")
    path = tmp / "m.hlo"
    path.write_text(module.text)
    ref = str(path)
    if with_inputs:  # profile has no --inputs: the reference names them (what --inputs of rank and tune appends)
        ref += f"?inputs={write_inputs(tmp / 'in.npz', module.params, damage, seed=len(module.text))}"
    proc = run_cli("profile", ref, "--processes", "1")
    check_outcome(proc)
    if module.custom_call or (with_inputs and not damage.startswith("good")):
        assert proc.returncode == 1, proc.stderr[-2000:]
