"""An XLA HLO module as a JAX program: ``graphcost tune MODULE.pb`` without a ``make()`` function.

A reference names a serialized ``HloModuleProto`` (``*.pb``, e.g. ``*.before_optimizations.hlo.pb``
of ``XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_proto"``), an HLO text file (``*.hlo`` or the
dump's ``*.txt``) or a dump directory, optionally followed by ``?inputs=FILE.npz`` (what
``--inputs FILE.npz`` of ``graphcost tune`` and ``rank`` appends). In a directory the module before
optimizations is picked (``*.before_optimizations.hlo.pb``, else ``*.before_optimizations.txt``);
several such modules are refused in one line naming them (restrict the dump with
``--xla_dump_hlo_module_re=NAME`` or name the file).

The module becomes a jittable function through jaxlib's HLO -> StableHLO converter and a
`jax.export.Exported` around the result, so ``jax.jit(fn).lower(*args).compile(options)`` compiles
it like any JAX program and per-compilation XLA options apply. The arguments are generated from
the entry computation's parameters (seeded: floats standard normal x 0.1, integers in
``0 .. min(8, smallest dimension of any parameter) - 1`` so indices stay in bounds, bools at
random), or read from ``FILE.npz``: one array per parameter, named ``arg0``, ``arg1``, ... or
``arr_0``, ``arr_1``, ... (``np.savez(path, *arrays)``), with the parameter's exact shape and
dtype. A module with 64-bit types turns on ``jax_enable_x64`` in the process that loads it.

Entry point: `load_hlo_program(ref) -> (fn, args, name)`; every problem is an `HloProgramError`
of one line naming the file and what is wrong. The reference string alone rebuilds the program,
so the cross-process final check's fresh workers load it the same way. `module_spec(ref)` makes it a
program of ``graphcost collect --programs MODULE.pb``, built from the reference in any process.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Callable

import numpy as np

from graphcost.errors import GraphcostError

PROTO_SUFFIXES = (".pb",)
TEXT_SUFFIXES = (".hlo", ".txt")
INPUTS_MARK = "?inputs="
BEFORE = ".before_optimizations"
SHOWN = 4  # candidates named in an ambiguity error
FLOAT_SCALE = 0.1
INT_HIGH = 8  # generated integers stay below this (and below every dimension)
ELIDED = re.compile(r"constant\(\{\.\.\.\}\)")
MODULE_BYTES_MAX = 2 * 1024**3  # an HLO module file read whole: 2 GiB at most


class HloProgramError(GraphcostError, ValueError):
    """An HLO module reference cannot be made a program (one line: which file, what is wrong)."""


def is_hlo_reference(ref: str) -> bool:
    """True when `ref` names an HLO module file (by its suffix) or a directory (a dump)."""
    path = Path(split_reference(ref)[0]).expanduser()
    return path.suffix in PROTO_SUFFIXES + TEXT_SUFFIXES or path.is_dir()


def split_reference(ref: str) -> tuple[str, str | None]:
    """``(module path, inputs npz or None)`` of ``PATH[?inputs=FILE.npz]``."""
    if INPUTS_MARK in ref and not Path(ref).expanduser().exists():
        path, _, inputs = ref.rpartition(INPUTS_MARK)
        return path, inputs
    return ref, None


def hlo_reference(path: str, inputs: str | Path | None) -> str:
    """The reference of module `path` with the arguments of `inputs` (None: generated)."""
    return path if inputs is None else f"{path}{INPUTS_MARK}{inputs}"


def pick_module(path: Path) -> tuple[Path, str | None]:
    """``(module file, note)``: `path` itself, or the module before optimizations of dump directory `path`
    with a note saying which file was picked (None for a file)."""
    if not path.exists():
        raise HloProgramError(f"{path}: no such file or directory")
    if not path.is_dir():
        return path, None
    try:
        names = sorted(p.name for p in path.iterdir() if p.is_file())
    except OSError as exc:
        raise HloProgramError(f"{path}: cannot list the directory: {exc.strerror or exc}") from None
    for suffix, what in ((f"{BEFORE}.hlo.pb", "proto"), (f"{BEFORE}.txt", "text")):
        found = [n for n in names if n.endswith(suffix)]
        if len(found) == 1:
            return path / found[0], f"{path}: picked {found[0]} (the module before optimizations, {what})"
        if found:
            shown = ", ".join(found[:SHOWN]) + (f" and {len(found) - SHOWN} more" if len(found) > SHOWN else "")
            raise HloProgramError(f"{path}: {len(found)} modules before optimizations ({shown}); name one file, "
                                  "or dump only one with XLA_FLAGS=--xla_dump_hlo_module_re=NAME")
    others = [n for n in names if n.endswith(PROTO_SUFFIXES + TEXT_SUFFIXES)]
    hint = f" (it holds {len(others)} other .pb/.txt file(s), such as {others[0]}; name one)" if others else ""
    raise HloProgramError(f"{path}: no HLO module before optimizations (*{BEFORE}.hlo.pb or *{BEFORE}.txt) in "
                          f"this directory{hint}; dump one with XLA_FLAGS=\"--xla_dump_to={path} "
                          "--xla_dump_hlo_as_proto\"")


def module_proto(path: Path) -> bytes:
    """The serialized HloModuleProto of file `path` (a proto as is, or unwrapped from the ``xla.HloProto``
    that ``--xla_dump_hlo_as_proto`` writes; HLO text parsed by jaxlib), checked by `_module_problem`."""
    import stat

    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise HloProgramError(f"{path}: not a regular file (a FIFO, device or socket), not an HLO module")
        if info.st_size > MODULE_BYTES_MAX:
            raise HloProgramError(f"{path}: {info.st_size / 1e9:.3g} GB, past the {MODULE_BYTES_MAX / 1e9:.3g} GB an "
                                  "HLO module file may have here (the largest real modules are a few hundred MB)")
        with open(path, "rb") as fh:
            data = fh.read(MODULE_BYTES_MAX + 1)  # bounded, whatever the file says its size is
    except OSError as exc:
        raise HloProgramError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MODULE_BYTES_MAX:
        raise HloProgramError(f"{path}: more than {MODULE_BYTES_MAX / 1e9:.3g} GB read, not an HLO module file")
    if not data:
        raise HloProgramError(f"{path}: empty file, not an HLO module")
    if path.suffix in TEXT_SUFFIXES:
        data = _text_to_proto(path, data)
        problem = _module_problem(data)
    else:
        problem = _module_problem(data)
        inner = _hlo_module_field(data) if problem else None
        if inner is not None:  # perhaps an HloProto: its hlo_module (field 1)
            inner_problem = _module_problem(inner)
            if inner_problem is None:
                data, problem = inner, None
            elif not inner_problem.startswith("protobuf decode error"):  # a module inside, but unusable
                problem = inner_problem
    if problem:
        what = "HLO module" if path.suffix in TEXT_SUFFIXES else "HloModuleProto (nor an HloProto holding one)"
        raise HloProgramError(f"{path}: not a usable {what}: {problem}")
    return data


def _text_to_proto(path: Path, data: bytes) -> bytes:
    from jax._src.lib import xla_client as xc

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise HloProgramError(f"{path}: not HLO text (not UTF-8); a binary HloModuleProto needs the .pb suffix") from None
    if not text.lstrip().startswith("HloModule"):
        raise HloProgramError(f"{path}: not HLO text (it does not start with 'HloModule')")
    if ELIDED.search(text):
        raise HloProgramError(f"{path}: the text elides constants ('constant({{...}})'), so their values are lost; "
                              "dump the module as a proto instead: XLA_FLAGS=\"--xla_dump_to=DIR --xla_dump_hlo_as_proto\"")
    from graphcost.frontend.hlo.module_limits import text_nesting_problem

    if nested := text_nesting_problem(text):  # before XLA's parser, which would crash on it
        raise HloProgramError(f"{path}: {nested}")
    parse = getattr(getattr(xc, "hlo", None), "hlo_module_from_text", None)
    if parse is None:
        raise HloProgramError(f"{path}: this jaxlib cannot parse HLO text; dump the module as a proto instead: "
                              "XLA_FLAGS=\"--xla_dump_to=DIR --xla_dump_hlo_as_proto\"")
    try:
        return parse(text).as_serialized_hlo_module_proto()
    except Exception as exc:  # noqa: BLE001 - XLA's parser: its message in one line
        raise HloProgramError(f"{path}: not parsable HLO text: {_one_line(exc)}") from None


def _fields(data: bytes) -> dict:
    """Top-level field number -> ``(wire type, value)`` (the last one of each)."""
    from graphcost.frontend.hlo.protowire import scan_fields

    return {num: (wire, value) for num, wire, value, _, _ in scan_fields(memoryview(data), "HloModuleProto")}


def _hlo_module_field(data: bytes) -> bytes | None:
    """The payload of field 1 when it is length-delimited (``HloProto.hlo_module``), else None."""
    from graphcost.frontend.hlo.protowire import LEN

    try:
        wire, value = _fields(data).get(1, (None, None))
    except ValueError:
        return None
    return bytes(value) if wire == LEN else None


def _module_problem(data: bytes) -> str | None:
    """What keeps `data` from being a usable HloModuleProto, or None."""
    from graphcost.frontend.hlo.hlo_proto import parse_hlo_module, wire_entry_missing
    from graphcost.frontend.hlo.module_limits import fusible_chain_problem

    try:
        module = parse_hlo_module(data)
        fields = _fields(data)
    except ValueError as exc:
        return str(exc)
    if wire_entry_missing(module):
        return "no entry computation"
    if 4 not in fields:
        return "no host program shape"
    if any(i.opcode == "fusion" for c in module.computations for i in c.instructions):
        return ("it is a module after XLA's optimizations (it has fusion instructions), which XLA does not compile "
                f"again; give the module before optimizations (*{BEFORE}.hlo.pb)")
    return fusible_chain_problem(module)  # before XLA's compiler, which would crash on it


def entry_avals(path: Path, proto: bytes) -> tuple[list, list, str]:
    """``(parameter avals, flattened result avals, module name)`` of the entry computation; tuple, token
    or dynamic parameters are refused."""
    import jax
    from jax._src.lib import xla_client as xc

    try:
        computation = xc.XlaComputation(proto)
        shape = computation.program_shape()
        params, result, name = shape.parameter_shapes(), shape.result_shape(), computation.name()
    except Exception as exc:  # noqa: BLE001
        raise HloProgramError(f"{path}: XLA cannot read the module's program shape: {_one_line(exc)}") from None

    def aval(s, what: str):
        if not s.is_array():
            kind = "a tuple" if s.is_tuple() else "a token" if s.is_token() else "not an array"
            raise HloProgramError(f"{path}: {what} is {kind} ({s}); only array parameters are supported")
        if not s.is_static():
            raise HloProgramError(f"{path}: {what} has a dynamic shape ({s}); only static shapes are supported")
        return jax.core.ShapedArray(tuple(s.dimensions()), np.dtype(s.numpy_dtype()))

    def leaves(s):
        return [x for t in s.tuple_shapes() for x in leaves(t)] if s.is_tuple() else [s]

    ins = [aval(s, f"parameter {i}") for i, s in enumerate(params)]
    outs = [aval(s, f"result {i}") for i, s in enumerate(leaves(result))]
    return ins, outs, name or path.name.split(".")[0]


def module_function(path: Path, proto: bytes, ins: list, outs: list, name: str) -> Callable:
    """A jittable function of the module: `jax.export.Exported.call` of its StableHLO form."""
    import dataclasses

    import jax
    from jax import export
    from jax._src.lib import xla_client as xc

    wide = [a for a in ins + outs if np.dtype(a.dtype) in (np.int64, np.uint64, np.float64, np.complex128)]
    if wide and not jax.config.read("jax_enable_x64"):
        jax.config.update("jax_enable_x64", True)  # 64-bit parameters would be truncated to 32 bits otherwise
    try:
        stablehlo = xc._xla.mlir.hlo_to_stablehlo(proto)
    except Exception as exc:  # noqa: BLE001
        raise HloProgramError(f"{path}: jaxlib cannot convert the module to StableHLO: {_one_line(exc)}") from None
    n, k = len(ins), len(outs)
    values = dict(
        fun_name=name, in_tree=jax.tree_util.tree_structure((tuple(range(n)), {})), in_avals=tuple(ins),
        out_tree=jax.tree_util.tree_structure(tuple(range(k)) if k != 1 else 0), out_avals=tuple(outs),
        _has_named_shardings=False, _in_named_shardings=(None,) * n, _out_named_shardings=(None,) * k,
        in_shardings_hlo=(None,) * n, out_shardings_hlo=(None,) * k, nr_devices=1,
        platforms=(export.default_export_platform(),), ordered_effects=(), unordered_effects=(), disabled_safety_checks=(),
        mlir_module_serialized=stablehlo, calling_convention_version=export.maximum_supported_calling_convention_version,
        module_kept_var_idx=tuple(range(n)), uses_global_constants=False, _get_vjp=None)
    fields = [f.name for f in dataclasses.fields(export.Exported)]
    missing = [f for f in fields if f not in values]
    if missing:
        raise HloProgramError(f"{path}: this JAX ({jax.__version__}) has jax.export.Exported fields graphcost does not "
                              f"know ({', '.join(missing)}), so the module cannot be wrapped")
    exported = export.Exported(**{f: values[f] for f in fields})
    return exported.call


ARGUMENTS_MEMORY_FACTOR = 4  # generated arguments, the program's outputs and XLA's buffers: about 4x the parameters
HEADER_SLACK = 1 << 16  # bytes of an .npy member beyond its array: the header


def parameter_bytes(a) -> int:
    """Bytes of one parameter (an abstract value with ``shape`` and ``dtype``)."""
    return int(np.prod(a.shape, dtype=object)) * np.dtype(a.dtype).itemsize


def check_arguments_fit(path: Path, ins: list) -> None:
    """HloProgramError (one line) when the parameters of `path` could not be held: their bytes times
    `ARGUMENTS_MEMORY_FACTOR` past the memory this process can take now (`bounds.available_memory_bytes`)."""
    from graphcost.guards.bounds import available_memory_bytes

    need = sum(parameter_bytes(a) for a in ins)
    free = available_memory_bytes()
    if free is not None and need * ARGUMENTS_MEMORY_FACTOR > free:
        big = max(range(len(ins)), key=lambda i: parameter_bytes(ins[i]))
        raise HloProgramError(f"{path}: its {len(ins)} parameter(s) take {need / 1e9:.3g} GB (parameter {big}: "
                              f"{np.dtype(ins[big].dtype)}{list(ins[big].shape)}); with its outputs and buffers the "
                              f"program needs about {ARGUMENTS_MEMORY_FACTOR}x that, more than the "
                              f"{free / 1e9:.3g} GB of memory available")


def generated_inputs(ins: list, seed: int = 0) -> tuple:
    """Seeded arguments for parameters `ins` (module docstring)."""
    rng = np.random.default_rng(seed)
    dims = [d for a in ins for d in a.shape]
    high = max(1, min([INT_HIGH, *dims]))
    args = []
    for a in ins:
        dt = np.dtype(a.dtype)
        if dt == np.bool_:
            x = rng.random(a.shape) < 0.5
        elif dt.kind in "iu":
            x = rng.integers(0, high, a.shape)
        elif dt.kind == "c":
            x = FLOAT_SCALE * (rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape))
        else:  # float kinds, bfloat16 and float8 (numpy kind 'V') included
            x = FLOAT_SCALE * rng.standard_normal(a.shape)
        args.append(np.asarray(x).astype(dt))
    return tuple(args)


def _member_header(member) -> tuple[tuple, np.dtype]:
    """(shape, dtype) from the header of an open .npy stream, nothing else read."""
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(member)
    else:
        shape, _, dtype = np.lib.format.read_array_header_2_0(member)
    return tuple(shape), np.dtype(dtype)


def read_inputs(path: Path, ins: list, inputs: str) -> tuple:
    """The arguments of npz file `inputs` (module docstring), checked against parameters `ins` before anything
    is loaded: a regular file, an npz archive, one member per parameter whose declared shape, dtype and size
    are the parameter's (so neither a zip bomb nor a header that declares a huge array is ever read)."""
    import stat
    import zipfile

    where = Path(inputs).expanduser()
    try:
        mode = where.stat().st_mode
    except FileNotFoundError:
        raise HloProgramError(f"--inputs {inputs}: no such file") from None
    except OSError as exc:
        raise HloProgramError(f"--inputs {inputs}: cannot be read: {_one_line(exc)}") from None
    if not stat.S_ISREG(mode):
        raise HloProgramError(f"--inputs {inputs}: not a regular file (a directory, FIFO or device); give an .npz "
                              "file written by np.savez")
    try:
        if not zipfile.is_zipfile(where):
            raise HloProgramError(f"--inputs {inputs}: not an npz archive (np.savez(path, *arrays) writes one; a bare "
                                  ".npy array is not)")
        with zipfile.ZipFile(where) as archive:
            members = {i.filename[:-4]: i for i in archive.infolist() if i.filename.endswith(".npy")}
            keys = list(members)
            names = next((ns for ns in ([f"arg{i}" for i in range(len(ins))], [f"arr_{i}" for i in range(len(ins))])
                          if sorted(ns) == sorted(keys)), None)
            if names is None:
                raise HloProgramError(f"--inputs {inputs}: expected {len(ins)} arrays named arg0..arg{len(ins) - 1} "
                                      f"(or arr_0.., np.savez(path, *arrays)) for the {len(ins)} parameters of "
                                      f"{path.name}, got {', '.join(keys) or 'none'}")
            for i, (n, a) in enumerate(zip(names, ins)):
                want = parameter_bytes(a)
                if members[n].file_size > want + HEADER_SLACK:
                    raise HloProgramError(f"--inputs {inputs}: array {n} holds {members[n].file_size} bytes "
                                          f"uncompressed, but parameter {i} of {path.name} ({np.dtype(a.dtype)}"
                                          f"{list(a.shape)}) takes {want}")
                with archive.open(members[n]) as member:
                    shape, dtype = _member_header(member)
                if shape != tuple(a.shape) or dtype != np.dtype(a.dtype):
                    raise HloProgramError(f"--inputs {inputs}: array {n} is {dtype}{list(shape)}, but parameter "
                                          f"{i} of {path.name} is {np.dtype(a.dtype)}{list(a.shape)}")
        with np.load(where, allow_pickle=False) as npz:
            arrays = [npz[n] for n in names]
    except HloProgramError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, MemoryError) as exc:  # damaged; pickles refused
        raise HloProgramError(f"--inputs {inputs}: not a readable npz file of arrays: {_one_line(exc)}") from None
    return tuple(arrays)  # np.load read the headers checked above: each array is its parameter's shape and dtype


def load_hlo_program(ref: str) -> tuple[Callable, tuple, str]:
    """``(fn, args, name)`` of the HLO module reference `ref` (module docstring)."""
    target, inputs = split_reference(ref)
    path, _ = pick_module(Path(target).expanduser())
    if path.suffix not in PROTO_SUFFIXES + TEXT_SUFFIXES:
        raise HloProgramError(f"{path}: not an HLO module file (expected .pb for an HloModuleProto, .hlo or .txt "
                              "for HLO text)")
    proto = module_proto(path)
    ins, outs, name = entry_avals(path, proto)
    fn = module_function(path, proto, ins, outs, name)
    check_arguments_fit(path, ins)
    args = read_inputs(path, ins, inputs) if inputs is not None else generated_inputs(ins)
    return fn, args, name


def with_inputs(ref: str, inputs: str | Path | None) -> str:
    """`ref` with the arguments of npz file `inputs` (``--inputs``; None: `ref` as is). HloProgramError
    when `ref` is not an HLO module reference: a ``make()`` function gives its own arguments."""
    if inputs is None:
        return ref
    if not is_hlo_reference(ref):
        raise HloProgramError(f"--inputs {inputs}: only an XLA module program (MODULE.pb, MODULE.hlo, a dump "
                              f"directory) takes --inputs; {ref}'s make() returns its own example arguments")
    if split_reference(ref)[1] is not None:
        raise HloProgramError(f"--inputs {inputs}: {ref} names its inputs already")
    return hlo_reference(ref, inputs)


def picked(ref: str) -> str | None:
    """For a dump directory, the line that says which module of it `load_hlo_program` takes (else None)."""
    path = Path(split_reference(ref)[0]).expanduser()
    if not path.is_dir():
        return None
    try:
        return pick_module(path)[1]
    except HloProgramError:  # said when the program is loaded
        return None


MODULE_FAMILY = "hlo"  # the family of XLA module programs in a collection


def module_spec(ref: str):
    """The XLA module reference `ref` as a collectable program (a zoo `ProgramSpec`): family ``hlo``,
    name ``hlo-<module file stem>-<8 hex digits of the SHA-256 of the module file and inputs file>``
    (file-name safe; the same module gets the same name), hparams ``{"module": the absolute
    reference}``, which a measuring process (or a resumed collection's manifest) rebuilds it from."""
    from graphcost.frontend.programs.zoo.common import ProgramSpec

    target, inputs = split_reference(ref)
    path, _ = pick_module(Path(target).expanduser())
    path = path.resolve()
    try:
        digest = hashlib.sha256(path.read_bytes())
        if inputs is not None:
            digest.update(Path(inputs).expanduser().read_bytes())
    except OSError as exc:
        raise HloProgramError(f"{exc.filename or path}: cannot read it ({exc.strerror or exc})") from None
    stem = path.name
    for suffix in (*PROTO_SUFFIXES, *TEXT_SUFFIXES, ".hlo", BEFORE):
        stem = stem.removesuffix(suffix)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem)[:80] or "module"
    absolute = hlo_reference(str(path), None if inputs is None else str(Path(inputs).expanduser().resolve()))
    return ProgramSpec(f"{MODULE_FAMILY}-{stem}-{digest.hexdigest()[:8]}", MODULE_FAMILY, {"module": absolute},
                       _build_module)


def _build_module(module: str):
    fn, args, _ = load_hlo_program(module)
    return fn, args


def module_file(ref: str) -> Path | None:
    """The module file (or dump directory) a reference names, resolved; None when it does not exist."""
    path = Path(split_reference(ref)[0]).expanduser()
    return path.resolve() if path.exists() else None


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["HloProgramError", "hlo_reference", "is_hlo_reference", "load_hlo_program", "module_file", "pick_module",
           "picked", "split_reference", "with_inputs"]
