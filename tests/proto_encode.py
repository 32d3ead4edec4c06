"""A minimal protobuf wire encoder for tests, written independently of the decoder
(`graphcost.frontend.hlo.protowire` / the protobuf package): field number + wire type, varints,
length-delimited payloads. Used by tests/frontend/hlo and tests/bad_input."""

from __future__ import annotations


def varint(v: int) -> bytes:
    v &= (1 << 64) - 1  # negative ints are sign-extended to 64 bits (10 bytes)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if not v:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def key(num: int, wire: int) -> bytes:
    return varint(num << 3 | wire)


def vint(num: int, v: int) -> bytes:
    """A varint field."""
    return key(num, 0) + varint(v)


def ld(num: int, payload: bytes) -> bytes:
    """A length-delimited field (sub-message, string, bytes, packed repeated)."""
    return key(num, 2) + varint(len(payload)) + payload


def text(num: int, value: str) -> bytes:
    return ld(num, value.encode())


def packed(num: int, values) -> bytes:
    return ld(num, b"".join(varint(v) for v in values))


def unpacked(num: int, values) -> bytes:
    return b"".join(vint(num, v) for v in values)
