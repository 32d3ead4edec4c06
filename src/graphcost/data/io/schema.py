"""The TpuGraphs npz schema: key names, dtypes, ranks, column counts and column names.

Source: the "Dataset File Description" and "Features" sections of the official TpuGraphs
README (google-research-datasets/tpu_graphs) and `process_data/xla/hlo_opcode.h`.

Dtypes. The README documents one dtype per key (e.g. ``edge_index`` int32, ``config_runtime``
int64 for tile / int32 for layout). The released files use other *safe kinds* for some keys
(``node_opcode`` uint8, ``edge_index`` / ``node_config_ids`` / ``node_splits`` int64). Each
`KeySpec` therefore records the README dtype (`readme_dtype`, for documentation and for the
files we write) and the set of numpy dtype kinds a reader accepts (`kinds`): ``"iu"`` =
signed/unsigned integers, ``"f"`` = floating point. Booleans, complex, strings and objects
are always rejected (objects would need unpickling).

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphcost.data.graph import COMPILED_STATS_DIM, LAYOUT_CONFIG_DIM, NODE_FEAT_DIM, TILE_CONFIG_DIM
from graphcost.errors import GraphcostError

__all__ = [
    "SchemaError",
    "KeySpec",
    "TILE_KEYS",
    "LAYOUT_KEYS",
    "NODE_FEAT_COLUMNS",
    "LAYOUT_CONFIG_COLUMNS",
    "TILE_CONFIG_COLUMNS",
    "OPCODES",
    "OPCODE_NAMES",
    "LAYOUT_CONFIGURABLE_OPCODES",
    "NODE_FEAT_DIM",
    "LAYOUT_CONFIG_DIM",
    "TILE_CONFIG_DIM",
    "keys_for_kind",
    "detect_kind",
]


class SchemaError(GraphcostError, ValueError):
    """A TpuGraphs file (or in-memory graph) violates the schema.

    The message is ``"<file>: key '<key>': <problem>"`` so a user knows where to look.
    """

    def __init__(self, path: str | Path | None, key: str, problem: str):
        self.path = None if path is None else str(path)
        self.key = key
        self.problem = problem
        super().__init__(f"{self.path or '<in-memory graph>'}: key '{key}': {problem}")

    def __reduce__(self):  # keep picklable across multiprocessing workers
        return (SchemaError, (self.path, self.key, self.problem))


@dataclass(frozen=True)
class KeySpec:
    """One npz key: what the README documents and what a reader accepts."""

    name: str
    readme_dtype: str  # dtype as documented in the README (also what we write)
    kinds: str  # accepted numpy dtype kinds: "f" float, "i" signed int, "u" unsigned int
    ndim: tuple[int, ...]  # accepted ranks
    width: int | None  # required size of the last axis, if fixed
    required: bool
    doc: str


_NODE_KEYS = (
    KeySpec("node_feat", "float32", "f", (2,), NODE_FEAT_DIM, True, "(n, 140) node features"),
    KeySpec("node_opcode", "int32", "iu", (1,), None, True, "(n,) XLA opcode ids (hlo_opcode.h)"),
    KeySpec("edge_index", "int32", "iu", (2,), 2, True, "(m, 2) row [u, v]: u consumes v's output"),
)

# Not in TpuGraphs: graphcost's own optional key, written by `graphcost collect` (and `--action annotate`).
_COMPILED = KeySpec("config_compiled_stats", "float64", "f", (2,), COMPILED_STATS_DIM, False,
                    "(c, 7) what the compiler did to config j (graphcost.frontend.hlo.compiled_stats)")

TILE_KEYS: tuple[KeySpec, ...] = _NODE_KEYS + (
    KeySpec("config_feat", "float32", "f", (2,), TILE_CONFIG_DIM, True, "(c, 24) tile config features"),
    KeySpec("config_runtime", "int64", "iuf", (1,), None, True, "(c,) runtime in ns of config j"),
    KeySpec(
        "config_runtime_normalizers", "int64", "iuf", (1,), None, True, "(c,) runtime in ns of the default config"
    ),
    _COMPILED,
)

LAYOUT_KEYS: tuple[KeySpec, ...] = _NODE_KEYS + (
    KeySpec("node_config_ids", "int32", "iu", (1,), None, True, "(nc,) indices of configurable nodes"),
    KeySpec("node_config_feat", "float32", "f", (3,), LAYOUT_CONFIG_DIM, True, "(c, nc, 18) layout configs"),
    KeySpec("config_runtime", "int32", "iuf", (1,), None, True, "(c,) runtime of run j"),
    # Optional; the README calls it a variable-length list, the released files store it as (1, s).
    KeySpec("node_splits", "int64", "iu", (1, 2), None, False, "start node ids of HLO computations"),
    _COMPILED,
)

_TILE_ONLY = {"config_feat", "config_runtime_normalizers"}
_LAYOUT_ONLY = {"node_config_ids", "node_config_feat"}


def keys_for_kind(kind: str) -> tuple[KeySpec, ...]:
    """The key specs of the "tile" or "layout" schema."""
    if kind == "tile":
        return TILE_KEYS
    if kind == "layout":
        return LAYOUT_KEYS
    raise ValueError(f"unknown graph kind {kind!r}; expected 'tile' or 'layout'")


def detect_kind(keys, path: str | Path | None = None) -> str:
    """Tell a tile file from a layout file by its keys (tile: config_feat; layout: node_config_*)."""
    keys = set(keys)
    has_tile = bool(keys & _TILE_ONLY)
    has_layout = bool(keys & _LAYOUT_ONLY)
    if has_tile and has_layout:
        raise SchemaError(path, "config_feat", "file has both tile keys (config_feat) and layout keys (node_config_*)")
    if has_tile:
        return "tile"
    if has_layout:
        return "layout"
    raise SchemaError(
        path,
        "config_feat",
        "cannot tell tile from layout: neither 'config_feat' (tile) nor 'node_config_feat'/'node_config_ids' "
        f"(layout) is present; keys found: {sorted(keys)}",
    )


# ---------------------------------------------------------------------------------------------
# Column tables (README "Features"). Names are generated from the README's groups.

def _dims(prefix: str, n: int = 6) -> list[str]:
    return [f"{prefix}_{i}" for i in range(n)]


_ELEMENT_TYPES = (
    "invalid_type", "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
    "f16", "f32", "f64", "bf16", "c64", "c128", "tuple", "opaque_type", "token",
)  # fmt: skip

NODE_FEAT_COLUMNS: tuple[str, ...] = tuple(
    ["is_root", "element_size_in_bits"]
    + [f"shape_element_type_is_{t}" for t in _ELEMENT_TYPES]  # 2-20
    + _dims("shape_dimensions") + ["shape_dimensions_sum", "shape_dimensions_product"]  # 21-28
    + ["shape_tuple_shapes_size", "parameter_number"]  # 29-30
    + _dims("dimensions")  # 31-36
    + [
        f"window_{name}_{suffix}"
        for name in ("size", "stride", "padding_low", "padding_high", "window_dilation", "base_dilation")
        for suffix in [str(i) for i in range(6)] + ["sum", "product"]
    ]  # 37-84
    + _dims("window_window_reversal") + ["window_window_reversal_true_count", "window_window_reversal_false_count"]
    + [
        "convolution_dim_numbers_input_batch_dim",
        "convolution_dim_numbers_input_feature_dim",
        *_dims("convolution_dim_numbers_input_spatial_dims", 4),
        "convolution_dim_numbers_kernel_input_feature_dim",
        "convolution_dim_numbers_kernel_output_feature_dim",
        *_dims("convolution_dim_numbers_kernel_spatial_dims", 4),
        "convolution_dim_numbers_output_batch_dim",
        "convolution_dim_numbers_output_feature_dim",
    ]  # 93-106
    + ["feature_group_count", "batch_group_count"]  # 107-108
    + [f"slice_dims_{n}_{s}" for n in ("start", "stride", "limit") for s in ("0", "1", "sum", "product")]  # 109-120
    + ["dynamic_slice_sizes_0", "dynamic_slice_sizes_1", "dynamic_slice_sizes_sum", "dynamic_slice_sizes_product"]
    + [f"padding_config_edge_padding_{n}_{s}" for n in ("low", "high") for s in ("0", "1", "sum", "product")]
    + ["is_stable"]  # 133
    + _dims("layout_minor_to_major")  # 134-139
)

LAYOUT_CONFIG_COLUMNS: tuple[str, ...] = tuple(
    _dims("output_layout") + _dims("input_layout") + _dims("kernel_layout")
)

TILE_CONFIG_COLUMNS: tuple[str, ...] = tuple(
    c
    for name in ("kernel_bounds", "output_bounds", "input_bounds")
    for c in _dims(name) + [f"{name}_sum", f"{name}_product"]
)

# Named column offsets used across the package (README node feature table).
COL_IS_ROOT = 0
COL_ELEMENT_TYPE = 2  # 2..20 one-hot, in _ELEMENT_TYPES order
COL_SHAPE_DIMS = 21  # 21..26, then 27 sum, 28 product
COL_SHAPE_SUM = 27
COL_SHAPE_PRODUCT = 28
COL_TUPLE_SIZE = 29
COL_PARAMETER_NUMBER = 30
COL_DIMENSIONS = 31  # 31..36
COL_WINDOW_SIZE = 37  # 37..42, 43 sum, 44 product
COL_WINDOW_STRIDE = 45  # 45..50, 51 sum, 52 product
COL_CONV_DIM_NUMBERS = 93  # 93..106
COL_FEATURE_GROUP_COUNT = 107
COL_BATCH_GROUP_COUNT = 108
COL_LAYOUT = 134  # 134..139 layout_minor_to_major
ELEMENT_TYPE_INDEX = {t: i for i, t in enumerate(_ELEMENT_TYPES)}

# XLA opcode numbering (tpu_graphs process_data/xla/hlo_opcode.h); 0 = unknown.
OPCODES: dict[str, int] = {
    name: i + 1
    for i, name in enumerate(
        "abs add add-dependency after-all all-reduce all-to-all atan2 batch-norm-grad batch-norm-inference "
        "batch-norm-training bitcast bitcast-convert broadcast call ceil cholesky clamp collective-permute "
        "count-leading-zeros compare complex concatenate conditional constant convert convolution copy "
        "copy-done copy-start cosine custom-call divide domain dot dynamic-slice dynamic-update-slice "
        "exponential exponential-minus-one fft floor fusion gather get-dimension-size set-dimension-size "
        "get-tuple-element imag infeed iota is-finite log log-plus-one and not or xor map maximum minimum "
        "multiply negate outfeed pad parameter partition-id popcnt power real recv recv-done reduce "
        "reduce-precision reduce-window remainder replica-id reshape reverse rng rng-get-and-update-state "
        "rng-bit-generator round-nearest-afz rsqrt scatter select select-and-scatter send send-done "
        "shift-left shift-right-arithmetic shift-right-logical sign sine slice sort sqrt subtract tanh".split()
    )
}
OPCODES.update(
    {
        "trace": 97,  # tombstone
        "transpose": 98,
        "triangular-solve": 99,
        "tuple": 100,
        "tuple-select": 101,  # tombstone
        "while": 102,
        "cbrt": 103,
        "all-gather": 104,
        "collective-permute-start": 105,
        "collective-permute-done": 106,
        "logistic": 107,
        "dynamic-reshape": 108,
        "all-reduce-start": 109,
        "all-reduce-done": 110,
        "reduce-scatter": 111,
        "all-gather-start": 112,
        "all-gather-done": 113,
        "opt-barrier": 114,
        "async-start": 115,
        "async-update": 116,
        "async-done": 117,
        "round-nearest-even": 118,
        "stochastic-convert": 119,
        "tan": 120,
    }
)
OPCODE_NAMES: dict[int, str] = {v: k for k, v in OPCODES.items()}

# The layout autotuner configures convolution, dot and reshape nodes (TpuGraphs paper §3).
LAYOUT_CONFIGURABLE_OPCODES: tuple[int, ...] = (OPCODES["convolution"], OPCODES["dot"], OPCODES["reshape"])

assert len(NODE_FEAT_COLUMNS) == NODE_FEAT_DIM, len(NODE_FEAT_COLUMNS)
assert len(LAYOUT_CONFIG_COLUMNS) == LAYOUT_CONFIG_DIM
assert len(TILE_CONFIG_COLUMNS) == TILE_CONFIG_DIM
assert OPCODES["tanh"] == 96 and OPCODES["convolution"] == 26 and OPCODES["dot"] == 34
assert OPCODES["reshape"] == 75 and OPCODES["parameter"] == 63


def dtype_ok(spec: KeySpec, dtype: np.dtype) -> bool:
    """Whether `dtype` is an accepted kind for `spec` (never bool/object/complex/str)."""
    dtype = np.dtype(dtype)
    return dtype.kind in spec.kinds and dtype.kind in "iuf" and not dtype.hasobject
