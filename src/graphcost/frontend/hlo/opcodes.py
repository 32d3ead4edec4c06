"""XLA HLO opcode name -> TpuGraphs numeric opcode id (`node_opcode` in the npz files).

TpuGraphs keeps its own stable numbering (tpu_graphs `process_data/xla/hlo_opcode.h`) instead
of XLA's enum order: ids 1..120 in the order below, 0 reserved for unknown opcodes, and two
tombstones for opcodes XLA removed ("trace" 97, "tuple-select" 101).

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

UNKNOWN_OPCODE_ID = 0

OPCODE_IDS: dict[str, int] = {
    "abs": 1, "add": 2, "add-dependency": 3, "after-all": 4, "all-reduce": 5, "all-to-all": 6,
    "atan2": 7, "batch-norm-grad": 8, "batch-norm-inference": 9, "batch-norm-training": 10,
    "bitcast": 11, "bitcast-convert": 12, "broadcast": 13, "call": 14, "ceil": 15, "cholesky": 16,
    "clamp": 17, "collective-permute": 18, "count-leading-zeros": 19, "compare": 20, "complex": 21,
    "concatenate": 22, "conditional": 23, "constant": 24, "convert": 25, "convolution": 26, "copy": 27,
    "copy-done": 28, "copy-start": 29, "cosine": 30, "custom-call": 31, "divide": 32, "domain": 33,
    "dot": 34, "dynamic-slice": 35, "dynamic-update-slice": 36, "exponential": 37,
    "exponential-minus-one": 38, "fft": 39, "floor": 40, "fusion": 41, "gather": 42,
    "get-dimension-size": 43, "set-dimension-size": 44, "get-tuple-element": 45, "imag": 46,
    "infeed": 47, "iota": 48, "is-finite": 49, "log": 50, "log-plus-one": 51, "and": 52, "not": 53,
    "or": 54, "xor": 55, "map": 56, "maximum": 57, "minimum": 58, "multiply": 59, "negate": 60,
    "outfeed": 61, "pad": 62, "parameter": 63, "partition-id": 64, "popcnt": 65, "power": 66,
    "real": 67, "recv": 68, "recv-done": 69, "reduce": 70, "reduce-precision": 71, "reduce-window": 72,
    "remainder": 73, "replica-id": 74, "reshape": 75, "reverse": 76, "rng": 77,
    "rng-get-and-update-state": 78, "rng-bit-generator": 79, "round-nearest-afz": 80, "rsqrt": 81,
    "scatter": 82, "select": 83, "select-and-scatter": 84, "send": 85, "send-done": 86,
    "shift-left": 87, "shift-right-arithmetic": 88, "shift-right-logical": 89, "sign": 90, "sine": 91,
    "slice": 92, "sort": 93, "sqrt": 94, "subtract": 95, "tanh": 96, "trace": 97, "transpose": 98,
    "triangular-solve": 99, "tuple": 100, "tuple-select": 101, "while": 102, "cbrt": 103,
    "all-gather": 104, "collective-permute-start": 105, "collective-permute-done": 106,
    "logistic": 107, "dynamic-reshape": 108, "all-reduce-start": 109, "all-reduce-done": 110,
    "reduce-scatter": 111, "all-gather-start": 112, "all-gather-done": 113, "opt-barrier": 114,
    "async-start": 115, "async-update": 116, "async-done": 117, "round-nearest-even": 118,
    "stochastic-convert": 119, "tan": 120,
}
TOMBSTONE_OPCODES = frozenset({"trace", "tuple-select"})
NUM_OPCODE_IDS = max(OPCODE_IDS.values()) + 1  # embedding table size (121, id 0 = unknown)

# Nodes whose layouts the TpuGraphs layout autotuner configures (TpuGraphs paper §3.1).
CONFIGURABLE_LAYOUT_OPCODES = frozenset({"convolution", "dot", "reshape"})


def opcode_id(name: str) -> int:
    """TpuGraphs id of an XLA opcode name; 0 for an opcode TpuGraphs does not know."""
    return OPCODE_IDS.get(name, UNKNOWN_OPCODE_ID)
