"""Inference precision: which one is fast on this machine, and what to record with a timing.

`--precision bf16` runs TGraph's per-configuration work in bfloat16 (`TGraph.score_chunked`). That is
fast only where the CPU multiplies bfloat16 natively: x86 with AVX512-BF16 or AMX (oneDNN's bf16
kernels), or an ARM CPU with the BF16 extension. Elsewhere PyTorch emulates it, and bf16 is several
times slower than fp32 (an AVX2-only AMD EPYC: 17.05 vs 2.41 ms per configuration on the pruned
10k-node graph). So the default is "auto": bf16 on a CPU with native bf16 when every model
can run it, fp32 otherwise. On CUDA "auto" is fp32: GPU ranking time is mostly CPU preprocessing,
and bf16 gains nothing end to end there (measured on an H100).

`torch.backends.cpu.get_cpu_capability()` names the vector ISA torch dispatches its own kernels to
("DEFAULT", "VSX", "Z VECTOR", "NO AVX", "AVX2", "AVX512", "SVE256"); "AVX512" does not imply
AVX512-BF16 (Skylake-X has one without the other), so bf16 support is read from the CPU's feature
flags (`torch.cpu.get_capabilities()`, older torch's `torch.cpu._is_*_supported`, /proc/cpuinfo).
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch

PRECISION_CHOICES = ("auto", "fp32", "bf16")
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16", "bf16", "sve_bf16")  # x86 AMX / AVX512-BF16, ARM BF16


def _cpu_flags() -> dict[str, bool]:
    """The CPU's bf16-relevant feature flags (see NATIVE_BF16_FLAGS)."""
    caps = getattr(torch.cpu, "get_capabilities", None)  # recent torch (2.13 has it, 2.4 does not)
    if caps is not None:
        found = caps()
        return {f: bool(found.get(f, False)) for f in NATIVE_BF16_FLAGS}
    old = {"avx512_bf16": "_is_avx512_bf16_supported", "amx_bf16": "_is_amx_tile_supported"}  # some older torch (not 2.4)
    if all(hasattr(torch.cpu, fn) for fn in old.values()):
        return {f: bool(getattr(torch.cpu, old[f])()) if f in old else False for f in NATIVE_BF16_FLAGS}
    try:  # neither API (torch 2.4): the Linux kernel's flag names ("bf16" is ARM's, in "Features")
        words = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        words = set()
    return {f: f in words for f in NATIVE_BF16_FLAGS}


@functools.lru_cache(maxsize=None)
def cpu_capability() -> dict:
    """{"isa": torch's CPU dispatch level, "bf16_flags": the native-bf16 flags present, "native_bf16":
    bool}; record it beside every CPU timing (a bf16 figure means nothing without it)."""
    flags = _cpu_flags()
    return {
        "isa": torch.backends.cpu.get_cpu_capability(),
        "bf16_flags": [f for f in NATIVE_BF16_FLAGS if flags[f]],
        "native_bf16": any(flags.values()),
    }


def describe_cpu() -> str:
    """One line for a benchmark's machine field, e.g. "torch CPU capability AVX2, bf16 emulated"."""
    cap = cpu_capability()
    bf16 = f"native bf16 ({', '.join(cap['bf16_flags'])})" if cap["native_bf16"] else "bf16 emulated"
    return f"torch CPU capability {cap['isa']}, {bf16}"


def _on_cpu(device: str | torch.device) -> bool:
    return torch.device(device).type == "cpu"


def resolve_precision(precision: str, device: str | torch.device = "cpu", models=()) -> str:
    """"fp32" or "bf16" for `precision` in PRECISION_CHOICES: "auto" is bf16 on a CPU with native bf16
    when every model offers it (`can_score_chunked`, TGraph), else fp32 (module docstring)."""
    if precision not in PRECISION_CHOICES:
        raise ValueError(f"precision must be one of {', '.join(PRECISION_CHOICES)}, got {precision!r}")
    if precision != "auto":
        return precision
    native = _on_cpu(device) and cpu_capability()["native_bf16"]
    return "bf16" if native and all(getattr(m, "can_score_chunked", False) for m in models) else "fp32"


def emulated_bf16_warning(precision: str, device: str | torch.device = "cpu") -> str | None:
    """A warning when bf16 was asked for on a CPU that only emulates it, else None."""
    if precision != "bf16" or not _on_cpu(device) or cpu_capability()["native_bf16"]:
        return None
    return (f"--precision bf16 on a CPU without native bfloat16 ({describe_cpu()}; no AVX512-BF16/AMX): "
            "it is emulated and several times slower than fp32 here; use --precision auto or fp32")  # fmt: skip
