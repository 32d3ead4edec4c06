"""Decode protobuf bytes with the generated classes (`protos/hlo_tuning_pb2`); locate the damage when refused.

protobuf's C parser (upb) decodes a 100k-instruction HLO module in a fraction of a second, but on
damaged bytes it says only *that* they are corrupt ("Wire format was corrupt"). `decode` then walks
the same bytes once more with the wire walker (`protowire.scan_fields`), guided by the message
descriptors, and raises a `ProtoDecodeError` naming the message path (``X.computations[0].
instructions[3].shape``), the field number and the absolute byte offset of the first problem:
truncation, an over-long varint, field number 0, a group or unknown wire type, a packed field cut
mid-value, a string that is not UTF-8, or a message nested in itself deeper than the caller's bound.

The walker follows protobuf's rules where they are lenient: unknown fields, and known fields
arriving with another wire type (kept as unknown fields), are skipped.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from graphcost.frontend.hlo.protowire import LEN, ProtoDecodeError, read_varint, scan_fields

# What protobuf raises for bytes it refuses: upb raises DecodeError for everything; the pure-Python
# backend raises UnicodeDecodeError for a string that is not UTF-8.
PARSE_ERRORS = (DecodeError, UnicodeDecodeError)
# Deepest nesting of any messages the walker follows (upb's own default limit is 100).
MAX_NESTING = 100
_VARINT_TYPES = {
    FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_BOOL, FieldDescriptor.TYPE_ENUM,
}
_FIXED_SIZES = {
    FieldDescriptor.TYPE_FIXED32: 4, FieldDescriptor.TYPE_SFIXED32: 4, FieldDescriptor.TYPE_FLOAT: 4,
    FieldDescriptor.TYPE_FIXED64: 8, FieldDescriptor.TYPE_SFIXED64: 8, FieldDescriptor.TYPE_DOUBLE: 8,
}


def nesting_problem(field_name: str, limit: int) -> str:
    """The one wording of a too-deep self-nesting, for the walker and for checks after parsing."""
    return f"{field_name} nested deeper than {limit} levels (corrupt or hostile input)"


def decode(cls: type[Message], data: bytes | memoryview, label: str, self_nesting_limit: int = MAX_NESTING,
           whole: bytes | memoryview | None = None, start: int = 0):
    """Parse `data` as message `cls`; a `ProtoDecodeError` naming `label`'s path, field and offset when refused.

    When `data` is a slice of a larger buffer `whole` starting at byte `start`, offsets in the
    error count from the start of `whole`.
    """
    try:
        return cls.FromString(data)
    except PARSE_ERRORS as exc:
        where = data if whole is None else whole
        raise locate_damage(where, cls.DESCRIPTOR, label, self_nesting_limit, str(exc),
                            start, start + len(data)) from None


def locate_damage(data: bytes | memoryview, descriptor: Descriptor, label: str, self_nesting_limit: int = MAX_NESTING,
                  parser_said: str = "", start: int = 0, end: int | None = None) -> ProtoDecodeError:
    """The first problem in ``data[start:end]`` read as `descriptor`, as a ProtoDecodeError (not raised here)."""
    view = memoryview(data)
    try:
        _walk(view, start, len(view) if end is None else end, descriptor, label, self_nesting_limit, 0, 0)
    except ProtoDecodeError as exc:
        return exc
    detail = f" ({parser_said.rsplit(': ', 1)[-1]})" if parser_said else ""
    return ProtoDecodeError(label, None, start, f"protobuf's parser refused the bytes{detail}")


def _walk(view: memoryview, start: int, end: int, desc: Descriptor, msg: str, limit: int, depth: int,
          self_depth: int) -> None:
    """Check every field of the message in ``view[start:end]``, recursing into known sub-messages."""
    if depth > MAX_NESTING:
        raise ProtoDecodeError(msg, None, start, f"messages nested deeper than {MAX_NESTING} levels")
    counts: dict[int, int] = {}
    for num, wire, value, key_pos, payload in scan_fields(view, msg, start, end):
        fd = desc.fields_by_number.get(num)
        if fd is None or wire != LEN:
            continue  # unknown field, or a scalar (its bytes were checked by scan_fields)
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            index = counts[num] = counts.get(num, -1) + 1
            recursive = fd.message_type is desc
            if recursive and self_depth >= limit:
                raise ProtoDecodeError(msg, num, key_pos, nesting_problem(fd.name, limit))
            _walk(view, payload, payload + len(value), fd.message_type,  # type: ignore[arg-type]
                  _child_name(msg, fd, index, self_depth if recursive else None),
                  limit, depth + 1, self_depth + 1 if recursive else 0)
        elif fd.type == FieldDescriptor.TYPE_STRING:
            try:
                bytes(value).decode("utf-8")  # type: ignore[arg-type]
            except UnicodeDecodeError as exc:
                raise ProtoDecodeError(msg, num, key_pos, f"string is not valid UTF-8 ({exc.reason})") from None
        elif fd.is_repeated:
            _check_packed(view, payload, payload + len(value), fd, msg, num)  # type: ignore[arg-type]


def _check_packed(view: memoryview, start: int, end: int, fd: FieldDescriptor, msg: str, num: int) -> None:
    """A packed repeated scalar: whole varints, or a length that is a multiple of the fixed size."""
    if fd.type in _VARINT_TYPES:
        pos = start
        while pos < end:
            _, pos = read_varint(view, pos, msg, num, end)
    elif fd.type in _FIXED_SIZES and (end - start) % _FIXED_SIZES[fd.type]:
        raise ProtoDecodeError(msg, num, start, f"packed field length {end - start} is not a multiple of "
                                                f"{_FIXED_SIZES[fd.type]}")


def _child_name(msg: str, fd: FieldDescriptor, index: int, self_depth: int | None) -> str:
    """``msg.field[i]`` for a repeated field, ``msg.field`` for a singular one; a self-nesting chain
    keeps a bounded name: ``X.tuple_shapes``, then ``X.tuple_shapes[depth 2]``, ..."""
    if self_depth is not None:
        return nested_name(msg, fd.name, self_depth)
    if fd.is_repeated:
        return f"{msg}.{fd.name}[{index}]"
    return f"{msg}.{fd.name}"


def nested_name(msg: str, field_name: str, depth: int) -> str:
    """Name of a message nested `depth` + 1 levels in itself through `field_name`, of bounded length."""
    if depth == 0:
        return f"{msg}.{field_name}"
    return f"{msg.rsplit('.' + field_name, 1)[0]}.{field_name}[depth {depth + 1}]"

