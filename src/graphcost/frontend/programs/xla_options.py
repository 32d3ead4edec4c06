"""What the installed jaxlib's XLA knows: the fields of its ``DebugOptions`` and their defaults.

The per-compilation options of ``Lowered.compile(compiler_options=...)`` are the fields of XLA's
``DebugOptions`` protobuf message (XLA looks each name up in that message's descriptor and
refuses an unknown one with "No such compile option"). jaxlib exposes only a few of them in
Python, but it carries the whole ``xla/xla.proto`` file descriptor, serialised, in its shared
library (every C++ protobuf binary embeds the descriptors of the messages it was built with).
This module reads it from there:

1. find ``\\n<len>xla/xla.proto`` (field 1, ``name``, of a ``FileDescriptorProto``) in jaxlib's
   shared libraries, walk the top-level fields that follow while they are fields of a
   ``FileDescriptorProto`` (numbers 1-14, wire types VARINT / LEN) to find where it ends, and
   parse it with the protobuf package;
2. the option schema (`option_schema`) is ``DebugOptions``' fields: name, type (bool, int,
   float, string, enum) and, for an enum, its value names;
3. the defaults (`option_defaults`) are what a fresh ``xla_client.CompileOptions()`` carries:
   its serialised ``CompileOptionsProto`` holds ``executable_build_options.debug_options``
   filled with XLA's defaults (and whatever ``XLA_FLAGS`` says). It is parsed with a message
   class built from a copy of ``DebugOptions`` that keeps only the fields of built-in or nested
   types (the others are not options the flag space uses).

Nothing here is hard-coded but the protobuf layout; when the descriptor cannot be found (another
jaxlib build) both functions return None and callers fall back with a warning.
"""

from __future__ import annotations

import functools
import mmap
from dataclasses import dataclass
from pathlib import Path

from graphcost.frontend.hlo.protowire import LEN, VARINT, ProtoDecodeError, read_varint, scan_fields

XLA_PROTO = "xla/xla.proto"
COMPILE_OPTIONS_PROTO = "xla/pjrt/proto/compile_options.proto"

# FieldDescriptorProto.Type numbers (descriptor.proto)
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _BOOL, _STRING, _ENUM, _UINT32, _SINT32, _SINT64 = (
    1, 2, 3, 4, 5, 8, 9, 14, 13, 17, 18)
_INTS = (_INT64, _UINT64, _INT32, _UINT32, _SINT32, _SINT64)
_REPEATED = 3


@dataclass(frozen=True)
class OptionInfo:
    """One field of XLA's DebugOptions.

    Attributes:
        name: the option's name (``xla_cpu_prefer_vector_width``).
        kind: ``bool``, ``int``, ``float``, ``string``, ``enum`` or ``other`` (a message).
        repeated: whether the field is a list (e.g. ``xla_cpu_experimental_ynn_fusion_type``).
        enum_values: for an enum, its value names and numbers in declaration order.
    """

    name: str
    kind: str
    repeated: bool = False
    enum_values: tuple[tuple[str, int], ...] = ()


def _jaxlib_libraries() -> list[Path]:
    try:
        import jaxlib
    except ImportError:
        return []
    root = Path(jaxlib.__file__).parent
    libs = sorted(root.glob("*.so"), key=lambda p: (p.name != "libjax_common.so", p.name))
    return libs + sorted(root.glob("*.dylib")) + sorted(root.glob("*.pyd"))


def _file_descriptor_at(buf, start: int):
    """The `FileDescriptorProto` serialised from `start` on, its end found by walking its fields."""
    from google.protobuf import descriptor_pb2

    end = start
    try:
        for field, wire, value, _, payload in scan_fields(buf, "FileDescriptorProto", start):
            if not 1 <= field <= 14 or wire not in (VARINT, LEN):
                break
            end = payload + len(value) if wire == LEN else read_varint(buf, payload)[1]
    except ProtoDecodeError:
        pass  # the bytes after the descriptor are not a field: it ended at the last whole field
    fd = descriptor_pb2.FileDescriptorProto()
    fd.ParseFromString(bytes(buf[start:end]))
    return fd


@functools.lru_cache(maxsize=None)
def _descriptors() -> dict | None:
    """{file name: FileDescriptorProto} of xla.proto and compile_options.proto, or None."""
    found = {}
    for lib in _jaxlib_libraries():
        try:
            with open(lib, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                for name in (XLA_PROTO, COMPILE_OPTIONS_PROTO):
                    if name in found:
                        continue
                    at = buf.find(b"\n" + bytes([len(name)]) + name.encode())
                    if at >= 0:
                        fd = _file_descriptor_at(buf, at)
                        if fd.name == name and fd.message_type:
                            found[name] = fd
        except (OSError, ValueError, ProtoDecodeError):
            continue
        if len(found) == 2:
            break
    return found if XLA_PROTO in found else None


def _message(fd, name: str):
    return next((m for m in fd.message_type if m.name == name), None)


@functools.lru_cache(maxsize=None)
def option_schema() -> dict[str, OptionInfo] | None:
    """Every DebugOptions field of the installed jaxlib by name; None when it cannot be read.

    Example:
        ```python
        schema = option_schema()
        schema["xla_cpu_scheduler_type"].enum_values[:2]
        # (('CPU_SCHEDULER_TYPE_DEFAULT', 0), ('CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED', 1))
        ```
    """
    fds = _descriptors()
    msg = _message(fds[XLA_PROTO], "DebugOptions") if fds else None
    if msg is None:
        return None
    enums = {f".xla.DebugOptions.{e.name}": tuple((v.name, v.number) for v in e.value) for e in msg.enum_type}
    for e in fds[XLA_PROTO].enum_type:
        enums.setdefault(f".xla.{e.name}", tuple((v.name, v.number) for v in e.value))
    out = {}
    for f in msg.field:
        if f.type == _BOOL:
            kind = "bool"
        elif f.type in _INTS:
            kind = "int"
        elif f.type in (_DOUBLE, _FLOAT):
            kind = "float"
        elif f.type == _STRING:
            kind = "string"
        elif f.type == _ENUM and f.type_name in enums:
            kind = "enum"
        else:
            kind = "other"
        out[f.name] = OptionInfo(f.name, kind, f.label == _REPEATED, enums.get(f.type_name, ()) if kind == "enum" else ())
    return out


def _pruned_file(fds) -> "object":
    """A FileDescriptorProto with DebugOptions (fields of built-in or nested types only) and the two
    messages that lead to it in a CompileOptionsProto, each pruned to that one field."""
    from google.protobuf import descriptor_pb2

    src = _message(fds[XLA_PROTO], "DebugOptions")
    fd = descriptor_pb2.FileDescriptorProto(name="graphcost_xla_debug_options.proto", package="xla", syntax="proto3")
    dbg = fd.message_type.add()
    dbg.CopyFrom(src)
    keep = [f for f in dbg.field if not f.type_name or f.type_name.startswith(".xla.DebugOptions.")]
    del dbg.field[:]
    dbg.field.extend(keep)
    nested = {f".xla.DebugOptions.{m.name}" for m in dbg.nested_type}
    for m in dbg.nested_type:  # map entries of nested types referring outside are dropped with their field
        if any(f.type_name and not f.type_name.startswith(".xla.DebugOptions.") for f in m.field):
            nested.discard(f".xla.DebugOptions.{m.name}")
    keep = [f for f in dbg.field if f.type != 11 or f.type_name in nested]  # 11 = TYPE_MESSAGE
    del dbg.field[:]
    dbg.field.extend(keep)
    # the oneofs (proto3 `optional` fields have synthetic ones) of the fields kept, renumbered in order
    used = sorted({f.oneof_index for f in dbg.field if f.HasField("oneof_index")})
    decls = [dbg.oneof_decl[i] for i in used]
    for f in dbg.field:
        if f.HasField("oneof_index"):
            f.oneof_index = used.index(f.oneof_index)
    del dbg.oneof_decl[:]
    dbg.oneof_decl.extend(decls)
    co = fds.get(COMPILE_OPTIONS_PROTO)
    numbers = {"CompileOptionsProto": 3, "ExecutableBuildOptionsProto": 3}  # used only without the descriptor
    if co is not None:
        for outer, field in (("CompileOptionsProto", "executable_build_options"),
                             ("ExecutableBuildOptionsProto", "debug_options")):
            m = _message(co, outer)
            f = next((f for f in (m.field if m else ()) if f.name == field), None)
            if f is not None:
                numbers[outer] = f.number
    for outer, inner, field in (("ExecutableBuildOptionsProto", ".xla.DebugOptions", "debug_options"),
                                ("CompileOptionsProto", ".xla.ExecutableBuildOptionsProto", "executable_build_options")):
        m = fd.message_type.add(name=outer)
        m.field.add(name=field, number=numbers[outer], type=11, label=1, type_name=inner)
    return fd


@functools.lru_cache(maxsize=None)
def option_defaults() -> dict[str, object] | None:
    """The value every DebugOptions field has when no compile option is passed (bools, ints,
    floats, strings; enum value names; lists for repeated fields); None when it cannot be read."""
    fds = _descriptors()
    if not fds or _message(fds[XLA_PROTO], "DebugOptions") is None:
        return None
    from google.protobuf import descriptor_pool, message_factory

    try:
        from jax._src.lib import xla_client
    except ImportError:
        return None
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_pruned_file(fds))
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("xla.CompileOptionsProto"))
    dbg = cls.FromString(xla_client.CompileOptions().SerializeAsString()).executable_build_options.debug_options
    out = {}
    for f in dbg.DESCRIPTOR.fields:
        value = getattr(dbg, f.name)
        if f.enum_type is not None:
            names = {v.number: v.name for v in f.enum_type.values}
            value = [names.get(v, v) for v in value] if _is_repeated(f) else names.get(value, value)
        elif _is_repeated(f):
            value = list(value) if f.message_type is None else None
        elif f.message_type is not None:
            continue
        out[f.name] = value
    return out


def _is_repeated(field) -> bool:
    """Whether a protobuf FieldDescriptor is a list (`is_repeated` in protobuf >= 5, `label` before)."""
    flag = getattr(field, "is_repeated", None)
    return bool(flag) if flag is not None else field.label == _REPEATED
