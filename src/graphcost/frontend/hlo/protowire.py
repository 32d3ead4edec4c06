"""A minimal protocol-buffer *wire format* walker: where protobuf's parser only says "corrupt", say where.

graphcost parses protobufs with the `protobuf` package (`proto_decode`); this walker reads the
same bytes field by field so that a damaged file can be reported with the field and the byte
offset of the damage (`proto_decode.locate_damage`), and so that a record's kind can be told
from its top-level field numbers without parsing it (`tuning_proto.detect_kind`).

The wire format (protobuf encoding spec) is a sequence of fields, each a key followed by a
payload. The key is a varint ``(field_number << 3) | wire_type`` with wire types

* 0 VARINT: base-128 little-endian varint (int32/int64/uint*/bool/enum; negative int32/int64
  are sign-extended to 64 bits, i.e. always 10 bytes),
* 1 I64: 8 little-endian bytes (fixed64, sfixed64, double),
* 2 LEN: a varint length then that many bytes (string, bytes, sub-message, packed repeated),
* 5 I32: 4 little-endian bytes (fixed32, sfixed32, float).

Wire types 3/4 (deprecated groups, which neither XLA nor TpuGraphs writes) are rejected. Repeated
scalar fields may arrive packed (one LEN field holding concatenated varints) or unpacked (one
field per element), even mixed.

Every error is a `ProtoDecodeError` naming the message being decoded, the field number and the
byte offset, so a truncated or corrupt file gives a readable message, not an IndexError.
"""

from __future__ import annotations

from typing import Iterator

from graphcost.errors import GraphcostError

VARINT, I64, LEN, I32 = 0, 1, 2, 5
_MAX_VARINT_BYTES = 10
_MAX_FIELD_NUMBER = (1 << 29) - 1


class ProtoDecodeError(GraphcostError, ValueError):
    """Malformed protobuf bytes; the message names the message path, field and (where known) byte offset."""

    def __init__(self, message: str, field: int | str | None, offset: int | None, problem: str):
        self.message_name = message
        self.field = field
        self.offset = offset  # None for a bound broken by bytes that parse (no position is kept then)
        self.problem = problem
        where = f"{message}" + (f" field {field}" if field is not None else "")
        at = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"protobuf decode error in {where}{at}: {problem}")


def read_varint(buf: bytes | memoryview, pos: int, message: str = "?", field: int | str | None = None,
                end: int | None = None) -> tuple[int, int]:
    """Decode one unsigned varint at `pos`, ending before `end` (default: the buffer's end); ``(value, new_pos)``."""
    result = 0
    shift = 0
    end = len(buf) if end is None else end
    start = pos
    while True:
        if pos >= end:
            raise ProtoDecodeError(message, field, start, "truncated varint (input ended mid-number)")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if pos - start >= _MAX_VARINT_BYTES:
            raise ProtoDecodeError(message, field, start, "varint longer than 10 bytes (corrupt input)")


def scan_fields(buf: bytes | memoryview, message: str, start: int = 0, end: int | None = None
                ) -> Iterator[tuple[int, int, object, int, int]]:
    """Yield ``(field_number, wire_type, value, key_offset, payload_offset)`` for the fields in ``buf[start:end]``.

    Offsets are positions in `buf` itself, so a caller walking nested messages through one buffer
    reports absolute byte offsets. `value` is an int for VARINT, I64 and I32 (raw unsigned bits)
    and a memoryview for LEN (`payload_offset` is where that payload starts).
    """
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    pos = start
    end = len(view) if end is None else end
    while pos < end:
        key_pos = pos
        key, pos = read_varint(view, pos, message, end=end)
        field = key >> 3
        wire = key & 7
        if field == 0 or field > _MAX_FIELD_NUMBER:
            raise ProtoDecodeError(message, field, key_pos, f"field number {field} is invalid (corrupt input)")
        payload = pos
        if wire == VARINT:
            value, pos = read_varint(view, pos, message, field, end)
        elif wire == LEN:
            length, pos = read_varint(view, pos, message, field, end)
            payload = pos
            if pos + length > end:
                raise ProtoDecodeError(
                    message, field, key_pos,
                    f"truncated length-delimited field: needs {length} bytes, only {end - pos} left",
                )
            value = view[pos:pos + length]
            pos += length
        elif wire == I64:
            if pos + 8 > end:
                raise ProtoDecodeError(message, field, key_pos, "truncated fixed64 field")
            value = int.from_bytes(view[pos:pos + 8], "little")
            pos += 8
        elif wire == I32:
            if pos + 4 > end:
                raise ProtoDecodeError(message, field, key_pos, "truncated fixed32 field")
            value = int.from_bytes(view[pos:pos + 4], "little")
            pos += 4
        else:
            raise ProtoDecodeError(message, field, key_pos, f"unsupported wire type {wire} (groups or corrupt input)")
        yield field, wire, value, key_pos, payload


def iter_fields(buf: bytes | memoryview, message: str) -> Iterator[tuple[int, int, object, int]]:
    """Yield ``(field_number, wire_type, value, offset)`` for each field of one message (see `scan_fields`)."""
    for field, wire, value, key_pos, _ in scan_fields(buf, message):
        yield field, wire, value, key_pos
