"""--precision auto: bf16 only on a CPU that multiplies bfloat16 natively (AVX512-BF16 / AMX), a
warning when bf16 is asked for where it is emulated (issue 20 part 9)."""

import pytest
import torch
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.models import precision as P
from graphcost.models.tgraph import TGraph, TGraphConfig
from graphcost.inference.ensemble import EnsemblePredictor
from train_stubs import TinyConfig, TinyModel


@pytest.fixture
def cpu_flags(monkeypatch):
    """Pretend the CPU has the given bf16 flags (the capability is cached: cleared around the test)."""

    def set_flags(**flags):
        monkeypatch.setattr(P, "_cpu_flags", lambda: {f: flags.get(f, False) for f in P.NATIVE_BF16_FLAGS})
        P.cpu_capability.cache_clear()

    yield set_flags
    P.cpu_capability.cache_clear()


def test_auto_is_bf16_only_on_a_native_bf16_cpu_and_for_models_that_offer_it(cpu_flags):
    tgraph, tiny = TGraph("layout", TGraphConfig.small()), TinyModel(TinyConfig())
    cpu_flags(avx512_bf16=True)
    assert P.cpu_capability()["native_bf16"] and P.cpu_capability()["bf16_flags"] == ["avx512_bf16"]
    assert P.resolve_precision("auto", "cpu", [tgraph]) == "bf16"
    assert P.resolve_precision("auto", "cpu", [tgraph, tiny]) == "fp32"  # bf16 is TGraph-only
    assert P.resolve_precision("auto", torch.device("cuda"), [tgraph]) == "fp32"  # GPU: preprocessing-bound
    assert EnsemblePredictor([(tgraph, None)], "layout", precision="auto").precision == "bf16"
    assert EnsemblePredictor([(tiny, None)], "layout", precision="auto").precision == "fp32"  # no error
    assert P.emulated_bf16_warning("bf16", "cpu") is None
    cpu_flags(amx_bf16=True)
    assert P.resolve_precision("auto", "cpu", [tgraph]) == "bf16"
    cpu_flags()  # an AVX2-only CPU
    assert not P.cpu_capability()["native_bf16"]
    assert P.resolve_precision("auto", "cpu", [tgraph]) == "fp32"
    assert P.resolve_precision("bf16", "cpu", [tgraph]) == "bf16"  # asked for: kept, with a warning
    assert "emulated" in P.emulated_bf16_warning("bf16", "cpu")
    assert P.emulated_bf16_warning("fp32", "cpu") is None and P.emulated_bf16_warning("bf16", "cuda") is None
    with pytest.raises(ValueError, match="auto, fp32, bf16"):
        P.resolve_precision("fp16")


def test_capability_names_torchs_isa_and_reads_older_torchs_flags(monkeypatch):
    P.cpu_capability.cache_clear()
    try:
        assert P.cpu_capability()["isa"] in {"DEFAULT", "VSX", "Z VECTOR", "NO AVX", "AVX2", "AVX512", "SVE256"}
        monkeypatch.delattr(torch.cpu, "get_capabilities", raising=False)  # torch < 2.9
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True, raising=False)
        assert P._cpu_flags()["amx_bf16"] and not P._cpu_flags()["avx512_bf16"]
        monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported")  # neither API (torch 2.4): /proc/cpuinfo
        monkeypatch.setattr(P.Path, "read_text", lambda self: "flags\t: fpu avx2 avx512f avx512_bf16 fma")
        assert P._cpu_flags() == {"amx_bf16": False, "avx512_bf16": True, "bf16": False, "sve_bf16": False}
    finally:
        P.cpu_capability.cache_clear()


def test_cli_warns_when_bf16_is_emulated_and_defaults_to_auto(cpu_flags, tmp_path):
    cpu_flags()
    r = CliRunner().invoke(app, ["rank", str(tmp_path / "none.pt"), str(tmp_path / "g.npz"), "--precision", "bf16",
                                 "--device", "cpu"])  # fmt: skip
    assert "warning: --precision bf16 on a CPU without native bfloat16" in r.output
    assert r.exit_code == 1  # then the missing model is the error
    r = CliRunner().invoke(app, ["rank", str(tmp_path / "none.pt"), str(tmp_path / "g.npz"), "--device", "cpu"])
    assert "warning" not in r.output and r.exit_code == 1
    r = CliRunner().invoke(app, ["rank", "--help"])
    assert "auto|fp32|bf16" in r.output  # the choices, listed once by the option itself
