"""The kernels of an OPTIMIZED HLO module: what each profiled thunk runs, its identity, its graph and its cost.

XLA:CPU runs an optimized module as a sequence of thunks, one per instruction of the entry
computation and of the bodies of its control flow (``while`` / ``conditional`` / ``call``):
fusions (``kLoop`` / ``kInput`` emitted loops, ``kCustom`` library fusions of YNN/XNNPACK),
library calls (``dot``, ``convolution``, ``custom-call``), ``copy``, sort, scatter, loops. The
profiler names each thunk after its instruction (`graphcost.measure.kernel_profile`);
`module_kernels` gives, per such instruction name, a `Kernel`:

* ``fingerprint``: SHA-256 of the kernel's canonical text (`canonical_text`): its opcode, fusion kind,
  custom-call target, attributes, output and operand shapes WITH the layouts XLA assigned, and the
  instructions of every computation it calls, with names replaced by positions. Two kernels of
  different programs (or configurations) with equal fingerprints are the same computation on the
  same data layout; what still tells their machine code apart are the flags, which a kernel
  dataset keeps as its configuration (`graphcost.kernels.table`).
* ``graph``: a self-contained module whose entry computation is the kernel alone: one parameter per
  operand (its shape) and the instruction, its called computations beside it. The featurizer turns
  it into a TpuGraphs TILE graph, as the TpuGraphs tile collection holds one fused kernel per graph.
* ``flops`` / ``transcendentals`` / ``bytes``: an analytical cost, as XLA's HloCostAnalysis counts
  it: 2·M·N·K per dot, 2 · output elements · kernel window · input features / groups per
  convolution, one per output element of elementwise and per input element of reductions;
  transcendental opcodes (exp, log, tanh, ...) are counted apart; bytes = operands + output of the
  kernel (a fusion's intermediates stay in registers or cache). The roofline baseline costs a
  kernel ``max(flops / peak_flops, bytes / peak_bandwidth)`` (`graphcost.models.roofline`).

References:
    [Kaufman] S. J. Kaufman et al. A Learned Performance Model for Tensor Processing Units. MLSys 2021.
        https://arxiv.org/abs/2008.01040 (§2-3: kernels as graphs, costs summed over a program)
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field, replace

from graphcost.frontend.hlo.compiled_stats import shape_bytes
from graphcost.frontend.hlo.hlo_proto import HloComputation, HloInstruction, HloModule, Shape

CONTROL_FLOW = frozenset({"while", "conditional", "call"})
NO_THUNK = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
                      "opt-barrier", "partition-id", "replica-id"})
TRANSCENDENTAL = frozenset({"exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic",
                            "sqrt", "rsqrt", "cbrt", "sine", "cosine", "tan", "power", "atan2", "erf"})
REDUCING = frozenset({"reduce", "reduce-window", "select-and-scatter", "scatter", "sort"})
FREE = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "reshape", "broadcast",
                  "transpose", "copy", "slice", "dynamic-slice", "dynamic-update-slice", "concatenate", "pad",
                  "iota", "reverse", "gather", "convert", "bitcast-convert"})


@dataclass
class Kernel:
    """One thunk-level instruction of an optimized module (module docstring)."""

    name: str
    opcode: str
    kind: str  # "fusion:kLoop", "fusion:kCustom", "dot", "custom-call:<target>", "while", ...
    fingerprint: str
    text: str
    flops: float
    transcendentals: float
    bytes: float
    graph: HloModule | None = field(default=None, repr=False)  # None for control flow (no kernel graph)
    parent: str = ""  # the control-flow instruction whose body holds it ("" in the entry computation)
    executions: float | None = 1.0  # runs per call: the product of the enclosing loops' trip counts (None: unknown)

    @property
    def control_flow(self) -> bool:
        return self.opcode in CONTROL_FLOW


def shape_text(shape: Shape) -> str:
    """``f32[8,128]{1,0}``-like text of a shape, layout included; tuples in parentheses."""
    if shape.tuple_shapes:
        return "(" + ",".join(shape_text(s) for s in shape.tuple_shapes) + ")"
    layout = "{" + ",".join(map(str, shape.layout.minor_to_major)) + "}" if shape.layout is not None else ""
    return f"{shape.element_type_name}[{','.join(map(str, shape.dimensions))}]{layout}"


def elements(shape: Shape) -> float:
    if shape.tuple_shapes:
        return float(sum(elements(s) for s in shape.tuple_shapes))
    return float(math.prod(shape.dimensions))


def _attributes(inst: HloInstruction) -> str:
    """The attributes of an instruction that change what it computes (names and ids excluded)."""
    parts = []
    for key in ("fusion_kind", "custom_call_target", "comparison_direction"):
        value = getattr(inst, key)
        if value:
            parts.append(f"{key}={value}")
    if inst.opcode == "parameter":
        parts.append(f"p={inst.parameter_number}")
    if inst.opcode == "get-tuple-element":
        parts.append(f"i={inst.tuple_index}")
    for key in ("dimensions", "dynamic_slice_sizes"):
        value = getattr(inst, key)
        if value:
            parts.append(f"{key}={value}")
    if inst.window:
        parts.append("window=" + ";".join(f"{w.size},{w.stride},{w.padding_low},{w.padding_high},{w.window_dilation},"
                                          f"{w.base_dilation},{int(w.window_reversal)}" for w in inst.window))
    if inst.slice_dimensions:
        parts.append("slice=" + ";".join(f"{s.start},{s.limit},{s.stride}" for s in inst.slice_dimensions))
    if inst.padding_config:
        parts.append("pad=" + ";".join(f"{p.edge_padding_low},{p.edge_padding_high}" for p in inst.padding_config))
    if inst.dot_dimension_numbers is not None:
        d = inst.dot_dimension_numbers
        parts.append(f"dot={d.lhs_contracting_dimensions}{d.rhs_contracting_dimensions}"
                     f"{d.lhs_batch_dimensions}{d.rhs_batch_dimensions}")
    if inst.convolution_dimension_numbers is not None:
        c = inst.convolution_dimension_numbers
        parts.append(f"conv={c.input_batch_dimension},{c.input_feature_dimension},{c.input_spatial_dimensions},"
                     f"{c.kernel_input_feature_dimension},{c.kernel_output_feature_dimension},"
                     f"{c.kernel_spatial_dimensions},{c.output_batch_dimension},{c.output_feature_dimension},"
                     f"{c.output_spatial_dimensions}")
    for key in ("feature_group_count", "batch_group_count"):
        value = getattr(inst, key)
        if value > 1:
            parts.append(f"{key}={value}")
    return " ".join(parts)


class _Module:
    """Look-ups over one module: computations by id, each instruction's computation."""

    def __init__(self, module: HloModule):
        self.module = module
        self.comps = {c.id: c for c in module.computations}
        self.inst = {i.id: i for c in module.computations for i in c.instructions}
        self.next_id = max(self.inst, default=0) + 1  # ids of the parameters a kernel graph adds
        self._canon: dict[int, str] = {}
        self._hash: dict[int, str] = {}

    def computation_text(self, comp_id: int) -> str:
        """Canonical text of a computation: one line per instruction, operands by position."""
        if comp_id not in self._canon:
            comp = self.comps[comp_id]
            pos = {inst.id: j for j, inst in enumerate(comp.instructions)}
            lines = []
            for inst in comp.instructions:
                ops = ",".join(str(pos.get(o, "?")) for o in inst.operand_ids)
                calls = ",".join(self.computation_hash(c) for c in inst.called_computation_ids if c in self.comps)
                root = "ROOT " if inst.id == comp.root_id else ""
                lines.append(f"{root}{inst.opcode} {shape_text(inst.shape)} ({ops}) {_attributes(inst)} [{calls}]")
            self._canon[comp_id] = "\n".join(lines)
        return self._canon[comp_id]

    def computation_hash(self, comp_id: int) -> str:
        if comp_id not in self._hash:
            self._hash[comp_id] = hashlib.sha256(self.computation_text(comp_id).encode()).hexdigest()[:16]
        return self._hash[comp_id]

    def called(self, inst: HloInstruction) -> list[int]:
        """Every computation `inst` calls, transitively, callees first (the proto's order)."""
        seen: dict[int, None] = {}  # insertion-ordered set

        def visit(cid: int) -> None:
            if cid in seen or cid not in self.comps:
                return
            seen[cid] = None
            for sub in self.comps[cid].instructions:
                for c in sub.called_computation_ids:
                    visit(c)
            del seen[cid]
            seen[cid] = None  # after its callees

        for c in inst.called_computation_ids:
            visit(c)
        return list(seen)

    def kernel_text(self, inst: HloInstruction) -> str:
        operands = ",".join(shape_text(self.inst[o].shape) if o in self.inst else "?" for o in inst.operand_ids)
        body = "\n".join(f"== {self.computation_text(c)}" for c in inst.called_computation_ids if c in self.comps)
        return f"{inst.opcode} {shape_text(inst.shape)} ({operands}) {_attributes(inst)}\n{body}"

    def kernel_graph(self, inst: HloInstruction) -> HloModule:
        """A module whose entry holds one parameter per operand and the kernel instruction."""
        top = self.next_id
        params = []
        for j, o in enumerate(inst.operand_ids):
            shape = self.inst[o].shape if o in self.inst else Shape()
            params.append(HloInstruction(name=f"p{j}", opcode="parameter", shape=shape, parameter_number=j, id=top + j))
        kernel = replace(inst, operand_ids=[top + j for j in range(len(params))], control_predecessor_ids=[])
        entry = HloComputation(name=f"kernel.{inst.name}", instructions=[*params, kernel], id=-1, root_id=kernel.id)
        comps = [self.comps[c] for c in self.called(inst)]
        return HloModule(name=inst.name, entry_computation_name=entry.name, entry_computation_id=-1,
                         computations=[*comps, entry])

    def cost(self, inst: HloInstruction) -> tuple[float, float]:
        """(flops, transcendentals) of an instruction, its called computations included once per
        output element for elementwise maps (module docstring)."""
        flops = trans = 0.0
        for sub in self._flat(inst):
            f, t = _op_cost(sub, self.inst)
            flops += f
            trans += t
        return flops, trans

    def _flat(self, inst: HloInstruction) -> list[HloInstruction]:
        """The instruction itself, or (a fusion) the instructions of its fused computation(s)."""
        if inst.opcode != "fusion":
            return [inst]
        out = []
        for c in inst.called_computation_ids:
            for sub in self.comps.get(c, HloComputation()).instructions:
                out.extend(self._flat(sub))
        return out


def _op_cost(inst: HloInstruction, by_id: dict[int, HloInstruction]) -> tuple[float, float]:
    op = inst.opcode
    out = elements(inst.shape)
    if op == "dot" and inst.dot_dimension_numbers is not None and inst.operand_ids:
        lhs = by_id.get(inst.operand_ids[0])
        k = math.prod(lhs.shape.dimensions[d] for d in inst.dot_dimension_numbers.lhs_contracting_dimensions
                      if lhs is not None and d < len(lhs.shape.dimensions)) if lhs is not None else 1
        return 2.0 * out * k, 0.0
    if op == "convolution" and inst.convolution_dimension_numbers is not None and len(inst.operand_ids) > 1:
        rhs = by_id.get(inst.operand_ids[1])
        if rhs is None:
            return 2.0 * out, 0.0
        c = inst.convolution_dimension_numbers
        dims = rhs.shape.dimensions
        window = math.prod(dims[d] for d in c.kernel_spatial_dimensions if d < len(dims))
        in_feat = dims[c.kernel_input_feature_dimension] if c.kernel_input_feature_dimension < len(dims) else 1
        return 2.0 * out * window * in_feat, 0.0
    if op in REDUCING:
        first = by_id.get(inst.operand_ids[0]) if inst.operand_ids else None
        return (elements(first.shape) if first is not None else out), 0.0
    if op in FREE or op in CONTROL_FLOW or op == "fusion" or op == "custom-call":
        return 0.0, 0.0
    if op in TRANSCENDENTAL:
        return 0.0, out
    return out, 0.0


_TRIP = re.compile(r"%?([\w.\-]+) = .*? while\(.*backend_config=(\{.*\})\s*$")


def trip_counts(module_text: str) -> dict[str, int]:
    """``{while instruction name: known trip count}`` from an optimized module's text (XLA records
    ``"known_trip_count":{"n":"7"}`` in a while's backend config; the proto fields graphcost reads
    do not carry it). Loops without a known count are absent."""
    out = {}
    for line in module_text.splitlines():
        if "known_trip_count" not in line or " while(" not in line:
            continue
        m = _TRIP.search(line.strip())
        if not m:
            continue
        try:
            n = json.loads(m.group(2)).get("known_trip_count", {}).get("n")
        except (json.JSONDecodeError, AttributeError):
            continue
        if n is not None and str(n).isdigit():
            out[m.group(1)] = int(n)
    return out


def kernel_computations(module: HloModule, trips: dict[str, int] | None = None
                        ) -> list[tuple[HloComputation, str, float | None]]:
    """The computations whose instructions run as thunks, each with the control-flow instruction
    that runs it ("" for the entry) and its runs per call: the entry and, transitively, the bodies,
    conditions and branches of its control flow (fusion bodies and reducers are not). A while body
    runs its trip count times (`trips`; unknown: None), its condition once more; a branch or a
    called computation once."""
    m = _Module(module)
    order: list[tuple[HloComputation, str, float | None]] = []
    visited: set[int] = set()
    trips = trips or {}

    def visit(cid: int, parent: str, runs: float | None) -> None:
        if cid not in m.comps or cid in visited:
            return
        visited.add(cid)
        comp = m.comps[cid]
        order.append((comp, parent, runs))
        for inst in comp.instructions:
            if inst.opcode not in CONTROL_FLOW:
                continue
            n = trips.get(inst.name) if inst.opcode == "while" else 1
            for j, c in enumerate(inst.called_computation_ids):
                inner = None if runs is None or n is None else runs * (n + (1 if inst.opcode == "while" and
                                                                            _is_condition(inst, j) else 0))
                visit(c, inst.name, inner)

    visit(module.entry_computation_id, "", 1.0)
    return order


def _is_condition(inst: HloInstruction, j: int) -> bool:
    """XLA keeps a while's called computations as (body, condition) (kBodyComputationIndex 0)."""
    return j == 1 and len(inst.called_computation_ids) == 2


def module_kernels(module: HloModule, trips: dict[str, int] | None = None) -> dict[str, Kernel]:
    """``{instruction name: Kernel}`` of every thunk-level instruction of an optimized module;
    `trips` (`trip_counts`) gives the executions of loop bodies' kernels."""
    m = _Module(module)
    out: dict[str, Kernel] = {}
    for comp, parent, runs in kernel_computations(module, trips):
        for inst in comp.instructions:
            if inst.opcode in NO_THUNK:
                continue
            text = m.kernel_text(inst)
            kind = inst.opcode
            if inst.opcode == "fusion":
                kind = f"fusion:{inst.fusion_kind or '?'}"
            elif inst.opcode == "custom-call":
                kind = f"custom-call:{inst.custom_call_target}"
            flops, trans = m.cost(inst)
            io = shape_bytes(inst.shape) + sum(shape_bytes(m.inst[o].shape) for o in inst.operand_ids if o in m.inst)
            out[inst.name] = Kernel(
                name=inst.name, opcode=inst.opcode, kind=kind, fingerprint=hashlib.sha256(text.encode()).hexdigest(),
                text=text, flops=flops, transcendentals=trans, bytes=io,
                graph=None if inst.opcode in CONTROL_FLOW else m.kernel_graph(inst), parent=parent, executions=runs)
    return out


def control_flow_names(module: HloModule) -> frozenset[str]:
    """Names of the module's control-flow instructions (what encloses other thunks in a profile)."""
    return frozenset(i.name for c in module.computations for i in c.instructions if i.opcode in CONTROL_FLOW)
