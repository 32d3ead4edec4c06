"""Hypothesis strategies for the module surface: valid HLO text modules and `--inputs` npz files (good and damaged).

`hlo_modules()` draws a module as text, with what its entry parameters are: random float dtypes and shapes,
a DAG of elementwise ops (unary, binary, compare/select, convert from an integer parameter, a broadcast
constant, a reduce to a scalar broadcast back), sometimes a ``while`` loop whose trip count is bounded (1-4),
a tuple result, or a custom call to a target no one registered (which XLA refuses when it compiles).
`npz_inputs(params)` draws an npz for those parameters: one of the right arrays, or one damaged in one of
`NPZ_DAMAGES` ways.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

FLOATS = ("f32", "f16", "bf16", "f64")
UNARY = ("sine", "cosine", "tanh", "exponential", "negate", "abs", "floor", "logistic", "sign")
BINARY = ("add", "subtract", "multiply", "maximum", "minimum", "divide")
NUMPY = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "s32": np.int32}


@dataclass(frozen=True)
class Module:
    """An HLO text module and its entry parameters as (HLO type, shape) pairs."""

    text: str
    params: tuple[tuple[str, tuple[int, ...]], ...]
    custom_call: bool = False


def _shape(dtype: str, dims: tuple[int, ...]) -> str:
    if not dims:
        return f"{dtype}[]"
    layout = "{" + ",".join(str(d) for d in reversed(range(len(dims)))) + "}"
    return f"{dtype}[{','.join(map(str, dims))}]{layout}"


@st.composite
def hlo_modules(draw) -> Module:
    dtype = draw(st.sampled_from(FLOATS))
    dims = tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=3)))
    ty = _shape(dtype, dims)
    scalar = _shape(dtype, ())
    params = [(dtype, dims)]
    lines = [f"  p0 = {ty} parameter(0)"]
    values = ["p0"]
    extra_comps: list[str] = []
    if draw(st.booleans()):
        params.append(("s32", dims))
        lines += [f"  p1 = {_shape('s32', dims)} parameter(1)", f"  v1 = {ty} convert(p1)"]
        values.append("v1")
    n_ops = draw(st.integers(1, 12))
    for i in range(n_ops):
        kind = draw(st.sampled_from(("unary", "binary", "select", "constant", "reduce")))
        a = draw(st.sampled_from(values))
        name = f"v{i + 2}"
        if kind == "unary":
            lines.append(f"  {name} = {ty} {draw(st.sampled_from(UNARY))}({a})")
        elif kind == "binary":
            b = draw(st.sampled_from(values))
            lines.append(f"  {name} = {ty} {draw(st.sampled_from(BINARY))}({a}, {b})")
        elif kind == "select":
            b = draw(st.sampled_from(values))
            lines += [f"  c{i} = {_shape('pred', dims)} compare({a}, {b}), direction=GT",
                      f"  {name} = {ty} select(c{i}, {a}, {b})"]
        elif kind == "constant":
            value = draw(st.sampled_from(("0", "1", "-2.5", "0.125")))
            lines += [f"  k{i} = {scalar} constant({value})", f"  {name} = {ty} broadcast(k{i}), dimensions={{}}"]
        else:
            if "add_comp" not in extra_comps:
                extra_comps.append("add_comp")
            all_dims = ",".join(str(d) for d in range(len(dims)))
            lines += [f"  z{i} = {scalar} constant(0)",
                      f"  r{i} = {scalar} reduce({a}, z{i}), dimensions={{{all_dims}}}, to_apply=add_comp",
                      f"  {name} = {ty} broadcast(r{i}), dimensions={{}}"]
        values.append(name)
    last = values[-1]
    comps = []
    if "add_comp" in extra_comps:
        comps.append(f"add_comp {{\n  a = {scalar} parameter(0)\n  b = {scalar} parameter(1)\n"
                     f"  ROOT s = {scalar} add(a, b)\n}}\n")
    if draw(st.booleans()):  # a while loop: (counter, value), the counter below a drawn trip count
        trips = draw(st.integers(1, 4))
        state = f"(s32[], {ty})"
        comps.append(f"cond {{\n  s = {state} parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
                     f"  n = s32[] constant({trips})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n")
        comps.append(f"body {{\n  s = {state} parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
                     f"  x = {ty} get-tuple-element(s), index=1\n  one = s32[] constant(1)\n"
                     f"  j = s32[] add(i, one)\n  y = {ty} sine(x)\n  ROOT t = {state} tuple(j, y)\n}}\n")
        lines += ["  i0 = s32[] constant(0)", f"  w0 = {state} tuple(i0, {last})",
                  f"  w1 = {state} while(w0), condition=cond, body=body", f"  wl = {ty} get-tuple-element(w1), index=1"]
        last = "wl"
    custom = draw(st.integers(0, 9)) == 0
    if custom:  # a target nobody registered: XLA must refuse it when it compiles, in one line
        lines.append(f'  cc = {ty} custom-call({last}), custom_call_target="graphcost_fuzz_unregistered"')
        last = "cc"
    if draw(st.booleans()) and len(values) > 1:
        lines.append(f"  ROOT out = ({ty}, {ty}) tuple({last}, {draw(st.sampled_from(values))})")
    else:
        lines.append(f"  ROOT out = {ty} copy({last})")
    text = "HloModule fuzz\n\n" + "\n".join(comps) + "\nENTRY main {\n" + "\n".join(lines) + "\n}\n"
    return Module(text, tuple(params), custom)


NPZ_DAMAGES = ("good", "good_arr_names", "wrong_name", "missing", "extra", "wrong_shape", "wrong_dtype", "object",
               "truncated", "bare_npy", "garbage", "empty_zip", "declared_huge", "empty_file")


def _array(dtype: str, dims: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype == "bf16":
        import ml_dtypes

        return rng.standard_normal(dims).astype(ml_dtypes.bfloat16)
    if dtype == "s32":
        return rng.integers(0, 4, dims).astype(np.int32)
    return (0.1 * rng.standard_normal(dims)).astype(NUMPY[dtype])


def write_inputs(path: Path, params, damage: str, seed: int) -> Path:
    """An npz for `params` at `path`, damaged as `damage` says (one of `NPZ_DAMAGES`)."""
    rng = np.random.default_rng(seed)
    arrays = {f"arg{i}": _array(t, d, rng) for i, (t, d) in enumerate(params)}
    if damage == "good_arr_names":
        arrays = {f"arr_{i}": a for i, a in enumerate(arrays.values())}
    elif damage == "wrong_name":
        arrays = {f"x{k}": a for k, a in arrays.items()}
    elif damage == "missing":
        arrays.pop(f"arg{len(params) - 1}")
    elif damage == "extra":
        arrays["arg99"] = np.zeros(3, np.float32)
    elif damage == "wrong_shape":
        arrays["arg0"] = np.zeros(tuple(d + 1 for d in params[0][1]) or (2,), arrays["arg0"].dtype)
    elif damage == "wrong_dtype":
        arrays["arg0"] = arrays["arg0"].astype(np.int64)
    elif damage == "object":
        arrays["arg0"] = np.array([{"a": 1}], dtype=object)
    if damage == "object":
        np.savez(path, **arrays)  # a pickled member: np.load(allow_pickle=False) must refuse it
    elif damage == "bare_npy":
        with open(path, "wb") as fh:
            np.save(fh, arrays["arg0"])
    elif damage == "garbage":
        path.write_bytes(rng.bytes(int(rng.integers(1, 512))))
    elif damage == "empty_file":
        path.write_bytes(b"")
    elif damage == "empty_zip":
        with zipfile.ZipFile(path, "w"):
            pass
    elif damage == "declared_huge":  # a header declaring 10^12 elements over a tiny body
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": np.lib.format.dtype_to_descr(arrays["arg0"].dtype),
                                                   "fortran_order": False, "shape": (10**12,)})
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("arg0.npy", buf.getvalue() + b"\x00" * 64)
            for k, a in arrays.items():
                if k != "arg0":
                    member = io.BytesIO()
                    np.save(member, a)
                    zf.writestr(f"{k}.npy", member.getvalue())
    else:
        np.savez(path, **arrays)
        if damage == "truncated":
            data = path.read_bytes()
            path.write_bytes(data[: max(1, int(len(data) * rng.uniform(0.1, 0.9)))])
    return path
