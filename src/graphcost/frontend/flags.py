"""The XLA CPU compiler-option space (the second, whole-program configuration space of `collect`).

A configuration is a set of per-compilation XLA options passed as
``jax.jit(f).lower(*args).compile(compiler_options=...)`` (accepted by the CPU backend of
jax/jaxlib 0.10.2; names checked against that build: unknown names are rejected by XLA with
"No such compile option"). Options left at their default are not passed, except
``xla_cpu_multi_thread_eigen``, which is always passed explicitly.

Stored in the TpuGraphs TILE schema, with ``config_feat`` (K, 24) float32 holding the flag
vector (non-negative, zero-padded) — columns:

====  ==========================================  ==========================  =======
col   XLA option                                   value stored                default
====  ==========================================  ==========================  =======
0     xla_backend_optimization_level              0, 1, 2, 3                  3
1     xla_cpu_experimental_ynn_fusion_type        1 = default library (YNN)   1
                                                  fusion, 0 = "" (disabled)
2     xla_cpu_use_fusion_emitters                 0 / 1                       1
3     xla_cpu_enable_fast_math                    0 / 1                       0
4     xla_cpu_multi_thread_eigen                  0 / 1                       1
5     xla_cpu_prefer_vector_width                 log2(width / 128): 0,1,2    1 (256)
6     xla_llvm_disable_expensive_passes           0 / 1                       0
7-23  unused                                      0
====  ==========================================  ==========================  =======

``config_runtime_normalizers`` holds the runtime of configuration 0, the compiler default, as
the TpuGraphs tile collection normalises by the default configuration's runtime.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLAG_COLUMNS = ("backend_optimization_level", "ynn_library_fusion", "fusion_emitters", "fast_math",
                "multi_thread_eigen", "log2_vector_width_over_128", "llvm_disable_expensive_passes")
CHOICES = ((0, 1, 2, 3), (0, 1), (0, 1), (0, 1), (0, 1), (0, 1, 2), (0, 1))
DEFAULT = (3, 1, 1, 0, 1, 1, 0)
TILE_CONFIG_DIM = 24
# Per column: the XLA option it sets, and the value that option compiles with for each stored value
# (what a person reading a study or trials.csv sees; "off" = the empty list of YNN fusion types, "").
OPTION_NAMES = ("xla_backend_optimization_level", "xla_cpu_experimental_ynn_fusion_type",
                "xla_cpu_use_fusion_emitters", "xla_cpu_enable_fast_math", "xla_cpu_multi_thread_eigen",
                "xla_cpu_prefer_vector_width", "xla_llvm_disable_expensive_passes")


def option_value(column: int, value: int) -> int | bool | str:
    """The value XLA option `OPTION_NAMES[column]` compiles with when flag column `column` holds `value`:
    the level (0-3), the vector width in bits (128, 256, 512), "default" / "off" for the YNN fusion
    type, and a bool for the on/off options."""
    if column == 0:
        return int(value)
    if column == 1:
        return "default" if value else "off"
    if column == 5:
        return 128 * 2 ** int(value)
    return bool(value)


@dataclass(frozen=True)
class FlagConfig:
    """One point of the flag space, as the values of `FLAG_COLUMNS`."""

    values: tuple[int, ...] = DEFAULT

    def compiler_options(self) -> dict[str, object]:
        """The `compiler_options` dict for `Lowered.compile`: non-default options, plus
        ``xla_cpu_multi_thread_eigen`` always (it may differ from the default in ``XLA_FLAGS``)."""
        v, opts = self.values, {}
        if v[0] != DEFAULT[0]:
            opts["xla_backend_optimization_level"] = v[0]
        if v[1] == 0:
            opts["xla_cpu_experimental_ynn_fusion_type"] = ""
        if v[2] == 0:
            opts["xla_cpu_use_fusion_emitters"] = False
        if v[3] == 1:
            opts["xla_cpu_enable_fast_math"] = True
        # always explicit: `graphcost collect --single-thread` sets it to false in XLA_FLAGS
        opts["xla_cpu_multi_thread_eigen"] = bool(v[4])
        if v[5] != DEFAULT[5]:
            opts["xla_cpu_prefer_vector_width"] = 128 * 2 ** v[5]
        if v[6] == 1:
            opts["xla_llvm_disable_expensive_passes"] = True
        return opts


def flag_configs(num: int, seed: int = 0) -> list[FlagConfig]:
    """`num` distinct configurations (at most the 384 of the space): the default first, then seeded random ones."""
    rng = np.random.default_rng(seed)
    total = int(np.prod([len(c) for c in CHOICES]))
    out, seen = [FlagConfig(DEFAULT)], {DEFAULT}
    while len(out) < min(num, total):
        values = tuple(int(c[rng.integers(len(c))]) for c in CHOICES)
        if values not in seen:
            seen.add(values)
            out.append(FlagConfig(values))
    return out


def flag_features(configs: list[FlagConfig]) -> np.ndarray:
    """(K, 24) float32 flag vectors (columns in the module docstring)."""
    feat = np.zeros((len(configs), TILE_CONFIG_DIM), np.float32)
    for i, cfg in enumerate(configs):
        feat[i, : len(cfg.values)] = cfg.values
    return feat
