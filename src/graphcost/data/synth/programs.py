"""Synthetic XLA-like HLO programs (DAGs with shapes) and their 140-d TpuGraphs node features.

SYNTHETIC DATA. The generator emits nodes in topological order, as a program would: it keeps a
"current activation" that flows through layers of producer/consumer operations (elementwise
chains, convolutions or dots with parameter weights, reshapes, reductions, broadcasts,
residual adds joining an earlier activation), so the DAG has the layered, mostly-chain shape
with skip connections of real model graphs. Opcodes use the XLA numbering of tpu_graphs'
``hlo_opcode.h`` (`graphcost.data.io.schema.OPCODES`). A final ``tuple`` root consumes every
otherwise unused value (HLO has no dead code).

Node features fill the README columns with their real meanings: is_root, element-type one-hot,
shape dims (+ sum, product), tuple size, parameter number, ``dimensions`` (reduce/broadcast),
convolution window (size, stride, padding, dilations, reversal counts), convolution dimension
numbers (NHWC / HWIO), group counts, slice start/stride/limit and the physical layout
minor_to_major (columns 134-139; unset entries padded with 0 like the official files, or -1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphcost.data.io import schema as S

__all__ = ["Node", "Program", "synth_program", "node_features", "default_layout"]

OP = S.OPCODES
_ELEMENTWISE_UNARY = ["exponential", "tanh", "rsqrt", "negate", "convert", "logistic", "abs", "sqrt", "copy"]
_ELEMENTWISE_BINARY = ["add", "multiply", "maximum", "subtract", "divide", "select", "compare", "minimum"]
_HIDDEN = {"xla": [16, 32, 64, 96, 128, 192, 256, 384, 512, 1000, 1024, 2048], "nlp": [128, 256, 512, 768, 1024, 3072, 4096]}
_BATCH = [1, 2, 4, 8, 16, 32, 64, 128]
_SPATIAL = [7, 14, 28, 56, 112, 224]
_SEQ = [32, 64, 128, 256, 384, 512]
_MAX_VOLUME = 2**26


def default_layout(rank: int) -> tuple[int, ...]:
    """XLA's default (row-major) layout: minor_to_major = (rank-1, ..., 0)."""
    return tuple(range(rank - 1, -1, -1))


@dataclass
class Node:
    opcode: int
    shape: tuple[int, ...]
    operands: list[int]
    element_type: str = "f32"
    layout: tuple[int, ...] | None = None  # minor_to_major; None = default
    attrs: dict = field(default_factory=dict)  # window / conv dims / dimensions / slice / param_number


@dataclass
class Program:
    nodes: list[Node]
    node_splits: np.ndarray  # (s,) start ids of computations

    @property
    def edge_index(self) -> np.ndarray:
        """(m, 2) int64 rows [u, v]: u consumes v (TpuGraphs convention)."""
        rows = [(u, v) for u, n in enumerate(self.nodes) for v in n.operands]
        return np.array(rows, dtype=np.int64).reshape(-1, 2)


class _Builder:
    def __init__(self, rng: np.random.Generator, source: str):
        self.rng, self.source = rng, source
        self.nodes: list[Node] = []
        self.params = 0
        self.used = np.zeros(0, bool)

    def emit(self, op: str, shape, operands=(), etype="f32", **attrs) -> int:
        node = Node(OP[op], tuple(int(s) for s in shape), list(operands), etype, None, attrs)
        if op == "parameter":
            node.attrs["parameter_number"] = self.params
            self.params += 1
        if op in ("transpose", "copy") and len(node.shape) >= 2 and self.rng.random() < 0.5:
            perm = list(default_layout(len(node.shape)))
            perm[0], perm[1] = perm[1], perm[0]  # a non-default physical layout
            node.layout = tuple(perm)
        self.nodes.append(node)
        return len(self.nodes) - 1

    def param(self, shape) -> int:
        return self.emit("parameter", shape)

    def shape(self, i: int) -> tuple[int, ...]:
        return self.nodes[i].shape

    def choice(self, xs):
        return xs[int(self.rng.integers(len(xs)))]


def _conv(b: _Builder, x: int) -> int:
    n, h, w, cin = b.shape(x)
    k = b.choice([1, 3, 3, 5, 7]) if h >= 7 else 1
    stride = 2 if (b.rng.random() < 0.2 and h >= 4) else 1
    cout = b.choice(_HIDDEN["xla"])
    while cout > 16 and n * (-(-h // stride)) * (-(-w // stride)) * cout > _MAX_VOLUME:
        cout //= 2
    kernel = b.param((k, k, cin, cout))
    pad = (k - 1) // 2
    out = (n, -(-h // stride), -(-w // stride), cout)
    return b.emit(
        "convolution", out, [x, kernel],
        window=dict(size=(k, k), stride=(stride, stride), pad_lo=(pad, pad), pad_hi=(pad, pad)),
        conv=True,
    )  # fmt: skip


def _dot(b: _Builder, x: int) -> int:
    shape = b.shape(x)
    kdim = shape[-1]
    if kdim > 8192:  # no model multiplies by such a weight: contract it away instead
        return _reduce(b, x, keep=False)
    m = b.choice(_HIDDEN[b.source])
    if int(np.prod(shape[:-1])) * m > _MAX_VOLUME:  # keep tensors plausible: project back down
        m = min(kdim, 128)
    if (
        b.source == "nlp" and len(shape) == 4 and b.rng.random() < 0.5
        and int(np.prod(shape[:-1])) * shape[-2] <= _MAX_VOLUME
    ):  # attention scores: (B,h,S,d)x(B,h,d,S)
        other = b.param(shape[:-2] + (shape[-1], shape[-2]))
        return b.emit("dot", shape[:-1] + (shape[-2],), [x, other])
    w = b.param((kdim, m))
    return b.emit("dot", shape[:-1] + (m,), [x, w])


def _factor(d: int, rng) -> tuple[int, int] | None:
    divisors = [f for f in (2, 4, 8, 12, 16, 32, 64) if d % f == 0 and d // f > 1]
    if not divisors:
        return None
    f = divisors[int(rng.integers(len(divisors)))]
    return d // f, f


def _reshape(b: _Builder, x: int, target_rank: int | None = None) -> int:
    shape = list(b.shape(x))
    r = len(shape)
    want = target_rank if target_rank is not None else (r + 1 if r < 4 and b.rng.random() < 0.5 else r - 1)
    want = min(max(want, 1), 4)
    while len(shape) < want:
        i = int(np.argmax(shape))
        split = _factor(shape[i], b.rng)
        if split is None:
            shape.insert(0, 1)
        else:
            shape[i : i + 1] = list(split)
    while len(shape) > want:  # merge the two most major dims, e.g. (B, S, H) -> (B*S, H)
        shape[:2] = [shape[0] * shape[1]]
    if tuple(shape) == b.shape(x):
        shape = shape[::-1] if len(shape) > 1 else shape
    return b.emit("reshape", shape, [x])


def _same_shape_operand(b: _Builder, x: int, recent: list[int]) -> int:
    shape = b.shape(x)
    matches = [j for j in recent if j != x and b.shape(j) == shape]
    if matches and b.rng.random() < 0.7:
        return b.choice(matches)  # residual / skip connection
    if b.rng.random() < 0.5:
        return b.param(shape)
    small = b.param(shape[-1:])
    return b.emit("broadcast", shape, [small], dimensions=(len(shape) - 1,))


def _elementwise(b: _Builder, x: int, recent: list[int]) -> int:
    if b.rng.random() < 0.45:
        return b.emit(b.choice(_ELEMENTWISE_UNARY), b.shape(x), [x])
    op = b.choice(_ELEMENTWISE_BINARY)
    y = _same_shape_operand(b, x, recent)
    etype = "pred" if op == "compare" else "f32"
    if op == "select":
        pred = b.emit("compare", b.shape(x), [x, y], etype="pred")
        return b.emit("select", b.shape(x), [pred, x, y])
    return b.emit(op, b.shape(x), [x, y], etype=etype)


def _reduce(b: _Builder, x: int, keep: bool = True) -> int:
    shape = b.shape(x)
    if len(shape) < 2:
        return _elementwise(b, x, [])
    axis = len(shape) - 1 if b.rng.random() < 0.6 else int(b.rng.integers(1, len(shape)))
    if not keep:
        axis = int(np.argmax(shape))
    init = b.emit("constant", ())
    red = b.emit("reduce", shape[:axis] + shape[axis + 1 :], [x, init], dimensions=(axis,))
    if not keep:
        return red
    # broadcast the reduction back (softmax / normalisation pattern) and combine
    back = b.emit("broadcast", shape, [red], dimensions=tuple(i for i in range(len(shape)) if i != axis))
    return b.emit(b.choice(["subtract", "divide", "multiply"]), shape, [x, back])


def _slice(b: _Builder, x: int) -> int:
    shape = b.shape(x)
    limit = list(shape)
    limit[0] = max(1, shape[0] // 2)
    return b.emit("slice", limit, [x], slice=dict(start=(0,) * len(shape), stride=(1,) * len(shape), limit=tuple(limit)))


def synth_program(num_nodes: int, rng: np.random.Generator, source: str = "xla", config_fraction: float = 0.02) -> Program:
    """A layered XLA-like program of about `num_nodes` nodes (exactly `num_nodes` after trimming).

    ``config_fraction`` is the target share of layout-configurable nodes (convolution, dot,
    reshape). ``source`` "xla" favours convolutional vision models, "nlp" transformer blocks.
    """
    if num_nodes < 4:
        raise ValueError(f"num_nodes must be >= 4, got {num_nodes}")
    b = _Builder(rng, source)
    if source == "nlp":
        x = b.param((b.choice(_BATCH[:5]), b.choice(_SEQ), b.choice(_HIDDEN["nlp"])))
    else:
        x = b.param((b.choice(_BATCH), b.choice(_SPATIAL), b.choice(_SPATIAL[:1] + _SPATIAL), b.choice([3, 16, 32])))
        b.nodes[x].shape = (b.nodes[x].shape[0], b.nodes[x].shape[1], b.nodes[x].shape[1], b.nodes[x].shape[3])
    recent: list[int] = [x]
    target = num_nodes - 1  # leave room for the root tuple
    configured = False
    while len(b.nodes) < target - 8:
        u = rng.random()
        if not configured and len(b.nodes) >= target // 2:
            u = 0.0  # every program gets at least one configurable node
        if u < config_fraction:
            configured = True
            r = len(b.shape(x))
            kind = rng.random()
            if source == "xla" and r == 4 and kind < 0.6:
                x = _conv(b, x)
            elif source == "xla" and r != 4 and kind < 0.5:
                x = _reshape(b, x, target_rank=4)
            elif kind < (0.55 if source == "nlp" else 0.8) and r >= 2:
                x = _dot(b, x)
            else:
                x = _reshape(b, x)
        elif u < config_fraction + 0.08:
            x = _reduce(b, x)
        elif u < config_fraction + 0.11:
            x = _slice(b, x) if b.shape(x) and b.shape(x)[0] > 1 else _elementwise(b, x, recent)
        elif u < config_fraction + 0.14 and len(b.shape(x)) >= 2:
            perm = list(range(len(b.shape(x))))
            perm[-1], perm[-2] = perm[-2], perm[-1]
            x = b.emit("transpose", tuple(b.shape(x)[p] for p in perm), [x], dimensions=tuple(perm))
        else:
            x = _elementwise(b, x, recent)
        if b.nodes[x].shape and int(np.prod(b.nodes[x].shape)) > _MAX_VOLUME:  # keep tensors plausible
            x = _reduce(b, x, keep=False)
        recent = (recent + [x])[-24:]
    # pad with elementwise nodes to the exact count, then the root
    while len(b.nodes) < target:
        x = b.emit(b.choice(_ELEMENTWISE_UNARY), b.shape(x), [x])
    nodes = b.nodes[:target]
    consumed = np.zeros(len(nodes), bool)
    for n in nodes:
        consumed[n.operands] = True
    sinks = np.flatnonzero(~consumed).tolist()
    root = Node(OP["tuple"], (), sinks, "tuple", None, {"tuple_size": len(sinks), "is_root": True})
    nodes.append(root)
    n_comp = max(1, num_nodes // 2000)
    splits = np.unique(np.concatenate([[0], rng.integers(1, num_nodes, size=n_comp - 1)])).astype(np.int64)
    return Program(nodes, splits)


def _put(row: np.ndarray, col: int, values, with_sum_product: bool = True, width: int = 6) -> None:
    v = [int(x) for x in values][:width]
    row[col : col + len(v)] = v
    if with_sum_product:
        row[col + width] = sum(v)
        row[col + width + 1] = int(np.prod(v)) if v else 0


def node_features(program: Program, layout_pad: float = 0.0) -> np.ndarray:
    """(n, 140) float32 TpuGraphs node features of `program` (README node feature table)."""
    n = len(program.nodes)
    feat = np.zeros((n, S.NODE_FEAT_DIM), np.float32)
    for i, node in enumerate(program.nodes):
        row = feat[i]
        row[S.COL_IS_ROOT] = float(node.attrs.get("is_root", False))
        row[S.COL_ELEMENT_TYPE + S.ELEMENT_TYPE_INDEX[node.element_type]] = 1.0
        _put(row, S.COL_SHAPE_DIMS, node.shape)
        if not node.shape:
            row[S.COL_SHAPE_PRODUCT] = 1.0 if node.element_type != "tuple" else 0.0
        row[S.COL_TUPLE_SIZE] = node.attrs.get("tuple_size", 0)
        row[S.COL_PARAMETER_NUMBER] = node.attrs.get("parameter_number", 0)
        if "dimensions" in node.attrs:
            _put(row, S.COL_DIMENSIONS, node.attrs["dimensions"], with_sum_product=False)
        if "window" in node.attrs:
            w = node.attrs["window"]
            for col, values in ((37, w["size"]), (45, w["stride"]), (53, w["pad_lo"]), (61, w["pad_hi"]),
                                (69, (1, 1)), (77, (1, 1))):  # fmt: skip
                _put(row, col, values)
            row[91], row[92] = 0, len(w["size"])  # window reversal true/false counts
        if node.attrs.get("conv"):
            # NHWC input, HWIO kernel, NHWC output (README columns 93-106)
            row[93:107] = [0, 3, 1, 2, 0, 0, 2, 3, 0, 1, 0, 0, 0, 3]
            row[S.COL_FEATURE_GROUP_COUNT] = 1
            row[S.COL_BATCH_GROUP_COUNT] = 1
        if "slice" in node.attrs:
            s = node.attrs["slice"]
            for col, values in ((109, s["start"]), (113, s["stride"]), (117, s["limit"])):
                v = list(values)[:2]
                row[col : col + len(v)] = v
                row[col + 2] = sum(values)
                row[col + 3] = int(np.prod(values))
        rank = len(node.shape)
        layout = node.layout or default_layout(rank)
        row[S.COL_LAYOUT : S.COL_LAYOUT + 6] = layout_pad
        row[S.COL_LAYOUT : S.COL_LAYOUT + rank] = layout
    return feat
