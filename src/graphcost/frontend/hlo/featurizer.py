"""HLO module -> TpuGraphs graph arrays: the official 140 node features, opcodes, edges, splits.

Semantics follow tpu_graphs `process_data/xla` (featurizers.h, hlo_encoder.cc), reimplemented:

* Nodes: every instruction of every computation, computations in proto order (XLA serializes
  callees before callers), instructions in proto order (operands before users). Fusion bodies,
  reduce/sort/scatter sub-computations, while bodies/conditions are all flattened into one graph.
* Edges (E, 2), row ``[u, v]`` = "u consumes v": one per distinct operand of u, plus one from
  an instruction to the ROOT of each computation it calls (fusion -> fused root, while -> body
  and condition roots, reduce -> reducer root, ...). Rows sorted lexicographically, as the
  official sparse-tensor reordering leaves them. Control dependencies are not edges.
* node_splits: ``[0, ends...]`` where a split is recorded after each computation whose name
  contains "cluster", "while" or "cond" (the "major" computations), plus the total node count;
  minor computations (fusion bodies, reducers) join the following major one.
* Node features (TpuGraphs README node-feature table, FeaturizeHloInstruction with
  FEATURE_OP_NON_ZERO): see `featurize_instruction`. A list feature ``x_0..x_{k-1}`` holds the
  first k values zero-padded; ``_sum``/``_product`` aggregate *all* values, the product of an
  empty list being 1. The layout block [134:140] is zero-padded in the official data; pass
  ``layout_pad=-1`` for TGraph's -1 padding (TGraph §4 "-1 padding").

Hostile input. A product must fit int64, as XLA's element counts do (`int64_product`): a module
whose dimensions multiply past 2^63 is an `HloGraphError` naming the instruction and the field,
found in linear time. Opcode names TpuGraphs does not know become opcode 0, as in the official
pipeline, and are counted per module (`FeaturizedModule.unknown_opcodes`) so callers can warn
or refuse.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from graphcost.errors import GraphcostError
from graphcost.frontend.hlo.hlo_proto import HloComputation, HloInstruction, HloModule
from graphcost.frontend.hlo.opcodes import CONFIGURABLE_LAYOUT_OPCODES, UNKNOWN_OPCODE_ID, opcode_id

NODE_FEAT_DIM = 140
LAYOUT_FEAT_START = 134

# README "2-20: one hot vector of shape_element_type", in this order (xla PrimitiveType values).
ELEMENT_TYPE_ORDER = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 15, 18, 13, 14, 17)
_ELEMENT_TYPE_COLUMN = {t: 2 + i for i, t in enumerate(ELEMENT_TYPE_ORDER)}

_MAJOR_COMPUTATION_MARKERS = ("cluster", "while", "cond")
INT64_LIMIT = 1 << 63


class HloGraphError(GraphcostError, ValueError):
    """The HLO module cannot be turned into a graph (dangling ids, duplicate ids, ...)."""


class FeatureOverflow(GraphcostError, ValueError):
    """The product of an attribute list (dimensions, window sizes, tile bounds) overflows int64."""


def int64_product(values: list[int], what: str) -> int:
    """Product of `values`, which must fit int64 like XLA's element counts; FeatureOverflow otherwise.

    Linear time: a zero gives 0 at once, and the running product is checked after every step, so
    a hostile list of huge values fails within 64 multiplications instead of growing a big
    integer whose every multiplication costs more (quadratic in the list length).
    """
    if 0 in values:
        return 0
    product = 1
    for v in values:
        product *= v
        if not -INT64_LIMIT <= product < INT64_LIMIT:
            shown = ", ".join(str(x) for x in values[:3]) + (", ..." if len(values) > 3 else "")
            raise FeatureOverflow(f"{what}: the product of its {len(values)} values [{shown}] overflows int64")
    return product


@dataclass
class FeaturizedModule:
    """One HLO module as TpuGraphs arrays (N nodes, E edges, S splits)."""

    name: str
    node_feat: np.ndarray  # (N, 140) float32
    node_opcode: np.ndarray  # (N,) uint8, TpuGraphs opcode ids
    edge_index: np.ndarray  # (E, 2) int64, row [u, v]: u consumes v
    node_splits: np.ndarray  # (S,) int64, computation boundaries (see module docstring)
    instruction_ids: np.ndarray  # (N,) int64, HLO instruction id of each node
    node_names: list[str]  # (N,) instruction names
    opcode_names: list[str]  # (N,) XLA opcode strings
    computation_of_node: np.ndarray  # (N,) int64, index into the module's computations
    configurable_nodes: np.ndarray  # (C,) int64, nodes whose opcode is convolution/dot/reshape
    node_index: dict[int, int] = field(default_factory=dict)  # instruction id -> node index
    unknown_opcodes: dict[str, int] = field(default_factory=dict)  # opcode name -> nodes (mapped to 0)

    @property
    def num_nodes(self) -> int:
        return int(self.node_feat.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.shape[0])


def _seq(out: list[float], values, k: int, aggregate: bool = True, what: str = "values") -> None:
    """Push the first `k` values (zero-padded), then sum and product of all (FixedNumericSequenceFeatures)."""
    vals = [int(v) for v in values]
    head = vals[:k]
    out.extend(float(v) for v in head)
    out.extend(0.0 for _ in range(k - len(head)))
    if aggregate:
        out.append(float(sum(vals)))
        out.append(float(int64_product(vals, what)))


def _bools(out: list[float], values, k: int) -> None:
    """First `k` booleans as 0/1 (zero-padded), then true count and false count."""
    vals = [bool(v) for v in values]
    out.extend(1.0 if v else 0.0 for v in vals[:k])
    out.extend(0.0 for _ in range(k - min(k, len(vals))))
    out.append(float(sum(vals)))
    out.append(float(len(vals) - sum(vals)))


def featurize_instruction(inst: HloInstruction, comp: HloComputation, layout_pad: float = 0.0) -> list[float]:
    """The 140 TpuGraphs node features of one instruction (README "Node Features" table)."""
    out: list[float] = [1.0 if inst.id == comp.root_id else 0.0, 0.0]  # 0 is_root, 1 element_size_in_bits
    onehot = [0.0] * 19  # 2-20 element type one-hot
    col = _ELEMENT_TYPE_COLUMN.get(inst.shape.element_type)
    if col is not None:
        onehot[col - 2] = 1.0
    out.extend(onehot)
    _seq(out, inst.shape.dimensions, 6, what="shape.dimensions")  # 21-28
    out.append(float(len(inst.shape.tuple_shapes)))  # 29
    out.append(float(inst.parameter_number))  # 30
    _seq(out, inst.dimensions, 6, aggregate=False)  # 31-36
    win = inst.window  # 37-92
    for attr in ("size", "stride", "padding_low", "padding_high", "window_dilation", "base_dilation"):
        _seq(out, [getattr(d, attr) for d in win], 6, what=f"window.{attr}")
    _bools(out, [d.window_reversal for d in win], 6)
    cdn = inst.convolution_dimension_numbers  # 93-106 (all zero when absent, like a default proto)
    if cdn is None:
        out.extend([0.0] * 14)
    else:
        out.append(float(cdn.input_batch_dimension))
        out.append(float(cdn.input_feature_dimension))
        _seq(out, cdn.input_spatial_dimensions, 4, aggregate=False)
        out.append(float(cdn.kernel_input_feature_dimension))
        out.append(float(cdn.kernel_output_feature_dimension))
        _seq(out, cdn.kernel_spatial_dimensions, 4, aggregate=False)
        out.append(float(cdn.output_batch_dimension))
        out.append(float(cdn.output_feature_dimension))
    out.append(float(inst.feature_group_count))  # 107
    out.append(float(inst.batch_group_count))  # 108
    sl = inst.slice_dimensions  # 109-120: start, stride, limit
    _seq(out, [s.start for s in sl], 2, what="slice_dimensions.start")
    _seq(out, [s.stride for s in sl], 2, what="slice_dimensions.stride")
    _seq(out, [s.limit for s in sl], 2, what="slice_dimensions.limit")
    _seq(out, inst.dynamic_slice_sizes, 2, what="dynamic_slice_sizes")  # 121-124
    pad = inst.padding_config  # 125-132
    _seq(out, [p.edge_padding_low for p in pad], 2, what="padding_config.edge_padding_low")
    _seq(out, [p.edge_padding_high for p in pad], 2, what="padding_config.edge_padding_high")
    out.append(1.0 if inst.is_stable else 0.0)  # 133
    m2m = inst.shape.layout.minor_to_major if inst.shape.layout is not None else []  # 134-139
    head = [float(v) for v in m2m[:6]]
    out.extend(head + [float(layout_pad)] * (6 - len(head)))
    return out


def _check_ids(module: HloModule) -> dict[int, int]:
    node_index: dict[int, int] = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.id in node_index:
                raise HloGraphError(
                    f"module {module.name!r}: instruction id {inst.id} ({inst.name!r}) is not unique; "
                    "graphcost needs module-unique instruction ids")
            node_index[inst.id] = len(node_index)
    return node_index


def featurize_module(module: HloModule, layout_pad: float = 0.0) -> FeaturizedModule:
    """Flatten every computation of `module` into one TpuGraphs graph (see module docstring)."""
    node_index = _check_ids(module)
    root_of = {comp.id: comp.root_id for comp in module.computations}
    n = len(node_index)
    feats = np.zeros((n, NODE_FEAT_DIM), dtype=np.float32)
    opcodes = np.zeros(n, dtype=np.uint8)
    inst_ids = np.zeros(n, dtype=np.int64)
    comp_of = np.zeros(n, dtype=np.int64)
    names: list[str] = []
    op_names: list[str] = []
    edges: list[tuple[int, int]] = []
    splits = [0]
    count = 0
    for c_idx, comp in enumerate(module.computations):
        for inst in comp.instructions:
            u = count
            try:
                feats[u] = featurize_instruction(inst, comp, layout_pad)
            except FeatureOverflow as exc:
                where = f"module {module.name!r}: instruction {inst.name!r} (id {inst.id})"
                raise HloGraphError(f"{where}: {exc}") from None
            opcodes[u] = opcode_id(inst.opcode)
            inst_ids[u] = inst.id
            comp_of[u] = c_idx
            names.append(inst.name)
            op_names.append(inst.opcode)
            for operand in sorted(set(inst.operand_ids)):
                if operand not in node_index:
                    raise HloGraphError(
                        f"module {module.name!r}: instruction {inst.name!r} (id {inst.id}) has operand id "
                        f"{operand}, which is no instruction of the module")
                edges.append((u, node_index[operand]))
            for callee in inst.called_computation_ids:
                root = root_of.get(callee)
                if root is None or root not in node_index:
                    raise HloGraphError(
                        f"module {module.name!r}: instruction {inst.name!r} (id {inst.id}) calls computation "
                        f"{callee}, which is missing or has no root instruction")
                edges.append((u, node_index[root]))
            count += 1
        if any(marker in comp.name for marker in _MAJOR_COMPUTATION_MARKERS):
            splits.append(count)
    if splits[-1] < count:
        splits.append(count)
    edge_index = np.asarray(sorted(set(edges)), dtype=np.int64).reshape(-1, 2)
    configurable = np.asarray(
        [i for i, op in enumerate(op_names) if op in CONFIGURABLE_LAYOUT_OPCODES], dtype=np.int64)
    unknown = Counter(name for name, op in zip(op_names, opcodes.tolist()) if op == UNKNOWN_OPCODE_ID)
    return FeaturizedModule(
        name=module.name, node_feat=feats, node_opcode=opcodes, edge_index=edge_index,
        node_splits=np.asarray(splits, dtype=np.int64), instruction_ids=inst_ids, node_names=names,
        opcode_names=op_names, computation_of_node=comp_of, configurable_nodes=configurable,
        node_index=node_index, unknown_opcodes=dict(unknown),
    )


def featurize_hlo_bytes(data: bytes, layout_pad: float = 0.0) -> FeaturizedModule:
    """Serialized `xla.HloModuleProto` bytes (e.g. JAX's `as_serialized_hlo_module_proto()`) -> graph arrays."""
    from graphcost.frontend.hlo.hlo_proto import parse_hlo_module

    return featurize_module(parse_hlo_module(data), layout_pad=layout_pad)


def is_topologically_ordered(edge_index: np.ndarray) -> bool:
    """True when every edge [u, v] (u consumes v) has v < u, i.e. producers come first."""
    return bool(edge_index.size == 0 or np.all(edge_index[:, 1] < edge_index[:, 0]))
